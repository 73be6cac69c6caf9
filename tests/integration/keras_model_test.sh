#!/usr/bin/env bash
# Keras models trained on the cluster (2 ps, 2 workers), read from real Keras to_json files
# (tests/common/graph/testdata):
#   1. a Keras 2 functional residual MLP named by a job file's model.keras_json (relative to the job
#      file), async: it learns Fashion-MNIST, its variables carry Keras's names in the plan and the
#      checkpoint, and `pstrain evaluate` of the final checkpoint gives the chief's final figures;
#   2. a Keras 3 regression MLP in sync mode on the full synthetic set: the cluster's test loss equals
#      `pstrain train`'s (the same global batches, so the same steps);
#   3. the regression MLP with a BatchNormalization, sync mode, Adagrad: its moving statistics are ps
#      variables (in the checkpoint without optimizer slots) that the workers' updates are added to,
#      raw; with 2 workers `pstrain evaluate` of the final checkpoint gives the chief's final test loss
#      (inference on the moving statistics); with 1 worker (the whole batch, so pstrain train's batch
#      statistics) the cluster's test loss equals `pstrain train`'s.
#   keras_model_test.sh BIN_DIR
source "$(dirname "$0")/lib.sh" "$1"
FIXTURES="$(cd "$(dirname "$0")/../common/graph/testdata" && pwd)"

mkdir -p "$WORK/job"
cp "$FIXTURES/keras2_residual_mlp.json" "$WORK/job/model.json"
cat >"$WORK/job/job.json" <<'JSON'
{"name": "keras-residual-mlp",
 "model": {"keras_json": "model.json"},
 "optimizer": {"type": "adam", "learning_rate": 0.001},
 "data": {"dataset": "fashion_mnist"},
 "batch_size": 64, "schedule": {"steps": 400, "steps_per_closure": 10},
 "partitioner": {"type": "min_size", "min_shard_bytes": 65536, "max_shards": 4}}
JSON
"$BIN/pstrain" plan --job="$WORK/job/job.json" --num_ps=2 >"$WORK/plan.txt" 2>&1 || fail "pstrain plan failed: $(cat "$WORK/plan.txt")"
for name in embed/kernel block/kernel norm/gamma classes/bias; do
  grep -q "$name" "$WORK/plan.txt" || fail "the plan does not list the Keras variable $name"
done
grep -q "embed/kernel/part_1" "$WORK/plan.txt" || fail "embed/kernel (401 KB) was not partitioned: $(cat "$WORK/plan.txt")"

MODEL="$WORK/model"
run_cluster_job 2 2 "$MODEL" 180 --job="$WORK/job/job.json"  # the done job's ps and workers exit on their own
accuracy=$(json_get "$MODEL/summary.json" "d['final_test_accuracy']")
python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) >= 0.72 else 1)" "$accuracy" \
  || fail "the Keras residual MLP reached test accuracy $accuracy after 400 steps (want >= 0.72; chance is 0.10)"
ckpt=$(ls -d "$MODEL"/ckpt-400)
python3 -c "import json,sys; names=json.dumps(json.load(open(sys.argv[1]))); sys.exit(0 if 'block/kernel' in names else 1)" \
  "$ckpt/index.json" || fail "the checkpoint's index does not name block/kernel"
evaluate_checkpoint "$ckpt" "$WORK/evaluate.json"
final=$(json_get "$MODEL/summary.json" "d['final_test_loss']")
evaluated=$(json_get "$WORK/evaluate.json" "d['test_loss']")
python3 -c "import sys; a,b=float(sys.argv[1]),float(sys.argv[2]); sys.exit(0 if abs(a-b) <= 1e-5*max(1,abs(a)) else 1)" \
  "$final" "$evaluated" || fail "the chief's final test loss $final differs from pstrain evaluate's $evaluated"

# 2. Sync mode: 2 workers x half of each global batch == one process with the whole batch (the full
# data set, so both see the same batches).
cp "$FIXTURES/keras3_regression_mlp.json" "$WORK/job/regression.json"
cat >"$WORK/job/sync.json" <<'JSON'
{"name": "keras-regression-full-batch",
 "model": {"keras_json": "regression.json", "loss": "mse"},
 "optimizer": {"type": "adam", "learning_rate": 0.05},
 "data": {"dataset": "synthetic_linear", "num_examples": 64},
 "batch_size": 64, "schedule": {"steps": 8, "steps_per_closure": 2}, "mode": "sync", "seed": 5}
JSON
SYNC="$WORK/sync"
run_cluster_job 2 2 "$SYNC" 120 --job="$WORK/job/sync.json"
"$BIN/pstrain" train --job="$WORK/job/sync.json" --threads=1 >"$WORK/train.out" 2>"$WORK/train.log" \
  || fail "pstrain train failed: $(tail -n 3 "$WORK/train.log")"
tail -n 1 "$WORK/train.out" >"$WORK/train.json"
cluster=$(json_get "$SYNC/summary.json" "d['final_test_loss']")
single=$(json_get "$WORK/train.json" "d['final_test_loss']")
first=$(python3 -c "import json,sys; print([json.loads(l)['test_loss'] for l in open(sys.argv[1]) if json.loads(l).get('kind')=='eval'][0])" "$SYNC/metrics.jsonl")
python3 -c "import sys; a,b=float(sys.argv[1]),float(sys.argv[2]); sys.exit(0 if abs(a-b) <= 1e-4*max(abs(a),1e-3) else 1)" \
  "$cluster" "$single" || fail "the sync cluster's test loss $cluster differs from pstrain train's $single"
