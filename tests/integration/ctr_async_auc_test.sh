#!/usr/bin/env bash
# An async CTR cluster (2 ps, 2 workers, mod strategy) trains a generated data set to the same
# test AUC as `pstrain train` (within 0.01), and the chief's progress lines, metrics.jsonl and
# summary.json carry the training and test AUC and log loss.
source "$(dirname "$0")/lib.sh" "$1"

"$BIN/pstrain" datagen ctr --out "$WORK/data" --train 60000 --test 20000 --vocabulary 20000 --seed 4 \
  >"$WORK/datagen.out" 2>&1 || fail "datagen failed: $(cat "$WORK/datagen.out")"
cat >"$WORK/job.json" <<JSON
{"name": "ctr-async",
 "model": {"numeric_inputs": 13,
           "fields": [{"vocabulary_size": 20000, "embedding_dim": 8, "count": 26}],
           "layers": [{"type": "dense", "units": 64, "activation": "relu"}, {"type": "dense", "units": 1}]},
 "optimizer": {"type": "adagrad", "learning_rate": 0.02, "initial_accumulator_value": 1e-6},
 "data": {"dataset": "criteo", "train_files": ["$WORK/data/train.txt"], "test_files": ["$WORK/data/test.txt"]},
 "batch_size": 256, "schedule": {"epochs": 1, "steps_per_closure": 10},
 "partitioner": {"type": "fixed_shards", "num_shards": 2, "strategy": "mod"},
 "seed": 5}
JSON
"$BIN/pstrain" train --job="$WORK/job.json" --threads=1 >"$WORK/train.out" 2>"$WORK/train.log" ||
  fail "pstrain train failed: $(cat "$WORK/train.log")"
tail -n 1 "$WORK/train.out" >"$WORK/train.json"
single=$(json_get "$WORK/train.json" "d['final_test_auc']")

make_cluster 2 2
start_servers 2 2 --threads=1
MODEL="$WORK/model"
start chief 0 pstrain-chief --job="$WORK/job.json" --model_dir="$MODEL" --wait_timeout_secs=60 --progress_secs=1
wait_pid "$LAST_PID" 240
[ "$WAIT_RC" = 0 ] || fail "chief exited with $WAIT_RC"
cluster=$(json_get "$MODEL/summary.json" "d['final_test_auc']")
python3 -c "import sys; a,b=float(sys.argv[1]),float(sys.argv[2]); sys.exit(0 if abs(a-b) <= 0.01 and a > 0.7 else 1)" \
  "$cluster" "$single" || fail "async cluster test AUC $cluster is not within 0.01 of pstrain train's $single"
json_get "$MODEL/summary.json" "d['final_test_logloss'] > 0 and d['final_train_auc'] > 0.5" | grep -q True ||
  fail "summary.json lacks the log loss or the training AUC"
grep -Eq '\| loss [0-9.]+ \| AUC 0\.[0-9]{4}' "$WORK/chief-0.log" || fail "no progress line with the training AUC"
grep -Eq 'final test AUC 0\.[0-9]{4}, log loss [0-9.]+ \(20000 examples\)' "$WORK/chief-0.log" ||
  fail "no final line with the test AUC"
python3 - "$MODEL/metrics.jsonl" <<'PY' || fail "metrics.jsonl lacks the AUC"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert any(r.get("kind") == "train" and 0.5 < r.get("auc", 0) <= 1 for r in rows), "no training AUC"
assert any(r.get("kind") == "eval" and 0.5 < r.get("test_auc", 0) <= 1 and r["test_logloss"] > 0 for r in rows)
PY
echo "PASS: async CTR cluster test AUC $cluster, pstrain train $single (within 0.01)"
