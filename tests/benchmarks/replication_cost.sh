#!/usr/bin/env bash
# Benchmark: the cost of a backup for every shard (job option ps_replicas). The cnn preset on
# Fashion-MNIST, async, on a local cluster of 2 ps + 2 workers (one thread each), with
# ps_replicas 0 and 1 in alternating runs (REPS each); prints the training examples/s of every
# run, both medians and their ratio. Target: ps_replicas 1 >= 0.8x ps_replicas 0.
#
#   tests/benchmarks/replication_cost.sh [--reps 3] [--steps 600] [--bin build/bin]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
source "$ROOT/tests/benchmarks/bench_lib.sh"
REPS=3 STEPS=600 BIN="$ROOT/build/bin"
while [ $# -gt 0 ]; do
  case "$1" in
    --reps) REPS=$2; shift 2 ;;
    --steps) STEPS=$2; shift 2 ;;
    --bin) BIN=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
OUT=$(mktemp -d "${TMPDIR:-/tmp}/pstrain-replication.XXXXXX")
echo "logs in $OUT" >&2

run() {  # run REPLICAS REP: prints examples/s of one cluster run
  local replicas=$1 rep=$2 dir="$OUT/replicas$1.r$2"
  bash "$ROOT/deploy/local/demo.sh" --no-build --ps 2 --workers 2 --worker_threads 1 --job cnn --steps "$STEPS" \
    --run_dir "$dir" -- --eval_every_steps=0 --checkpoint_every_steps=0 --ps_replicas="$replicas" \
    >"$dir.log" 2>&1 || { echo "run with ps_replicas $replicas failed, see $dir.log" >&2; return 1; }
  python3 -c "import json,sys; print('%.1f' % json.load(open(sys.argv[1]))['examples_per_second'])" "$dir/summary.json"
}

echo "host: $(bench_host_line); load before: $(bench_load)" >&2
declare -a A B
for rep in $(seq 1 "$REPS"); do
  A+=("$(run 0 "$rep")"); echo "rep $rep: ps_replicas 0: ${A[-1]} examples/s (load $(bench_load))" >&2
  B+=("$(run 1 "$rep")"); echo "rep $rep: ps_replicas 1: ${B[-1]} examples/s (load $(bench_load))" >&2
done

python3 - "${A[*]}" "${B[*]}" "$STEPS" "$(bench_host_line)" "$(bench_load)" <<'PY'
import statistics, sys
a, b = ([float(x) for x in s.split()] for s in sys.argv[1:3])
ma, mb = statistics.median(a), statistics.median(b)
print("cnn on Fashion-MNIST, 2 ps + 2 workers x 1 thread, async, %s steps per run" % sys.argv[3])
print("host: %s; load after: %s" % (sys.argv[4], sys.argv[5]))
print("  ps_replicas 0: %8.1f examples/s  (median of %d; %s)" % (ma, len(a), ", ".join("%.1f" % x for x in a)))
print("  ps_replicas 1: %8.1f examples/s  (median of %d; %s)" % (mb, len(b), ", ".join("%.1f" % x for x in b)))
print("ratio ps_replicas 1 / 0: %.2fx   (target >= 0.8x)" % (mb / ma))
PY
