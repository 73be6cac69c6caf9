#!/usr/bin/env bash
# CTR jobs on a real cluster (2 ps, 2 workers, sync): with full-batch steps the model after a few
# steps equals `pstrain train` with the global batch, for the mod and the div table strategy
# (compared through the test log loss and AUC, which depend on every parameter); and the ps
# stats show that a step moves a table's touched rows, never the table: per shard, bytes = rows x
# row size (plus the ids on a push), and rows per pull / push bounded by one worker's batch.
source "$(dirname "$0")/lib.sh" "$1"

"$BIN/pstrain" datagen ctr --out "$WORK/data" --train 512 --test 300 --vocabulary 100000 --seed 3 \
  >"$WORK/datagen.out" 2>&1 || fail "datagen failed: $(cat "$WORK/datagen.out")"
job() {  # job STRATEGY: a small CTR job whose one global batch is the whole training set
  cat <<JSON
{"name": "ctr-full-batch",
 "model": {"numeric_inputs": 13,
           "fields": [{"vocabulary_size": 50000, "embedding_dim": 8, "count": 26}],
           "layers": [{"type": "dense", "units": 32, "activation": "relu"}, {"type": "dense", "units": 1}]},
 "optimizer": {"type": "adagrad", "learning_rate": 0.05, "initial_accumulator_value": 1e-6},
 "data": {"dataset": "criteo", "train_files": ["$WORK/data/train.txt"], "test_files": ["$WORK/data/test.txt"]},
 "batch_size": 512, "schedule": {"steps": 6, "steps_per_closure": 2},
 "partitioner": {"type": "fixed_shards", "num_shards": 2, "strategy": "$1"},
 "mode": "sync", "seed": 5}
JSON
}
job mod >"$WORK/job-mod.json"
job div >"$WORK/job-div.json"
"$BIN/pstrain" train --job="$WORK/job-mod.json" --threads=1 >"$WORK/train.out" 2>"$WORK/train.log" ||
  fail "pstrain train failed: $(cat "$WORK/train.log")"
tail -n 1 "$WORK/train.out" >"$WORK/train.json"
[ "$(json_get "$WORK/train.json" "d['steps']")" = 6 ] || fail "pstrain train did not run 6 steps"
# The model does learn in these steps (it memorises the 512 examples), so equality below means
# the same updates, not two models that stayed put.
train_auc=$(json_get "$WORK/train.json" "d['final_train_auc']")
python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) > 0.8 else 1)" "$train_auc" ||
  fail "pstrain train's training AUC after 6 full-batch steps is only $train_auc"
single_loss=$(json_get "$WORK/train.json" "d['final_test_logloss']")
single_auc=$(json_get "$WORK/train.json" "d['final_test_auc']")

close() {  # close A B: |A - B| <= 1e-5 * max(|A|, 1)
  python3 -c "import sys; a,b=float(sys.argv[1]),float(sys.argv[2]); sys.exit(0 if abs(a-b) <= 1e-5*max(abs(a),1) else 1)" "$1" "$2"
}

for strategy in mod div; do
  make_cluster 2 2
  PIDS=()
  start_servers 2 2 --threads=1
  MODEL="$WORK/model-$strategy"
  start chief 0 pstrain-chief --job="$WORK/job-$strategy.json" --model_dir="$MODEL" --wait_timeout_secs=60
  wait_pid "$LAST_PID" 120
  [ "$WAIT_RC" = 0 ] || fail "$strategy: chief exited with $WAIT_RC"
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
  loss=$(json_get "$MODEL/summary.json" "d['final_test_logloss']")
  auc=$(json_get "$MODEL/summary.json" "d['final_test_auc']")
  close "$loss" "$single_loss" || fail "$strategy: sync cluster test log loss $loss differs from pstrain train's $single_loss"
  close "$auc" "$single_auc" || fail "$strategy: sync cluster test AUC $auc differs from pstrain train's $single_auc"
  # Table shards: what moved is rows, counted and sized exactly, and never more rows per pull or
  # push than a worker's 256 examples touch (a shard holds 25,000 rows).
  python3 - "$MODEL/summary.json" <<'PY' || fail "$strategy: ps stats show more than the touched rows moving"
import json, sys
d = json.load(open(sys.argv[1]))
row_bytes = 8 * 4
tables = [s for p in d["ps_stats"] for s in p["shards"] if "/embeddings/" in s["name"]]
assert len(tables) == 52, "expected 26 tables x 2 shards, got %d" % len(tables)
for s in tables:
    assert s["rows_pulled"] > 0 and s["rows_pushed"] > 0, s
    assert s["bytes_out"] == s["rows_pulled"] * row_bytes, s
    assert s["bytes_in"] == s["rows_pushed"] * (row_bytes + 8), s  # a push carries each row's int64 id
    assert s["rows_pulled"] <= 256 * s["pulls"] and s["rows_pushed"] <= 256 * s["pushes"], s
    assert s["bytes_out"] / s["pulls"] < 25000 * row_bytes / 50, s
print("table shards: %d rows pulled in %d pulls, %d rows pushed in %d pushes" % (
    sum(s["rows_pulled"] for s in tables), sum(s["pulls"] for s in tables),
    sum(s["rows_pushed"] for s in tables), sum(s["pushes"] for s in tables)))
PY
  echo "$strategy: sync cluster log loss $loss, AUC $auc == pstrain train's $single_loss, $single_auc"
done
echo "PASS: sync CTR cluster (mod and div) == pstrain train after 6 full-batch steps; tables move by rows"
