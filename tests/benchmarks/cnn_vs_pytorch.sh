#!/usr/bin/env bash
# Compute-only throughput of the `cnn` preset: `pstrain train` (single process, no cluster) against
# the PyTorch peer in its tuned setup (OpenMP OpenBLAS + channels-last), run alternately on the same
# machine, at 1 and 2 threads. Prints examples/s of both, the ratio, and GFLOP/s at 14.78 MFLOP per
# example forward+backward. Timing covers the training loop only (both tools report it that way).
#
# Usage: tests/benchmarks/cnn_vs_pytorch.sh [STEPS=300] [REPS=3]
#   env: BUILD_DIR (default build), PEER_DIR (default ../shared/peers/pytorch next to the repo), PEAK_GFLOPS (for the fraction of peak; default 294.4)
# Needs: a built `pstrain` (deploy/build.sh) and deploy/install-bench-deps.sh.
set -euo pipefail

STEPS=${1:-300}
REPS=${2:-3}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
PSTRAIN=$BUILD_DIR/bin/pstrain
PEER_DIR=${PEER_DIR:-}
if [ -z "$PEER_DIR" ]; then
  for d in "$ROOT/../shared/peers/pytorch"; do
    if [ -f "$d/cnn_fmnist.py" ]; then PEER_DIR=$d; break; fi
  done
fi
PEAK_GFLOPS=${PEAK_GFLOPS:-294.4}
OPENBLAS=/usr/lib/x86_64-linux-gnu/openblas-openmp
MFLOP_PER_EXAMPLE=14.78

[ -x "$PSTRAIN" ] || { echo "cnn_vs_pytorch: $PSTRAIN not found; build first (deploy/build.sh)" >&2; exit 2; }
[ -f "$PEER_DIR/cnn_fmnist.py" ] || { echo "cnn_vs_pytorch: PyTorch peer not found; set PEER_DIR" >&2; exit 2; }
/usr/bin/python3 -c 'import torch, numpy' 2>/dev/null ||
  { echo "cnn_vs_pytorch: Debian's python3-torch is missing; run deploy/install-bench-deps.sh" >&2; exit 2; }
[ -d "$OPENBLAS" ] || { echo "cnn_vs_pytorch: $OPENBLAS missing; run deploy/install-bench-deps.sh" >&2; exit 2; }

# Both print their training-loop throughput in a JSON summary; take the first (top-level) figure.
pstrain_run() {
  "$PSTRAIN" train --job=cnn --steps="$STEPS" --threads="$1" --eval=false 2>/dev/null |
    tail -n 1 | grep -o '"examples_per_second":[0-9.e+]*' | head -n 1 | cut -d: -f2
}
peer_run() {
  (cd "$PEER_DIR" && LD_LIBRARY_PATH=$OPENBLAS /usr/bin/python3 cnn_fmnist.py --epochs 1 --threads "$1" \
      --limit-steps "$STEPS" --channels-last --infer-batches '') |
    grep '^RESULT ' | grep -o '"train_examples_per_sec": [0-9.e+]*' | cut -d' ' -f2
}
median() { sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }
best() { sort -g | tail -n 1; }

echo "cnn preset, batch 64, $STEPS steps per run, $REPS alternating repetitions; $(nproc) cores"
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg) (figures are only comparable on an idle machine)"
printf "%-8s %-10s %12s %10s %10s %12s\n" threads tool "examples/s" "GFLOP/s" "% peak" "best ex/s"
for threads in 1 2; do
  ours=() theirs=()
  for ((r = 1; r <= REPS; r++)); do
    ours+=("$(pstrain_run "$threads")")
    theirs+=("$(peer_run "$threads")")
    echo "  rep $r threads $threads: pstrain ${ours[-1]}  pytorch ${theirs[-1]}" >&2
  done
  a=$(printf '%s\n' "${ours[@]}" | median)
  b=$(printf '%s\n' "${theirs[@]}" | median)
  a_best=$(printf '%s\n' "${ours[@]}" | best)
  b_best=$(printf '%s\n' "${theirs[@]}" | best)
  for row in "pstrain $a $a_best" "pytorch $b $b_best"; do
    set -- $row
    awk -v t="$threads" -v n="$1" -v x="$2" -v y="$3" -v m="$MFLOP_PER_EXAMPLE" -v p="$PEAK_GFLOPS" \
      'BEGIN {g = x * m / 1000; printf "%-8s %-10s %12.0f %10.1f %9.1f%% %12.0f\n", t, n, x, g, 100 * g / p, y}'
  done
  awk -v t="$threads" -v a="$a" -v b="$b" -v c="$a_best" -v d="$b_best" \
    'BEGIN {printf "%-8s ratio pstrain/pytorch = %.2fx (medians), %.2fx (best runs)\n", t, a / b, c / d}'
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
