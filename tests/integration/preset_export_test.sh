#!/usr/bin/env bash
# Layer-list models (the presets) out to Keras and ONNX, used by the real tools: `pstrain export`
# writes a layer list as the Keras model with its variables (common/graph/layer_model_keras.h).
# Keras 3 (JAX), ONNX and ONNX Runtime come from the cache's `keras` environment and tf.keras 2.15
# from its `tf` environment (deploy/install-python-peers.sh, installed on first use; skipped, exit
# 77, when they cannot be):
#   1. The cnn preset: `pstrain train --job=cnn --steps=60 --model_dir` on Fashion-MNIST; the
#      checkpoint exported as Keras 3 weights, Keras 2 weights and ONNX; Keras 3, tf.keras 2.15 and
#      ONNX Runtime give `pstrain evaluate`'s test loss (relative 1e-5) and accuracy (within 2 of
#      the 10,000 test images) on the test set; the Keras 3 export read back in (`pstrain-chief
#      --model_json --init_from --init_only` on 2 ps) evaluates to the same figures through the graph.
#   2. A ctr-like layer list (numeric features, 4 fields of 1,000-row tables, a dense tower) trained
#      on a cluster (2 ps, each table in 2 "mod" shards; 2 async workers); Keras 3 and ONNX Runtime
#      give `pstrain evaluate`'s test loss (relative 1e-5).
#   preset_export_test.sh BIN_DIR
source "$(dirname "$0")/lib.sh" "$1"
source "$(dirname "$0")/pypi_venv.sh"
KERAS=$(pypi_python keras) || exit 77
TF=$(pypi_python tf) || exit 77
CHECK="$(dirname "$0")/keras/preset_export_check.py"
FASHION=/usr/share/datasets/fashion-mnist

# 1. The cnn preset, from `pstrain train`.
"$BIN/pstrain" train --job=cnn --steps=60 --threads=2 --model_dir="$WORK/cnn" >"$WORK/cnn-train.out" 2>"$WORK/cnn-train.log" \
  || fail "pstrain train --job=cnn failed: $(tail -n 3 "$WORK/cnn-train.log")"
evaluate_checkpoint "$WORK/cnn" "$WORK/cnn-evaluate.json"
mkdir -p "$WORK/cnn-export"
export_checkpoint "$WORK/cnn" keras "$WORK/cnn-export/export.weights.h5"
export_checkpoint "$WORK/cnn" keras2 "$WORK/cnn-export/export.h5"
export_checkpoint "$WORK/cnn" onnx "$WORK/cnn-export/export.onnx"
"$KERAS" "$CHECK" keras3 "$FASHION" "$WORK/cnn-export/export.weights.h5" "$WORK/cnn-export/export.onnx" \
  >"$WORK/cnn-keras3.json" 2>"$WORK/cnn-keras3.log" || fail "Keras 3 / ONNX Runtime could not use the cnn export: $(tail -n 5 "$WORK/cnn-keras3.log")"
"$TF" "$CHECK" keras2 "$FASHION" "$WORK/cnn-export/export.h5" \
  >"$WORK/cnn-keras2.json" 2>"$WORK/cnn-keras2.log" || fail "tf.keras could not use the cnn export: $(tail -n 5 "$WORK/cnn-keras2.log")"
python3 - "$WORK/cnn-evaluate.json" "$WORK/cnn-keras3.json" "$WORK/cnn-keras2.json" <<'PY' || fail "the cnn exports do not compute pstrain's figures"
import json, sys
ours = json.load(open(sys.argv[1]))
theirs = {**json.load(open(sys.argv[2])), **json.load(open(sys.argv[3]))}
print("cnn preset: pstrain evaluate", ours["test_loss"], ours["test_accuracy"], theirs)
assert ours["test_accuracy"] > 0.5, "after 60 steps the cnn should be well above chance (0.10)"
for tool in ("keras3", "keras2", "onnx"):
    assert abs(theirs[tool + "_test_loss"] - ours["test_loss"]) <= 1e-5 * ours["test_loss"], (tool, theirs, ours)
    assert abs(theirs[tool + "_test_accuracy"] - ours["test_accuracy"]) <= 2e-4, (tool, theirs, ours)
