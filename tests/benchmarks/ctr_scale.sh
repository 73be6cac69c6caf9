#!/usr/bin/env bash
# Scale: a CTR job with ONE embedding table of 50,000,000 x 16 float32 (3.2 GB of values and as
# much Adagrad state) partitioned with max_size over 4 ps tasks, trained by 2 workers on ids drawn
# uniformly from the whole vocabulary, as separate processes on 127.0.0.1. Prints each ps's peak
# RSS beside the bytes `pstrain plan` gives it (values + slots; target: within 1.25x), each
# worker's peak RSS (target: under 1 GiB) and the training examples/s.
# Needs about 7 GB of free memory; the data (1M training lines) is generated into a temp dir.
#
# Usage: tests/benchmarks/ctr_scale.sh [--steps 1000] [--rows 50000000] [--bin build/bin]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
STEPS=1000 ROWS=50000000 BIN_DIR="$ROOT/build/bin" TRAIN_LINES=1000000
while [ $# -gt 0 ]; do
  case "$1" in
    --steps) STEPS=$2; shift 2 ;;
    --rows) ROWS=$2; shift 2 ;;
    --bin) BIN_DIR=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
source "$ROOT/tests/integration/lib.sh" "$BIN_DIR"
source "$ROOT/tests/benchmarks/bench_lib.sh"
echo "host: $(bench_host_line)"
echo "load average before: $(bench_load)"

# Criteo layout with one categorical field: label, 13 counts, one hex id uniform over the table.
python3 - "$WORK" "$ROWS" "$TRAIN_LINES" <<'PY'
import random, sys
work, rows, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(7)
for name, count in (("train.txt", n), ("test.txt", 20000)):
    with open("%s/%s" % (work, name), "w") as f:
        for _ in range(count):
            counts = [rng.randrange(0, 50) for _ in range(13)]
            f.write("%d\t%s\t%x\n" % (int(rng.random() < 0.05 + 0.01 * counts[0] / 5),
                                      "\t".join(map(str, counts)), rng.randrange(rows)))
PY
cat >"$WORK/job.json" <<JSON
{"name": "ctr-scale",
 "model": {"numeric_inputs": 13,
           "fields": [{"vocabulary_size": $ROWS, "embedding_dim": 16}],
           "layers": [{"type": "dense", "units": 64, "activation": "relu"}, {"type": "dense", "units": 1}]},
 "optimizer": {"type": "adagrad", "learning_rate": 0.02, "initial_accumulator_value": 1e-6},
 "data": {"dataset": "criteo", "train_files": ["$WORK/train.txt"], "test_files": ["$WORK/test.txt"]},
 "batch_size": 1024, "schedule": {"steps": $STEPS, "steps_per_closure": 10},
 "partitioner": {"type": "max_size", "max_shard_bytes": 200000000},
 "seed": 42}
JSON
"$BIN/pstrain" plan --job="$WORK/job.json" --num_ps=4 --format=json >"$WORK/plan.json"

make_cluster 4 2
start_servers 4 2 --threads=1
start chief 0 pstrain-chief --job="$WORK/job.json" --ephemeral --wait_timeout_secs=600 --progress_secs=5
CHIEF=$LAST_PID
wait_pid "$CHIEF" 3000
[ "$WAIT_RC" = 0 ] || fail "chief exited with $WAIT_RC"
grep -v '^[ {}]' "$WORK/chief-0.log" | grep -E 'step|created|evaluation' | tail -n 4
peak_kib() { awk '/^VmHWM:/ {print $2}' "/proc/$1/status"; }
python3 - "$WORK/plan.json" "$WORK/chief-0.log" "$(for i in 0 1 2 3; do peak_kib "${PIDS[$i]}"; done)" \
  "$(for i in 4 5; do peak_kib "${PIDS[$i]}"; done)" <<'PY'
import json, re, sys
plan = json.load(open(sys.argv[1]))
ps_peaks = [int(x) * 1024 for x in sys.argv[3].split()]
worker_peaks = [int(x) * 1024 for x in sys.argv[4].split()]
summary = json.loads(re.search(r"^\{.*^\}", open(sys.argv[2]).read(), re.S | re.M).group(0))
print("%-6s %16s %16s %8s" % ("task", "plan bytes", "peak RSS", "ratio"))
ok = True
for i, (want, got) in enumerate(zip(plan["ps_total_bytes"], ps_peaks)):
    print("ps:%-3d %16d %16d %7.3fx" % (i, want, got, got / want))
    ok &= got <= 1.25 * want
for i, got in enumerate(worker_peaks):
    print("worker:%-d %13s %16d %7.3f GiB" % (i, "", got, got / 2**30))
    ok &= got < 2**30
print("training: %d steps of 1024, %.0f examples/s (training loop), test AUC %s" % (
    summary["global_step"], summary["examples_per_second"], summary.get("final_test_auc")))
print("targets (ps peak <= 1.25x plan, workers < 1 GiB): %s" % ("met" if ok else "NOT met"))
PY
echo "load average after: $(bench_load)"
