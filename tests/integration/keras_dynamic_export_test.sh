#!/usr/bin/env bash
# `pstrain export` of a Keras model whose Embedding layers are dynamic tables, loaded by real Keras
# the way the README tells a user to (Keras 3 on JAX and tf.keras 2.15 from the cache's `keras` and
# `tf` environments, deploy/install-python-peers.sh, installed on first use; skipped, exit 77, when
# they cannot be). Wide & Deep with ids up to 1000, inputs c0 and c1 dynamic (two tables each),
# c2 and c3 fixed 20-row tables:
#   1. Keras 3: a cluster (2 ps, 2 async workers, so every table is in two shard files) trains;
#      `pstrain export --format=keras` writes the weights, the model and one keys file per dynamic
#      input; Keras loads them, maps ids to rows with np.searchsorted over the keys, and computes
#      `pstrain evaluate`'s test loss (relative 1e-5).
#   2. Keras 2: `pstrain train` trains the Keras 2 fixture; `--format=keras2`; tf.keras maps ids with
#      IntegerLookup(vocabulary=keys) (checked against np.searchsorted) and computes evaluate's loss.
#   The test set is the training set, so every id it holds has a row (ids the keys lack get row 0,
#   zeros, in Keras and their small initial row in pstrain; the README says so).
#   keras_dynamic_export_test.sh BIN_DIR
source "$(dirname "$0")/lib.sh" "$1"
source "$(dirname "$0")/pypi_venv.sh"
KERAS=$(pypi_python keras) || exit 77
TF=$(pypi_python tf) || exit 77
CHECK="$(dirname "$0")/keras/dynamic_export_check.py"
FIXTURES="$(cd "$(dirname "$0")/../common/graph/testdata" && pwd)"

# 80 full batches of 256, so every line's ids are pushed.
"$BIN/pstrain" datagen ctr --out="$WORK/full" --train=20480 --test=16 --vocabulary=1000 >"$WORK/datagen.log" 2>&1 \
  || fail "pstrain datagen failed: $(tail -n 3 "$WORK/datagen.log")"
cut -f1-4,15-18 "$WORK/full/train.txt" >"$WORK/train.txt"
job() {  # job FILE FIXTURE
  cat >"$1" <<JSON
{"name": "keras-dynamic-export", "model": {"keras_json": "$FIXTURES/$2",
   "dynamic_tables": {"deep_emb0": {"max_rows": 5000}, "wide_emb0": {"max_rows": 5000},
                      "deep_emb1": {"max_rows": 5000}, "wide_emb1": {"max_rows": 5000}}},
 "optimizer": {"type": "adagrad", "learning_rate": 0.05},
 "data": {"dataset": "criteo", "train_files": ["$WORK/train.txt"], "test_files": ["$WORK/train.txt"],
          "allow_test_in_train": true},
 "batch_size": 256, "schedule": {"epochs": 1, "steps_per_closure": 10}, "mode": "async", "seed": 3}
JSON
}
check() {  # check NAME PYTHON MODEL_DIR WEIGHTS: Keras's loss with the export equals evaluate's
  local name=$1 py=$2 model=$3 weights=$4
  evaluate_checkpoint "$model" "$WORK/$name-evaluate.json"
  "$py" "$CHECK" "$weights" "$WORK/train.txt" >"$WORK/$name-check.json" 2>"$WORK/$name-check.log" \
    || fail "$name: Keras could not use the export: $(tail -n 5 "$WORK/$name-check.log")"
  python3 - "$WORK/$name-evaluate.json" "$WORK/$name-check.json" "$name" <<'PY' || fail "$name: Keras's loss differs"
import json, sys
ours = json.load(open(sys.argv[1]))["test_loss"]
theirs = json.load(open(sys.argv[2]))
print(sys.argv[3], "pstrain evaluate", ours, "keras", theirs, file=sys.stderr)
assert theirs["known_ids"] == 1.0, theirs  # every id of the training set has its row
assert abs(ours - theirs["test_loss"]) <= 1e-5 * abs(ours), (ours, theirs)
PY
  json_get "$WORK/$name-check.json" "d['test_loss']"
}

# 1. Keras 3, from a cluster's checkpoint.
job "$WORK/job3.json" keras3_wide_deep.json
run_cluster_job 2 2 "$WORK/cluster" 240 --job="$WORK/job3.json"
mkdir -p "$WORK/k3"
export_checkpoint "$WORK/cluster" keras "$WORK/k3/export.weights.h5"
for input in c0 c1; do
  grep -q "export.weights.h5.$input.keys.npy" "$WORK/export.log" || fail "export did not name $input's keys: $(cat "$WORK/export.log")"
done
[ ! -e "$WORK/k3/export.weights.h5.c2.keys.npy" ] || fail "c2's tables are not dynamic, yet it has a keys file"
python3 - "$WORK/k3/export.weights.h5.json" <<'PY' || fail "the exported model's input_dims are wrong"
import json, sys
dims = {l["config"]["name"]: l["config"]["input_dim"] for l in json.load(open(sys.argv[1]))["config"]["layers"]
        if l["class_name"] == "Embedding"}
assert dims["deep_emb0"] == dims["wide_emb0"] > 500, dims  # the keys of c0 (ids up to 1000) + 1
assert dims["deep_emb2"] == dims["wide_emb3"] == 20, dims
PY
loss3=$(check keras3 "$KERAS" "$WORK/cluster" "$WORK/k3/export.weights.h5")

# 2. Keras 2 (tf.keras 2.15 with IntegerLookup), from `pstrain train`.
job "$WORK/job2.json" keras2_wide_deep.json
"$BIN/pstrain" train --job="$WORK/job2.json" --threads=1 --model_dir="$WORK/local" >"$WORK/train.out" 2>"$WORK/train.log" \
  || fail "pstrain train failed: $(tail -n 3 "$WORK/train.log")"
mkdir -p "$WORK/k2"
export_checkpoint "$WORK/local" keras2 "$WORK/k2/export.h5"
loss2=$(check keras2 "$TF" "$WORK/local" "$WORK/k2/export.h5")

echo "PASS: dynamic tables exported: Keras 3 (cluster, 2 shards per table) loss $loss3 and tf.keras 2.15" \
  "(IntegerLookup) loss $loss2 equal pstrain evaluate's"
