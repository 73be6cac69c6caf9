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
#   3. Back in: `pstrain-chief --init_from` of the Keras 3 export (its keys files beside it) onto 3 ps
#      (--init_only): each c0/c1 table holds exactly the exported keys, in 3 files, and `pstrain
#      evaluate` gives the original checkpoint's test loss (a key the export lacks gets the same
#      initial row in both); `pstrain train --init_from` of the Keras 2 export trains from it. A
#      max_rows that a shard of 3 cannot hold, or a keys file of another length, is refused.
#   Keras's loss is compared over the training lines whose ids all have rows (ids the keys lack get
#   row 0, zeros, in Keras and their small initial row in pstrain; the README says so): async
#   workers read their own parts, so a slower one may leave some lines unread.
#   keras_dynamic_export_test.sh BIN_DIR
source "$(dirname "$0")/lib.sh" "$1"
source "$(dirname "$0")/pypi_venv.sh"
KERAS=$(pypi_python keras) || exit 77
TF=$(pypi_python tf) || exit 77
CHECK="$(dirname "$0")/keras/dynamic_export_check.py"
FIXTURES="$(cd "$(dirname "$0")/../common/graph/testdata" && pwd)"

# 80 full batches of 256: one epoch.
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
check() {  # check NAME PYTHON MODEL_DIR WEIGHTS JOB: Keras's loss with the export equals evaluate's
  # over the training lines whose ids all have rows (see dynamic_export_check.py --known_lines).
  local name=$1 py=$2 model=$3 weights=$4 job=$5
  "$py" "$CHECK" "$weights" "$WORK/train.txt" --known_lines="$WORK/$name-known.txt" >"$WORK/$name-known.json" \
    2>"$WORK/$name-check.log" || fail "$name: could not read the export's keys: $(tail -n 5 "$WORK/$name-check.log")"
  python3 - "$WORK/$name-known.json" "$name" <<'PY' || fail "$name: too few training lines have all their ids' rows"
import json, sys
known = json.load(open(sys.argv[1]))
print(sys.argv[2], "training lines whose ids all have rows:", known, file=sys.stderr)
assert known["kept"] >= 0.9 * known["lines"], known
PY
  sed "s|\"test_files\": \[\"$WORK/train.txt\"\]|\"test_files\": [\"$WORK/$name-known.txt\"]|" "$job" >"$WORK/$name-known-job.json"
  grep -q "$name-known.txt" "$WORK/$name-known-job.json" || fail "$name: could not write the job for the known lines"
  "$BIN/pstrain" evaluate --checkpoint="$model" --job="$WORK/$name-known-job.json" --format=json \
    >"$WORK/$name-evaluate.json" 2>"$WORK/evaluate.log" || fail "$name: pstrain evaluate failed: $(cat "$WORK/evaluate.log")"
  "$py" "$CHECK" "$weights" "$WORK/$name-known.txt" >"$WORK/$name-check.json" 2>"$WORK/$name-check.log" \
    || fail "$name: Keras could not use the export: $(tail -n 5 "$WORK/$name-check.log")"
  python3 - "$WORK/$name-evaluate.json" "$WORK/$name-check.json" "$name" <<'PY' || fail "$name: Keras's loss differs"
import json, sys
ours = json.load(open(sys.argv[1]))["test_loss"]
theirs = json.load(open(sys.argv[2]))
print(sys.argv[3], "pstrain evaluate", ours, "keras", theirs, file=sys.stderr)
assert theirs["known_ids"] == 1.0, theirs  # the lines kept are those whose ids have rows
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
loss3=$(check keras3 "$KERAS" "$WORK/cluster" "$WORK/k3/export.weights.h5" "$WORK/job3.json")

# 2. Keras 2 (tf.keras 2.15 with IntegerLookup), from `pstrain train`.
job "$WORK/job2.json" keras2_wide_deep.json
"$BIN/pstrain" train --job="$WORK/job2.json" --threads=1 --model_dir="$WORK/local" >"$WORK/train.out" 2>"$WORK/train.log" \
  || fail "pstrain train failed: $(tail -n 3 "$WORK/train.log")"
mkdir -p "$WORK/k2"
export_checkpoint "$WORK/local" keras2 "$WORK/k2/export.h5"
loss2=$(check keras2 "$TF" "$WORK/local" "$WORK/k2/export.h5" "$WORK/job2.json")

# 3. Back in, from the exports.
init_only_cluster 3 "$WORK/back" --job="$WORK/job3.json" --init_from="$WORK/k3/export.weights.h5"
grep -q "dynamic table deep_emb0/embeddings starts from the file's rows, keyed by the keys of $WORK/k3/export.weights.h5.c0.keys.npy" \
  "$WORK/chief-0.log" || fail "the chief did not key deep_emb0 by the export's keys: $(grep init_from "$WORK/chief-0.log")"
evaluate_checkpoint "$WORK/cluster" "$WORK/cluster-evaluate.json"
evaluate_checkpoint "$WORK/back" "$WORK/back-evaluate.json"
inspect_latest "$WORK/back" "$WORK/back-inspect.json"
"$KERAS" - "$WORK/back-evaluate.json" "$WORK/cluster-evaluate.json" "$WORK/back-inspect.json" "$WORK/k3/export.weights.h5" <<'PY' \
  || fail "the export read back in differs from the checkpoint it came from"
import json, sys
import numpy as np
back, orig, inspect, weights = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), json.load(open(sys.argv[3])), sys.argv[4]
print("init_from the export: evaluate", back["test_loss"], "; the original checkpoint", orig["test_loss"], file=sys.stderr)
assert abs(back["test_loss"] - orig["test_loss"]) <= 1e-6 * abs(orig["test_loss"]), (back, orig)
tables = {t["name"]: t for t in inspect["dynamic_tables"]}
for i in ("c0", "c1"):
    keys = np.load("%s.%s.keys.npy" % (weights, i))
    for layer in ("deep_emb" + i[1], "wide_emb" + i[1]):
        t = tables[layer + "/embeddings"]
        assert t["rows"] == len(keys), (layer, t["rows"], len(keys))
        assert len(t["files"]) == 3, (layer, t["files"])
