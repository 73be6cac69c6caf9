#!/usr/bin/env bash
# Dynamic tables against modulo hashing at equal memory, on a synthetic CTR set whose id space far
# exceeds any fixed table (`pstrain datagen ctr --criteo_cardinalities=false`: every one of the 26
# fields draws Zipf ids from --vocabulary, default 10^8). One process (`pstrain train`), one epoch,
# the `ctr` preset's tower and optimizer (Adagrad), embedding dim 16, alternating runs per seed:
#   - fixed:   every field a table of --rows rows; ids are int(hex, 16) % rows (distinct ids share)
#   - dynamic: every field a dynamic table of max_rows rows, where a row costs the same bytes as
#              ROWS fixed rows: max_rows = floor(rows * B / (B + O)), B = dim x 4 x (1 + slots) bytes
#              of values and Adagrad's accumulator, O the dynamic table's stated per-row overhead
#              (ps/store/dynamic_table.h, kMaxOverheadBytesPerRow): memory at most equal
# With --drift_at F the popular ids change after that fraction of the training set (the test set is
# the new era), and the dynamic tables get --ttl_steps as well, so rows of ids that stopped coming
# are dropped and the cap keeps memory flat.
# Prints every run's test AUC and log loss, the medians, and the set's Bayes-optimal AUC. With
# --windows W (> 0) each run also reports W times through its epoch (`pstrain train
# --report_every_steps`), and a curve prints per window, medians over the seeds: the train AUC of the
# window's batches before each was trained on (progressive validation: it falls where the ids drift
# and shows how fast each model recovers), the test AUC after it, and the dynamic tables' rows held.
#
# Usage: tests/benchmarks/dynamic_vs_modulo_auc.sh [--bin build/bin] [--train 400000] [--test 50000]
#          [--vocabulary 100000000] [--rows 4096] [--zipf 1.1] [--seeds "42 43 44"] [--admission 1]
#          [--drift_at 0] [--ttl_steps 0] [--windows 0]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
source "$ROOT/tests/benchmarks/bench_lib.sh"
BIN="$ROOT/build/bin" TRAIN=400000 TEST=50000 VOCAB=100000000 ROWS=4096 ZIPF=1.1 SEEDS="42 43 44"
ADMISSION=1 DRIFT=0 TTL=0 WINDOWS=0
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) BIN=$2; shift 2 ;;
    --train) TRAIN=$2; shift 2 ;;
    --test) TEST=$2; shift 2 ;;
    --vocabulary) VOCAB=$2; shift 2 ;;
    --rows) ROWS=$2; shift 2 ;;
    --zipf) ZIPF=$2; shift 2 ;;
    --seeds) SEEDS=$2; shift 2 ;;
    --admission) ADMISSION=$2; shift 2 ;;
    --drift_at) DRIFT=$2; shift 2 ;;
    --ttl_steps) TTL=$2; shift 2 ;;
    --windows) WINDOWS=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
[ -x "$BIN/pstrain" ] || { echo "dynamic_vs_modulo_auc: $BIN/pstrain not found; build first (deploy/build.sh)" >&2; exit 2; }
OUT=$(mktemp -d "${TMPDIR:-/tmp}/pstrain-dynamic-auc.XXXXXX")
echo "logs in $OUT" >&2

"$BIN/pstrain" datagen ctr --out "$OUT/data" --train "$TRAIN" --test "$TEST" --vocabulary "$VOCAB" --zipf "$ZIPF" \
  --criteo_cardinalities=false --drift_at "$DRIFT" >"$OUT/datagen.out" 2>&1 ||
  { cat "$OUT/datagen.out" >&2; exit 1; }
BAYES=$(python3 -c "import json,sys; print('%.4f' % json.load(open(sys.argv[1]))['test']['bayes_auc'])" "$OUT/data/bayes.json")

DIM=16 OVERHEAD=55
ROW_BYTES=$((DIM * 4 * 2))
DYN_ROWS=$((ROWS * ROW_BYTES / (ROW_BYTES + OVERHEAD)))

# job_json SEED FIELD_JSON: the ctr preset's model and optimizer with the given fields.
job_json() {
  cat <<EOF
{"name": "dynamic_auc",
 "model": {"numeric_inputs": 13, "fields": [$2],
           "layers": [{"type": "dense", "units": 512, "activation": "relu"},
                      {"type": "dense", "units": 256, "activation": "relu"},
                      {"type": "dense", "units": 1}],
           "loss": "binary_crossentropy"},
 "optimizer": {"type": "adagrad", "learning_rate": 0.02, "initial_accumulator_value": 1e-6, "epsilon": 1e-7},
 "data": {"dataset": "criteo"},
 "batch_size": 1024,
 "schedule": {"epochs": 1, "steps_per_closure": 10},
 "seed": $1}
EOF
}
FIXED_FIELD="{\"vocabulary_size\": $ROWS, \"embedding_dim\": $DIM, \"count\": 26}"
REPORT=()
if [ "$WINDOWS" -gt 0 ]; then
  STEPS=$(((TRAIN + 1023) / 1024))  # batch 1024, the last partial batch kept
  REPORT=(--report_every_steps=$(((STEPS + WINDOWS - 1) / WINDOWS)))
