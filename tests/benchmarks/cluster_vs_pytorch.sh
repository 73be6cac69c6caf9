#!/usr/bin/env bash
# Benchmark: the local pstrain cluster (1 ps + 2 workers, one thread each, async, cnn preset on
# Fashion-MNIST) against the PyTorch peers in ../shared/peers/pytorch in their tuned setup
# (OpenBLAS + channels-last): DDP on gloo with 2 processes, and the RPC parameter server with 2
# trainers. Runs alternate (one at a time, the machine has 2 cores), REPS times each; prints the
# training examples/s of every run, the medians and the ratios. Target: >= 1.0x the RPC ps.
#
#   tests/benchmarks/cluster_vs_pytorch.sh [--reps 3] [--epochs 1] [--bin build/bin] [--peers DIR]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
REPS=3 EPOCHS=1 BIN="$ROOT/build/bin" PEERS="$ROOT/../shared/peers/pytorch"
while [ $# -gt 0 ]; do
  case "$1" in
    --reps) REPS=$2; shift 2 ;;
    --epochs) EPOCHS=$2; shift 2 ;;
    --bin) BIN=$2; shift 2 ;;
    --peers) PEERS=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
PY=/usr/bin/python3
OB=/usr/lib/x86_64-linux-gnu/openblas-openmp
if ! "$PY" -c "import torch" 2>/dev/null || [ ! -d "$OB" ]; then
  echo "installing the peers' dependencies (deploy/install-bench-deps.sh)" >&2
  bash "$ROOT/deploy/install-bench-deps.sh"
fi
OUT=$(mktemp -d "${TMPDIR:-/tmp}/pstrain-bench.XXXXXX")
echo "logs in $OUT" >&2

run_cluster() {  # prints examples/s of one cluster run
  local rep=$1 run="$OUT/cluster.r$rep"
  bash "$ROOT/deploy/local/demo.sh" --no-build --ps 1 --workers 2 --worker_threads 1 --job cnn \
    --epochs "$EPOCHS" --run_dir "$run" -- --eval_every_steps=0 --checkpoint_every_steps=0 >"$run.log" 2>&1 \
    || { echo "cluster run failed, see $run.log" >&2; return 1; }
  "$PY" -c "import json,sys; print('%.1f' % json.load(open(sys.argv[1]))['examples_per_second'])" "$run/summary.json"
}

run_peer() {  # run_peer NAME SCRIPT ARGS...: prints train examples/s of one peer run
  local name=$1 script=$2 log
  shift 2
  log="$OUT/$name.log"
  (cd "$PEERS" && OMP_NUM_THREADS=1 LD_LIBRARY_PATH="$OB" timeout 900 "$PY" "$script" "$@" --epochs "$EPOCHS" \
     --channels-last) >"$log" 2>&1 || { echo "$name failed, see $log" >&2; return 1; }
  "$PY" -c "import json,sys
for l in open(sys.argv[1]):
    if l.startswith('RESULT '): print('%.1f' % json.loads(l[7:])['train_examples_per_sec'])" "$log"
}

declare -a C D R
for rep in $(seq 1 "$REPS"); do
  C+=("$(run_cluster "$rep")"); echo "rep $rep: pstrain cluster ${C[-1]} examples/s" >&2
  D+=("$(run_peer ddp.r$rep ddp_fmnist.py --procs 2 --threads 1)"); echo "rep $rep: ddp ${D[-1]} examples/s" >&2
  R+=("$(run_peer rpc.r$rep rpc_ps.py --trainers 2 --threads 1)"); echo "rep $rep: rpc_ps ${R[-1]} examples/s" >&2
done

"$PY" - "${C[*]}" "${D[*]}" "${R[*]}" "$EPOCHS" <<'PY'
import statistics, sys
c, d, r = ([float(x) for x in s.split()] for s in sys.argv[1:4])
mc, md, mr = statistics.median(c), statistics.median(d), statistics.median(r)
print("cnn on Fashion-MNIST, %s epoch(s) per run, training examples/s (median of %d; min-max)" % (sys.argv[4], len(c)))
for name, v, m in (("pstrain cluster, 1 ps + 2 workers x 1 thread, async", c, mc),
                   ("PyTorch DDP gloo, 2 procs x 1 thread, tuned", d, md),
                   ("PyTorch RPC ps, 1 ps + 2 trainers x 1 thread, tuned", r, mr)):
    print("  %-55s %8.1f  (%.1f-%.1f)" % (name, m, min(v), max(v)))
print("ratio pstrain / RPC ps: %.2fx   (target >= 1.0x)" % (mc / mr))
print("ratio pstrain / DDP:    %.2fx" % (mc / md))
PY