python3 -c "import sys; sys.exit(0 if float(sys.argv[2]) < 0.8 * float(sys.argv[1]) else 1)" "$first" "$cluster" \
  || fail "the regression MLP did not learn: test loss $first after the first step, $cluster at the end"

# 3. BatchNormalization: the regression MLP with one between its layers (momentum 0.8), on the full
# synthetic set as in 2.
python3 - "$FIXTURES/keras3_regression_mlp.json" "$WORK/job/bn.json" <<'PY'
import json, sys
model = json.load(open(sys.argv[1]))
layers = model["config"]["layers"]
assert [l["config"]["name"] for l in layers] == ["xy", "hidden", "y"], "the fixture changed"
def tensor(source):
    return {"class_name": "__keras_tensor__",
            "config": {"shape": [None, 8], "dtype": "float32", "keras_history": [source, 0, 0]}}
bn = {"module": "keras.layers", "class_name": "BatchNormalization", "name": "norm",
      "config": {"name": "norm", "trainable": True, "axis": -1, "momentum": 0.8, "epsilon": 0.001,
                 "center": True, "scale": True},
      "inbound_nodes": [{"args": [tensor("hidden")], "kwargs": {}}]}
layers[2]["inbound_nodes"] = [{"args": [tensor("norm")], "kwargs": {}}]
layers.insert(2, bn)
json.dump(model, open(sys.argv[2], "w"))
PY
cat >"$WORK/job/bn_job.json" <<'JSON'
{"name": "keras-batch-norm",
 "model": {"keras_json": "bn.json", "loss": "mse"},
 "optimizer": {"type": "adagrad", "learning_rate": 0.05},
 "data": {"dataset": "synthetic_linear", "num_examples": 64},
 "batch_size": 64, "schedule": {"steps": 8, "steps_per_closure": 2}, "mode": "sync", "seed": 5,
 "partitioner": {"type": "fixed_shards", "num_shards": 2}}
JSON
"$BIN/pstrain" plan --job="$WORK/job/bn_job.json" --num_ps=2 --format=json >"$WORK/bn_plan.json" 2>&1 \
  || fail "pstrain plan of the BatchNormalization model failed: $(cat "$WORK/bn_plan.json")"
python3 - "$WORK/bn_plan.json" <<'PY' || fail "the plan does not mark the moving statistics non-trainable"
import json, sys
trainable = {v["name"]: v["trainable"] for v in json.load(open(sys.argv[1]))["variables"]}
assert trainable["norm/moving_mean"] is False and trainable["norm/moving_variance"] is False, trainable
assert trainable["norm/gamma"] is True and trainable["hidden/kernel"] is True, trainable
PY
BN="$WORK/bn"
run_cluster_job 2 2 "$BN" 120 --job="$WORK/job/bn_job.json"
evaluate_checkpoint "$BN" "$WORK/bn_evaluate.json"
# One worker takes the whole batch, so its statistics are pstrain train's: the ps's raw additions
# must then give pstrain train's moving statistics, and so its test loss.
BN1="$WORK/bn1"
run_cluster_job 2 1 "$BN1" 120 --job="$WORK/job/bn_job.json"
"$BIN/pstrain" train --job="$WORK/job/bn_job.json" --threads=1 >"$WORK/bn_train.out" 2>"$WORK/bn_train.log" \
  || fail "pstrain train of the BatchNormalization model failed: $(tail -n 3 "$WORK/bn_train.log")"
tail -n 1 "$WORK/bn_train.out" >"$WORK/bn_train.json"
python3 - "$BN" "$WORK/bn_evaluate.json" "$BN1" "$WORK/bn_train.json" <<'PY' || fail "BatchNormalization on the cluster"
import glob, json, os, sys
two, evaluate, one, train = sys.argv[1:]
chief = json.load(open(os.path.join(two, "summary.json")))["final_test_loss"]
evaluated = json.load(open(evaluate))["test_loss"]
one_worker = json.load(open(os.path.join(one, "summary.json")))["final_test_loss"]
single = json.load(open(train))["final_test_loss"]
print("2 workers: chief", chief, "evaluate", evaluated, "; 1 worker", one_worker, "pstrain train", single)
assert abs(chief - evaluated) <= 1e-5 * max(1, abs(chief)), ("evaluate differs from the chief", chief, evaluated)
assert abs(one_worker - single) <= 1e-4 * max(abs(single), 1e-3), ("the cluster differs from pstrain train",
                                                                    one_worker, single)
ckpt = sorted(glob.glob(os.path.join(two, "ckpt-*")), key=lambda d: int(d.rsplit("-", 1)[1]))[-1]
slots = {}
for s in json.load(open(os.path.join(ckpt, "index.json")))["shards"]:
    slots.setdefault(s["variable_name"], set()).update(s.get("slot_names", []))
for name in ("norm/moving_mean", "norm/moving_variance"):
    assert name in slots, (name, "not in the checkpoint", sorted(slots))
    assert not slots[name], (name, "has optimizer slots", slots[name])
assert slots["norm/gamma"] == {"accumulator"}, slots["norm/gamma"]
PY
echo "PASS: Keras residual MLP accuracy $accuracy on the cluster, evaluate $evaluated == chief $final;" \
  "Keras regression MLP in sync mode: cluster $cluster == pstrain train $single;" \
  "BatchNormalization in sync mode: evaluate == chief (2 workers), cluster == pstrain train (1 worker)"
