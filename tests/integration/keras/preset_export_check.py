"""The Keras side of preset_export_test.sh: a preset's checkpoint (the cnn preset, a layer list)
exported by `pstrain export`, used by a Keras user. Fashion-MNIST's test set is read as pstrain
reads it (pixels / 255, NHWC); the loss is sparse categorical cross-entropy from logits.

  preset_export_check.py keras3 DATA_DIR WEIGHTS ONNX   Keras 3 (JAX backend) on WEIGHTS
                                                        (*.weights.h5 with WEIGHTS.json), and ONNX
                                                        Runtime on ONNX after onnx's full checker
  preset_export_check.py keras2 DATA_DIR WEIGHTS        tf.keras 2.15 on a Keras 2 .h5 (WEIGHTS.json)
prints {"<tool>_test_loss": ..., "<tool>_test_accuracy": ...} as JSON.
"""
import gzip
import json
import os
import sys

import numpy as np

KIND, DATA = sys.argv[1], sys.argv[2]
if KIND == "keras3":
    os.environ.setdefault("KERAS_BACKEND", "jax")
    import keras
else:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf
    keras = tf.keras


def idx(name):
    path = os.path.join(DATA, name)
    opener = open if os.path.exists(path) else gzip.open
    with opener(path if os.path.exists(path) else path + ".gz", "rb") as f:
        raw = f.read()
    dims = raw[3]
    shape = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


x = (idx("t10k-images-idx3-ubyte").astype(np.float32) * np.float32(1.0 / 255.0)).reshape(-1, 28, 28, 1)
y = idx("t10k-labels-idx1-ubyte").astype(np.int64)


def figures(logits):
    logits = np.asarray(logits, dtype=np.float64)
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return float(-log_p[np.arange(len(y)), y].mean()), float((logits.argmax(axis=1) == y).mean())


weights = sys.argv[3]
with open(weights + ".json") as f:
    model = keras.models.model_from_json(f.read())
model.load_weights(weights)
out = {}
out[KIND + "_test_loss"], out[KIND + "_test_accuracy"] = figures(model.predict(x, batch_size=1000, verbose=0))
if KIND == "keras3":
    import onnx
    import onnxruntime
    proto = onnx.load(sys.argv[4])
    onnx.checker.check_model(proto, full_check=True)
    session = onnxruntime.InferenceSession(sys.argv[4], providers=["CPUExecutionProvider"])
    (logits,) = session.run(None, {session.get_inputs()[0].name: x})
    out["onnx_test_loss"], out["onnx_test_accuracy"] = figures(logits)
print(json.dumps(out))