PY
keys_c0=$("$KERAS" -c "import numpy, sys; print(len(numpy.load(sys.argv[1])))" "$WORK/k3/export.weights.h5.c0.keys.npy")
sed "s/\"max_rows\": 5000}, \"wide_emb0\": {\"max_rows\": 5000}/\"max_rows\": $keys_c0}, \"wide_emb0\": {\"max_rows\": $keys_c0}/" \
  "$WORK/job3.json" >"$WORK/job3-tight.json"
grep -q "\"max_rows\": $keys_c0" "$WORK/job3-tight.json" || fail "could not write the tight job"
make_cluster 3 1
expect_exit 2 tight-cap "deep_emb0/embeddings would start with [0-9]+ of its $keys_c0 keys on shard [0-2] of 3, over that shard's cap" \
  env TF_CONFIG="$(tf_config chief 0)" "$BIN/pstrain-chief" --job="$WORK/job3-tight.json" --model_dir="$WORK/tight" \
  --init_from="$WORK/k3/export.weights.h5"
"$KERAS" -c "import numpy, sys; numpy.save(sys.argv[1], numpy.load(sys.argv[1])[:-1])" "$WORK/k3/export.weights.h5.c1.keys.npy"
expect_exit 2 short-keys "layer 'deep_emb1' has [0-9]+ rows but $WORK/k3/export.weights.h5.c1.keys.npy holds" \
  "$BIN/pstrain" train --job="$WORK/job3.json" --init_from="$WORK/k3/export.weights.h5" --steps=1
"$BIN/pstrain" train --job="$WORK/job2.json" --threads=1 --init_from="$WORK/k2/export.h5" --steps=5 \
  --model_dir="$WORK/local-back" >"$WORK/train-back.out" 2>"$WORK/train-back.log" \
  || fail "pstrain train --init_from the Keras 2 export failed: $(tail -n 3 "$WORK/train-back.log")"
grep -q "dynamic table wide_emb1/embeddings starts from the file's rows, keyed by the keys of $WORK/k2/export.h5.c1.keys.npy" \
  "$WORK/train-back.log" || fail "pstrain train did not key wide_emb1 by the export's keys: $(cat "$WORK/train-back.log")"

echo "PASS: dynamic tables exported: Keras 3 (cluster, 2 shards per table) loss $loss3 and tf.keras 2.15" \
  "(IntegerLookup) loss $loss2 equal pstrain evaluate's; read back in with --init_from onto 3 ps"
