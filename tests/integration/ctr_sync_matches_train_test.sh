#!/usr/bin/env bash
# CTR jobs on a real cluster (2 ps, 2 workers, sync): with full-batch steps the model after a few
# steps equals `pstrain train` with the global batch, for the mod and the div table strategy
# (compared through the log loss and AUC over the training AND test examples, so every row a step
# updated counts); and the ps stats show that a step moves a table's touched rows, never the
# table: per table shard, the rows pushed are exactly the unique ids of each worker's batch that
# the shard owns (div or mod), the rows pulled are those plus the evaluation's, and the bytes are
# rows x row size (plus the ids on a push).
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
 "data": {"dataset": "criteo", "train_files": ["$WORK/data/train.txt"], "test_files": ["$WORK/data/train.txt", "$WORK/data/test.txt"], "allow_test_in_train": true},
 "batch_size": 512, "schedule": {"steps": 6, "steps_per_closure": 2, "eval_every_steps": 0},
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
  # Table shards: what moved is rows, counted and sized exactly. Worker w reads the training lines
  # i with i % 2 == w (its part), which are its batch at every one of the 6 steps; each step pulls
  # and pushes the unique ids of each field of that batch that a shard owns (ids hashed as the
  # reader does: int(hex, 16) % 50000; mod: row r on shard r % 2; div: rows 0..24999 on shard 0).
  # The evaluation pulls, per range of evaluation examples, the unique ids in the range: at least
  # every distinct evaluation id of the shard once, at most one row per evaluation example.
  python3 - "$MODEL/summary.json" "$strategy" "$WORK/data/train.txt" "$WORK/data/test.txt" <<'PY' ||
import json, sys
summary, strategy, train_file, test_file = sys.argv[1:5]
VOCAB, SHARDS, STEPS, WORKERS, ROW_BYTES = 50000, 2, 6, 2, 8 * 4
def field_ids(path):  # per line, the 26 hashed ids
    out = []
    for line in open(path):
        cats = line.rstrip("\n").split("\t")[14:]
        assert len(cats) == 26, path
        out.append([int(c, 16) % VOCAB if c else 0 for c in cats])
    return out
def owner(r):
    return r % SHARDS if strategy == "mod" else r // (VOCAB // SHARDS)
train, evaluation = field_ids(train_file), field_ids(train_file) + field_ids(test_file)
d = json.load(open(summary))
tables = {s["name"]: s for p in d["ps_stats"] for s in p["shards"] if "/embeddings/" in s["name"]}
assert len(tables) == 26 * SHARDS, "expected 26 tables x 2 shards, got %d" % len(tables)
pushed = pulled = 0
for f in range(26):
    for k in range(SHARDS):
        s = tables["%s/embeddings/part_%d" % ("embedding" if f == 0 else "embedding_%d" % f, k)]
        step_rows = sum(len({ids[f] for ids in train[w::WORKERS] if owner(ids[f]) == k}) for w in range(WORKERS))
        assert s["rows_pushed"] == STEPS * step_rows, ("pushed", f, k, s, STEPS * step_rows)
        eval_ids = [ids[f] for ids in evaluation if owner(ids[f]) == k]
        eval_rows = s["rows_pulled"] - STEPS * step_rows
        assert len(set(eval_ids)) <= eval_rows <= len(eval_ids), ("pulled", f, k, s, len(set(eval_ids)), len(eval_ids))
        assert s["bytes_out"] == s["rows_pulled"] * ROW_BYTES, s
        assert s["bytes_in"] == s["rows_pushed"] * (ROW_BYTES + 8), s  # a push carries each row's int64 id
        pushed += s["rows_pushed"]; pulled += s["rows_pulled"]
print("table shards (%s): %d rows pulled, %d rows pushed, each exactly the touched rows" % (strategy, pulled, pushed))
PY
    fail "$strategy: the ps stats' table rows are not the touched rows"
  echo "$strategy: sync cluster log loss $loss, AUC $auc == pstrain train's $single_loss, $single_auc"
done
echo "PASS: sync CTR cluster (mod and div) == pstrain train after 6 full-batch steps; tables move by rows"
