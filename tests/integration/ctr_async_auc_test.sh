#!/usr/bin/env bash
# An async CTR cluster (2 ps, 2 workers, mod strategy) trains a generated data set to the same
# test AUC as `pstrain train` (within 0.01), and the chief's progress lines, metrics.jsonl and
# summary.json carry the training and test AUC and log loss. Its checkpoint (tables and their
# Adagrad slots) evaluates in one process to the chief's figures, and restored by a chief onto 3 ps
# with the div strategy it is saved in that layout and still evaluates to the same figures.
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
for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done

same_eval() {  # same_eval CHECKPOINT_OR_MODEL_DIR WHAT: `pstrain evaluate` equals the chief's final figures
  "$BIN/pstrain" evaluate --checkpoint="$1" --format=json >"$WORK/evaluate.json" 2>"$WORK/evaluate.log" ||
    fail "$2: pstrain evaluate failed: $(cat "$WORK/evaluate.log")"
  python3 - "$WORK/evaluate.json" "$MODEL/summary.json" <<'PY' || fail "$2: pstrain evaluate disagrees with the chief"
import json, sys
e, s = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert e["test_examples"] == 20000 and e["step"] == s["global_step"], (e, s["global_step"])
assert abs(e["test_auc"] - s["final_test_auc"]) <= 1e-9, (e["test_auc"], s["final_test_auc"])
assert abs(e["test_logloss"] - s["final_test_logloss"]) <= 1e-6 * s["final_test_logloss"], (e, s["final_test_logloss"])
PY
}
same_eval "$MODEL" "the cluster's checkpoint"

# The same checkpoint restored onto 3 ps with fixed_shards 3, div: the chief re-saves it in that layout.
sed 's/"num_shards": 2, "strategy": "mod"/"num_shards": 3, "strategy": "div"/' "$WORK/job.json" >"$WORK/job-div3.json"
grep -q '"num_shards": 3, "strategy": "div"' "$WORK/job-div3.json" || fail "could not write the div job"
cp -r "$MODEL" "$WORK/model-div3"
make_cluster 3 1
PIDS=()
for i in 0 1 2; do start ps "$i" pstrain-ps; done
start chief 0 pstrain-chief --job="$WORK/job-div3.json" --model_dir="$WORK/model-div3" --init_only --wait_timeout_secs=60
wait_pid "$LAST_PID" 120
[ "$WAIT_RC" = 0 ] || fail "restoring onto 3 ps (div): chief exited with $WAIT_RC"
python3 - "$WORK/model-div3" <<'PY' || fail "the restored checkpoint is not in the div layout over 3 shards"
import glob, json, sys
[ckpt] = glob.glob(sys.argv[1] + "/ckpt-*")
shards = [s for s in json.load(open(ckpt + "/index.json"))["shards"] if s["variable_name"] == "embedding/embeddings"]
assert sorted((s["row_offset"], s["rows"], s["row_stride"]) for s in shards) == \
    [(0, 6667, 1), (6667, 6667, 1), (13334, 6666, 1)], shards
assert all(s["slot_names"] == ["accumulator"] for s in shards), shards
PY
same_eval "$WORK/model-div3" "restored onto 3 ps (div)"
echo "PASS: async CTR cluster test AUC $cluster, pstrain train $single (within 0.01); its checkpoint evaluates alike in one process and after a restore onto 3 ps (div)"
