#!/usr/bin/env bash
# Compute-only throughput of the `cnn` preset: `pstrain train` (single process, no cluster) against
# the PyTorch peer in its tuned setup (OpenMP OpenBLAS + channels-last), run alternately on the same
# machine, at 1 and 2 threads. Prints examples/s of both, the ratio, GFLOP/s at 14.78 MFLOP per
# example forward+backward, and that as a share of this machine's FP32 FMA peak measured at the
# start of the same run (fma_peak_benchmark: the AVX-512 peak on a CPU that has it, else AVX2).
# When OPENBLAS_CORETYPE is set in the environment (it pins OpenBLAS to one kernel family), the
# peer also runs without it and the faster of the two is the one compared. Timing covers the
# training loop only (both tools report it that way).
#
# Usage: tests/benchmarks/cnn_vs_pytorch.sh [STEPS=300] [REPS=3]
#   env: BUILD_DIR (default build), PEER_DIR (default ../shared/peers/pytorch next to the repo)
# Needs: a built `pstrain` and benchmarks (deploy/build.sh) and deploy/install-bench-deps.sh.
set -euo pipefail

STEPS=${1:-300}
REPS=${2:-3}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
PSTRAIN=$BUILD_DIR/bin/pstrain
PEAK_BIN=$BUILD_DIR/benchmarks/fma_peak_benchmark
PEER_DIR=${PEER_DIR:-$ROOT/../shared/peers/pytorch}
OPENBLAS=/usr/lib/x86_64-linux-gnu/openblas-openmp
MFLOP_PER_EXAMPLE=14.78

[ -x "$PSTRAIN" ] || { echo "cnn_vs_pytorch: $PSTRAIN not found; build first (deploy/build.sh)" >&2; exit 2; }
[ -x "$PEAK_BIN" ] || { echo "cnn_vs_pytorch: $PEAK_BIN not found; build the benchmarks" >&2; exit 2; }
[ -f "$PEER_DIR/cnn_fmnist.py" ] || { echo "cnn_vs_pytorch: PyTorch peer not found; set PEER_DIR" >&2; exit 2; }
/usr/bin/python3 -c 'import torch, numpy' 2>/dev/null ||
  { echo "cnn_vs_pytorch: Debian's python3-torch is missing; run deploy/install-bench-deps.sh" >&2; exit 2; }
[ -d "$OPENBLAS" ] || { echo "cnn_vs_pytorch: $OPENBLAS missing; run deploy/install-bench-deps.sh" >&2; exit 2; }

# Both print their training-loop throughput in a JSON summary; take the first (top-level) figure.
pstrain_run() {
  "$PSTRAIN" train --job=cnn --steps="$STEPS" --threads="$1" --eval=false 2>/dev/null |
    tail -n 1 | grep -o '"examples_per_second":[0-9.e+]*' | head -n 1 | cut -d: -f2
}
peer_run() {  # peer_run THREADS [env -u OPENBLAS_CORETYPE]
  local threads=$1
  shift
  (cd "$PEER_DIR" && "$@" env LD_LIBRARY_PATH=$OPENBLAS /usr/bin/python3 cnn_fmnist.py --epochs 1 \
      --threads "$threads" --limit-steps "$STEPS" --channels-last --infer-batches '') |
    grep '^RESULT ' | grep -o '"train_examples_per_sec": [0-9.e+]*' | cut -d' ' -f2
}
median() { sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }
best() { sort -g | tail -n 1; }

# The peak of the widest vectors this CPU has, 1 and 2 threads.
peaks=$("$PEAK_BIN" 0.5)
level=avx2
grep -q '^avx512 .*[0-9]' <<<"$peaks" && level=avx512
PEAK1=$(awk -v l="$level" '$1 == l && $2 == 1 {print $3}' <<<"$peaks")
PEAK2=$(awk -v l="$level" '$1 == l && $2 == 2 {print $3}' <<<"$peaks")

echo "cnn preset, batch 64, $STEPS steps per run, $REPS alternating repetitions"
echo "$peaks" | head -n 1
echo "pstrain: $("$PSTRAIN" train --job=cnn --steps=1 --eval=false 2>&1 >/dev/null | grep -o 'cpu kernels.*')"
echo "FP32 FMA peak ($level): $PEAK1 GFLOP/s on 1 thread, $PEAK2 on 2 threads (measured now)"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg) (figures are only comparable on an idle machine)"
peers=("pytorch")
[ -n "${OPENBLAS_CORETYPE:-}" ] && peers=("pytorch" "pytorch-no-coretype")
printf "%-8s %-20s %12s %10s %10s %12s\n" threads tool "examples/s" "GFLOP/s" "% peak" "best ex/s"
for threads in 1 2; do
  peak=$PEAK1
  [ "$threads" = 2 ] && peak=$PEAK2
  ours=() theirs=() bare=()
  for ((r = 1; r <= REPS; r++)); do
    ours+=("$(pstrain_run "$threads")")
    theirs+=("$(peer_run "$threads")")
    line="  rep $r threads $threads: pstrain ${ours[-1]}  pytorch ${theirs[-1]}"
    if [ "${#peers[@]}" = 2 ]; then
      bare+=("$(peer_run "$threads" env -u OPENBLAS_CORETYPE)")
      line+="  pytorch without OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE ${bare[-1]}"
    fi
    echo "$line" >&2
  done
  rows=("pstrain $(printf '%s\n' "${ours[@]}" | median) $(printf '%s\n' "${ours[@]}" | best)"
        "pytorch $(printf '%s\n' "${theirs[@]}" | median) $(printf '%s\n' "${theirs[@]}" | best)")
  [ "${#peers[@]}" = 2 ] &&
    rows+=("pytorch-no-coretype $(printf '%s\n' "${bare[@]}" | median) $(printf '%s\n' "${bare[@]}" | best)")
  for row in "${rows[@]}"; do
    set -- $row
    awk -v t="$threads" -v n="$1" -v x="$2" -v y="$3" -v m="$MFLOP_PER_EXAMPLE" -v p="$peak" \
      'BEGIN {g = x * m / 1000; printf "%-8s %-20s %12.0f %10.1f %9.1f%% %12.0f\n", t, n, x, g, 100 * g / p, y}'
  done
  # Against the faster peer setup (by median).
  set -- ${rows[0]}
  a=$2 a_best=$3
  b=0 b_best=0
  for row in "${rows[@]:1}"; do
    set -- $row
    if awk -v x="$2" -v y="$b" 'BEGIN {exit !(x > y)}'; then b=$2 b_best=$3 who=$1; fi
  done
  awk -v t="$threads" -v a="$a" -v b="$b" -v c="$a_best" -v d="$b_best" -v w="$who" \
    'BEGIN {printf "%-8s ratio pstrain/%s = %.2fx (medians), %.2fx (best runs)\n", t, w, a / b, c / d}'
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
