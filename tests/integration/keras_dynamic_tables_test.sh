#!/usr/bin/env bash
# A Keras model's Embedding layers as dynamic tables (model.dynamic_tables): the Wide & Deep
# fixture, whose eight Embedding layers have input_dim 20, trains on ids up to 1000 taken whole:
#   1. `pstrain train --model_dir` learns (test AUC >= 0.54); `pstrain inspect` lists the eight
#      tables as dynamic with at most max_rows rows each; `pstrain evaluate` equals train;
#   2. 2 ps + 2 workers (async) train the same job to within 0.03 AUC of `pstrain train`, each
#      table in two shards (`pstrain evaluate` of the cluster's checkpoint gives its AUC);
#   3. refused with exit 2 and the reason: an ONNX export of a dynamic table, a dynamic_tables entry that
#      names no Embedding layer, one of two tables sharing an input, a dynamic table in sync mode.
#   keras_dynamic_tables_test.sh BIN_DIR
source "$(dirname "$0")/lib.sh" "$1"
FIXTURES="$(cd "$(dirname "$0")/../common/graph/testdata" && pwd)"

"$BIN/pstrain" datagen ctr --out="$WORK/full" --train=20000 --test=4000 --vocabulary=1000 >"$WORK/datagen.log" 2>&1 \
  || fail "pstrain datagen failed: $(tail -n 3 "$WORK/datagen.log")"
mkdir -p "$WORK/data"
for split in train test; do cut -f1-4,15-18 "$WORK/full/$split.txt" >"$WORK/data/$split.txt"; done
job() {  # job FILE MODE DYNAMIC_TABLES_JSON
  cat >"$1" <<JSON
{"name": "keras-dynamic", "model": {"keras_json": "$FIXTURES/keras3_wide_deep.json", "dynamic_tables": $3},
 "optimizer": {"type": "adagrad", "learning_rate": 0.05},
 "data": {"dataset": "criteo", "train_files": ["$WORK/data/train.txt"], "test_files": ["$WORK/data/test.txt"]},
 "batch_size": 256, "schedule": {"epochs": 2, "steps_per_closure": 10}, "mode": "$2", "seed": 7}
JSON
}
ALL=$(python3 -c 'import json; print(json.dumps({f"{k}_emb{i}": {"max_rows": 800} for k in ("deep", "wide") for i in range(4)}))')
job "$WORK/job.json" async "$ALL"

# 1. One process.
"$BIN/pstrain" train --job="$WORK/job.json" --threads=1 --model_dir="$WORK/local" >"$WORK/train.out" 2>"$WORK/train.log" \
  || fail "pstrain train failed: $(tail -n 3 "$WORK/train.log")"
tail -n 1 "$WORK/train.out" >"$WORK/train.json"
auc=$(json_get "$WORK/train.json" "d['final_test_auc']")
loss=$(json_get "$WORK/train.json" "d['final_test_loss']")
python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) >= 0.54 else 1)" "$auc" || fail "pstrain train's test AUC $auc < 0.54"
inspect_latest "$WORK/local" "$WORK/inspect.json"
python3 - "$WORK/inspect.json" <<'PY' || fail "inspect: $(head -c 2000 "$WORK/inspect.json")"
import json, sys
d = json.load(open(sys.argv[1]))
tables = d["dynamic_tables"]
names = sorted(t["name"] for t in tables)
want = sorted(f"{k}_emb{i}/embeddings" for k in ("deep", "wide") for i in range(4))
assert names == want, names
for t in tables:
    assert t["shards"] == 1 and 20 < t["rows"] <= 800, t  # more ids than input_dim 20, at most max_rows
PY
evaluate_checkpoint "$WORK/local" "$WORK/local_eval.json"
python3 - "$WORK/local_eval.json" "$loss" <<'PY' || fail "evaluate differs from train's test loss $loss: $(cat "$WORK/local_eval.json")"
import json, sys
d = json.load(open(sys.argv[1]))
assert abs(d["test_loss"] - float(sys.argv[2])) <= 1e-6 * max(1.0, abs(float(sys.argv[2]))), d
PY

# 2. The cluster: 2 ps, 2 async workers.
run_cluster_job 2 2 "$WORK/cluster" 240 --job="$WORK/job.json"
evaluate_checkpoint "$WORK/cluster" "$WORK/cluster_eval.json"
cluster_auc=$(json_get "$WORK/cluster_eval.json" "d['test_auc']")
python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) >= float(sys.argv[2]) - 0.03 else 1)" "$cluster_auc" "$auc" \
  || fail "the cluster's test AUC $cluster_auc is more than 0.03 below pstrain train's $auc"
inspect_latest "$WORK/cluster" "$WORK/cluster_inspect.json"
python3 - "$WORK/cluster_inspect.json" <<'PY' || fail "cluster inspect: $(head -c 2000 "$WORK/cluster_inspect.json")"
import json, sys
tables = json.load(open(sys.argv[1]))["dynamic_tables"]
assert len(tables) == 8 and all(len(t["files"]) == 2 for t in tables), tables
PY

# 3. Refusals.
expect_exit 2 onnx_refused "an ONNX model cannot look up" \
  "$BIN/pstrain" export --checkpoint="$WORK/local" --format=onnx --out="$WORK/x.onnx"
[ ! -e "$WORK/x.onnx" ] || fail "a refused ONNX export left $WORK/x.onnx"
job "$WORK/bad_name.json" async '{"numeric": {"max_rows": 10}}'
expect_exit 2 bad_name "dynamic_tables names 'numeric'" "$BIN/pstrain" plan --job="$WORK/bad_name.json" --num_ps=2
job "$WORK/half.json" async '{"deep_emb0": {"max_rows": 10}}'
expect_exit 2 half "only one is in model.dynamic_tables" "$BIN/pstrain" plan --job="$WORK/half.json" --num_ps=2
job "$WORK/sync.json" sync "$ALL"
expect_exit 2 sync "needs mode \"async\"" "$BIN/pstrain" plan --job="$WORK/sync.json" --num_ps=2

echo "PASS: Keras dynamic tables: train AUC $auc, evaluate == train, cluster AUC $cluster_auc; $CASES refusals"