fi
DYN_FIELD="{\"embedding_dim\": $DIM, \"count\": 26, \"dynamic\": {\"max_rows\": $DYN_ROWS, \"admission_threshold\": $ADMISSION, \"ttl_steps\": $TTL}}"

run() {  # run NAME SEED FIELD_JSON: appends "auc logloss" to $OUT/NAME.runs
  local log="$OUT/$1.s$2" line
  job_json "$2" "$3" >"$log.json"
  "$BIN/pstrain" train --job="$log.json" --threads=2 --train_files="$OUT/data/train.txt" \
    --test_files="$OUT/data/test.txt" --model_dir="$log.model" "${REPORT[@]}" >"$log.out" 2>"$log.err" ||
    { echo "$1 failed, see $log.err" >&2; return 1; }
  line=$(tail -n 1 "$log.out" | python3 -c "import json,sys; d=json.load(sys.stdin)
print('%.4f %.4f' % (d['final_test_auc'], d['final_test_logloss']))")
  echo "$line" >>"$OUT/$1.runs"
  tail -n 1 "$log.out" | python3 -c "import json,sys
for r in json.load(sys.stdin)['per_epoch']:
    print(r['steps'], r['train_auc'], r['test_auc'], r.get('dynamic_rows', -1))" >"$log.curve"
  echo "seed $2: $1 test AUC, log loss $line" >&2
  if [ "$1" = dynamic ]; then  # the tables' rows and evictions at the end, from the checkpoint
    "$BIN/pstrain" inspect --checkpoint="$(ls -d "$log.model"/ckpt-* | tail -n 1)" --format=json 2>/dev/null | python3 -c "import json,sys
t = json.load(sys.stdin)['dynamic_tables']
print('rows held %d of %d (max_rows %d per field), made %d, evicted by ttl %d, by cap %d' % (
    sum(x['rows'] for x in t), len(t) * $DYN_ROWS, $DYN_ROWS, sum(x['created'] for x in t),
    sum(x['evicted_ttl'] for x in t), sum(x['evicted_cap'] for x in t)))" >>"$OUT/rows" || true
  fi
}
for seed in $SEEDS; do
  run fixed "$seed" "$FIXED_FIELD"
  run dynamic "$seed" "$DYN_FIELD"
done

median() { sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
echo "host: $(bench_host_line); load $(bench_load)"
echo "set: $TRAIN train / $TEST test examples, 26 fields of Zipf($ZIPF) ids over $VOCAB each, drift_at $DRIFT;" \
  "Bayes-optimal test AUC $BAYES"
echo "fixed:   $ROWS rows per field x $ROW_BYTES bytes, ids modulo the rows"
echo "dynamic: max_rows $DYN_ROWS per field x ($ROW_BYTES + $OVERHEAD) bytes, admission $ADMISSION, ttl_steps $TTL"
for name in fixed dynamic; do
  echo "$name: test AUC median $(cut -d' ' -f1 "$OUT/$name.runs" | median) (runs: $(cut -d' ' -f1 "$OUT/$name.runs" |
    tr '\n' ' ')), log loss median $(cut -d' ' -f2 "$OUT/$name.runs" | median)"
done
[ -f "$OUT/rows" ] && sed 's/^/dynamic, at the end of a run: /' "$OUT/rows"
if [ "$WINDOWS" -gt 0 ]; then
  echo "per window (medians over the seeds): steps, train AUC of the window before training on it, test AUC after it;"
  echo "dynamic rows held (of $((26 * DYN_ROWS)) allowed)"
  python3 - "$OUT" $SEEDS <<'PY'
import statistics, sys
out, seeds = sys.argv[1], sys.argv[2:]
curves = {n: [[l.split() for l in open(f"{out}/{n}.s{s}.curve")] for s in seeds] for n in ("fixed", "dynamic")}
print("%6s  %12s %12s  %12s %12s  %10s" % ("steps", "fixed train", "dyn train", "fixed test", "dyn test", "dyn rows"))
for w in range(len(curves["fixed"][0])):
    med = lambda n, k: statistics.median(float(c[w][k]) for c in curves[n])
    print("%6d  %12.4f %12.4f  %12.4f %12.4f  %10d" % (int(curves["fixed"][0][w][0]), med("fixed", 1),
          med("dynamic", 1), med("fixed", 2), med("dynamic", 2), med("dynamic", 3)))
PY
fi
