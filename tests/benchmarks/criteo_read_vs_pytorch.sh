#!/usr/bin/env bash
# Reading speed of CTR data in Criteo's TSV layout: pstrain's reader (criteo_reader_benchmark, one
# thread) against the PyTorch peer's loader (ctr_criteo.py's `load`, which prints "loaded N train /
# M test examples in S s"), on the same train and test files, alternating runs. Prints lines/s of
# both, medians of REPS runs, and the ratio.
#
# Usage: tests/benchmarks/criteo_read_vs_pytorch.sh [REPS=3] [DATA_DIR]
#   DATA_DIR holds train.txt and test.txt; default: a fresh `pstrain datagen ctr` set (200,000 +
#   50,000 lines) in a temporary directory.
#   env: BUILD_DIR (default build), PEER_DIR (default ../shared/peers/pytorch next to the repo)
# Needs: a built pstrain with benchmarks (deploy/build.sh) and deploy/install-bench-deps.sh.
set -euo pipefail

REPS=${1:-3}
DATA_DIR=${2:-}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
PEER_DIR=${PEER_DIR:-$ROOT/../shared/peers/pytorch}
READER=$BUILD_DIR/benchmarks/criteo_reader_benchmark

[ -x "$READER" ] || { echo "criteo_read_vs_pytorch: $READER not found; build first (deploy/build.sh)" >&2; exit 2; }
[ -f "$PEER_DIR/ctr_criteo.py" ] || { echo "criteo_read_vs_pytorch: PyTorch peer not found; set PEER_DIR" >&2; exit 2; }
/usr/bin/python3 -c 'import torch, numpy' 2>/dev/null ||
  { echo "criteo_read_vs_pytorch: Debian's python3-torch is missing; run deploy/install-bench-deps.sh" >&2; exit 2; }

if [ -z "$DATA_DIR" ]; then
  DATA_DIR=$(mktemp -d)
  trap 'rm -rf "$DATA_DIR"' EXIT
  "$BUILD_DIR/bin/pstrain" datagen ctr --out "$DATA_DIR" >/dev/null
fi
LINES=$(cat "$DATA_DIR/train.txt" "$DATA_DIR/test.txt" | wc -l)

ours() { "$READER" --repeats=1 "$DATA_DIR/train.txt" "$DATA_DIR/test.txt" | grep -o '"lines_per_sec": [0-9.]*' | cut -d' ' -f2; }
# The peer loads both files, then trains one step and evaluates; only its load time is taken.
theirs() {
  (cd "$PEER_DIR" && /usr/bin/python3 ctr_criteo.py --train "$DATA_DIR/train.txt" --test "$DATA_DIR/test.txt" \
      --threads 1 --epochs 1 --limit-steps 1) | grep '^loaded' | sed 's/.* in \([0-9.]*\)s.*/\1/' |
    awk -v n="$LINES" '{printf "%.0f\n", n / $1}'
}
median() { sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }

echo "Criteo TSV reading, $LINES lines ($DATA_DIR), $REPS alternating repetitions; $(nproc) cores"
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
a=() b=()
for ((r = 1; r <= REPS; r++)); do
  a+=("$(ours)")
  b+=("$(theirs)")
  echo "  rep $r: pstrain ${a[-1]} lines/s  pytorch peer ${b[-1]} lines/s" >&2
done
x=$(printf '%s\n' "${a[@]}" | median)
y=$(printf '%s\n' "${b[@]}" | median)
printf "%-14s %14s\n" reader "lines/s" "pstrain" "$x" "pytorch peer" "$y"
awk -v a="$x" -v b="$y" 'BEGIN {printf "ratio pstrain/peer = %.1fx (medians)\n", a / b}'
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
