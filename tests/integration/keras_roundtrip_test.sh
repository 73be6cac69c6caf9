#!/usr/bin/env bash
# Keras in, Keras and ONNX out, against the real tools (Keras 3 on JAX, ONNX, ONNX Runtime: the
# `keras` environment of deploy/install-python-peers.sh, installed on first use; skipped, exit 77,
# when it cannot be):
#   1. Keras writes a model's to_json and initial weights (a functional residual MLP with
#      BatchNormalization, momentum 0.8; the Estimator guide's linear model; the DTensor guide's MLP);
#      `pstrain train --init_from` trains it with SGD on full batches of a CSV set, and its test loss
#      after each step equals the one Keras reaches from the same weights on the same batches
#      (relative 1e-4). Inference normalises with the moving statistics, so they match Keras's too:
#      had they not moved, the loss would differ (Keras's "frozen" curve).
#   2. A cluster (2 ps, 2 workers, sync) trains the residual model, the moving statistics being ps
#      variables that the workers' updates are added to; `pstrain evaluate` of the final checkpoint
#      gives the chief's final test loss; `pstrain export` writes the checkpoint as Keras weights and
#      as ONNX; Keras (model_from_json + load_weights) and ONNX Runtime compute the test loss that
#      `pstrain evaluate` gives for the checkpoint (relative 1e-5).
#   keras_roundtrip_test.sh BIN_DIR
source "$(dirname "$0")/lib.sh" "$1"
source "$(dirname "$0")/pypi_venv.sh"
PY=$(pypi_python keras) || exit 77
SCRIPT="$(dirname "$0")/keras/keras_roundtrip.py"
# 1. The same steps as Keras: the residual MLP, the Estimator guide's linear model, the DTensor guide's MLP.
for kind in residual linear mlp; do
  KDIR="$WORK/keras-$kind"
  mkdir -p "$KDIR"
  "$PY" "$SCRIPT" make "$KDIR" "$kind" >"$WORK/make-$kind.log" 2>&1 \
    || fail "Keras could not make the $kind model: $(tail -n 5 "$WORK/make-$kind.log")"
  "$BIN/pstrain" train --job="$KDIR/job.json" --init_from="$KDIR/init.weights.h5" --threads=1 \
    >"$WORK/train-$kind.out" 2>"$WORK/train-$kind.log" \
    || fail "pstrain train --init_from of the $kind model failed: $(tail -n 3 "$WORK/train-$kind.log")"
  tail -n 1 "$WORK/train-$kind.out" >"$WORK/train-$kind.json"
  python3 - "$WORK/train-$kind.json" "$KDIR/keras_curve.json" "$kind" "$KDIR/keras_frozen_curve.json" <<'PY' \
    || fail "pstrain's test losses differ from Keras's ($kind)"
import json, sys
ours = [e["test_loss"] for e in json.load(open(sys.argv[1]))["per_epoch"]]
keras = json.load(open(sys.argv[2]))
print(sys.argv[3], "pstrain", ours)
print(sys.argv[3], "keras  ", keras)
if sys.argv[3] == "residual":
    frozen = json.load(open(sys.argv[4]))
    print(sys.argv[3], "frozen ", frozen)
    assert abs(frozen[-1] - keras[-1]) > 1e-2 * abs(keras[-1]), "the moving statistics hardly change the test loss"
assert len(ours) == len(keras) == 5, (len(ours), len(keras))
for a, b in zip(ours, keras):
    assert abs(a - b) <= 1e-4 * abs(b), (a, b)
assert keras[-1] < 0.9 * keras[0], "the model did not learn, so the comparison would prove little"
PY
done
DIR="$WORK/keras-residual"
# A weights file for another model is refused, naming what does not fit.
"$BIN/pstrain" train --job=mlp --model_json="$DIR/model.json" --init_from="$DIR/nonexistent.weights.h5" --steps=1 \
  >/dev/null 2>"$WORK/bad_init.log" && fail "a missing --init_from file was accepted"
grep -q "init_from" "$WORK/bad_init.log" || fail "the missing weights file's error does not name --init_from: $(cat "$WORK/bad_init.log")"

# 2. A cluster's checkpoint, exported.
MODEL="$WORK/model"
run_cluster_job 2 2 "$MODEL" 120 --job="$DIR/job.json" --mode=sync
evaluate_checkpoint "$MODEL" "$WORK/evaluate.json"
final=$(json_get "$MODEL/summary.json" "d['final_test_loss']")
evaluated=$(json_get "$WORK/evaluate.json" "d['test_loss']")
python3 -c "import sys; a,b=float(sys.argv[1]),float(sys.argv[2]); sys.exit(0 if abs(a-b) <= 1e-5*max(1,abs(a)) else 1)" \
  "$final" "$evaluated" || fail "the chief's final test loss $final differs from pstrain evaluate's $evaluated"
export_checkpoint "$MODEL" keras "$DIR/export.weights.h5"
export_checkpoint "$MODEL" onnx "$DIR/export.onnx"
"$BIN/pstrain" export --checkpoint="$MODEL" --format=keras --out="$DIR/export.h5" >"$WORK/bad_export.log" 2>&1 \
  && fail "a Keras 3 export to a name Keras 3 cannot load was accepted"
grep -q "weights.h5" "$WORK/bad_export.log" || fail "the bad export name's error does not say what to use"
"$PY" "$SCRIPT" check "$DIR" >"$WORK/check.json" 2>"$WORK/check.log" || fail "Keras / ONNX Runtime could not use the exports: $(tail -n 5 "$WORK/check.log")"
python3 - "$WORK/evaluate.json" "$WORK/check.json" <<'PY' || fail "the exports do not compute pstrain's test loss"
import json, sys
ours = json.load(open(sys.argv[1]))["test_loss"]
theirs = json.load(open(sys.argv[2]))
print("pstrain evaluate", ours, theirs)
for name in ("keras_test_loss", "onnx_test_loss"):
    assert abs(theirs[name] - ours) <= 1e-5 * max(1.0, abs(ours)), (name, theirs[name], ours)
PY
echo "PASS: pstrain train --init_from follows Keras's SGD curves (residual MLP with BatchNormalization's" \
  "moving statistics, linear, DTensor-guide MLP); the sync cluster's final test loss $final == pstrain evaluate's;" \
  "Keras and ONNX Runtime reproduce it"