PY
grep -q '"class_name": *"Conv2D"' "$WORK/cnn-export/export.weights.h5.json" || fail "the exported model has no Conv2D layer"

# The export back in as a Keras model: a cluster started from it (--init_only) holds the preset's
# values, and `pstrain evaluate` through the graph executor gives the preset checkpoint's figures.
init_only_cluster 2 "$WORK/cnn-back" --job=cnn --model_json="$WORK/cnn-export/export.weights.h5.json" \
  --init_from="$WORK/cnn-export/export.weights.h5"
evaluate_checkpoint "$WORK/cnn-back" "$WORK/cnn-back-evaluate.json"
python3 - "$WORK/cnn-evaluate.json" "$WORK/cnn-back-evaluate.json" <<'PY' || fail "the cnn export read back as a Keras model evaluates differently"
import json, sys
ours, back = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
print("cnn preset", ours["test_loss"], ours["test_accuracy"], "; as a Keras model", back["test_loss"], back["test_accuracy"])
assert abs(back["test_loss"] - ours["test_loss"]) <= 1e-5 * ours["test_loss"], (back, ours)
assert abs(back["test_accuracy"] - ours["test_accuracy"]) <= 2e-4, (back, ours)
PY

# 2. A ctr-like layer list, from a cluster.
"$BIN/pstrain" datagen ctr --out="$WORK/full" --train=4096 --test=1024 --vocabulary=1000 --seed=5 >"$WORK/datagen.log" 2>&1 \
  || fail "pstrain datagen failed: $(tail -n 3 "$WORK/datagen.log")"
for split in train test; do cut -f1-4,15-18 "$WORK/full/$split.txt" >"$WORK/$split.txt"; done
cat >"$WORK/ctr.json" <<JSON
{"name": "ctr-layers",
 "model": {"numeric_inputs": 3, "fields": [{"vocabulary_size": 1000, "embedding_dim": 8, "count": 4}],
           "layers": [{"type": "dense", "units": 32, "activation": "relu"}, {"type": "dense", "units": 1}],
           "loss": "binary_crossentropy"},
 "optimizer": {"type": "adagrad", "learning_rate": 0.05},
 "data": {"dataset": "criteo", "train_files": ["$WORK/train.txt"], "test_files": ["$WORK/test.txt"]},
 "batch_size": 128, "schedule": {"epochs": 1, "steps_per_closure": 4},
 "partitioner": {"type": "fixed_shards", "num_shards": 2, "strategy": "mod"}, "seed": 5}
JSON
run_cluster_job 2 2 "$WORK/ctr" 180 --job="$WORK/ctr.json"
evaluate_checkpoint "$WORK/ctr" "$WORK/ctr-evaluate.json"
mkdir -p "$WORK/ctr-export"
export_checkpoint "$WORK/ctr" keras "$WORK/ctr-export/export.weights.h5"
export_checkpoint "$WORK/ctr" onnx "$WORK/ctr-export/export.onnx"
"$KERAS" "$(dirname "$0")/keras/keras_ctr.py" check "$WORK/ctr-export" "$WORK/test.txt" >"$WORK/ctr-check.json" \
  2>"$WORK/ctr-check.log" || fail "Keras 3 / ONNX Runtime could not use the ctr export: $(tail -n 5 "$WORK/ctr-check.log")"
python3 - "$WORK/ctr-evaluate.json" "$WORK/ctr-check.json" <<'PY' || fail "the ctr exports do not compute pstrain's test loss"
import json, sys
ours = json.load(open(sys.argv[1]))["test_loss"]
theirs = json.load(open(sys.argv[2]))
print("ctr layer list: pstrain evaluate", ours, theirs)
for name in ("keras_test_loss", "onnx_test_loss"):
    assert abs(theirs[name] - ours) <= 1e-5 * ours, (name, theirs[name], ours)
PY
echo "PASS: the cnn preset's checkpoint in Keras 3, tf.keras 2.15 and ONNX Runtime, and a ctr layer list's cluster" \
  "checkpoint in Keras 3 and ONNX Runtime, give pstrain evaluate's figures"
