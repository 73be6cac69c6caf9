"""The Keras side of keras_ctr_test.sh, with real Keras 3 (JAX backend): recommendation models whose
inputs are one float vector of numeric features and one (1,) integer input per categorical field,
on Criteo TSV files read as pstrain reads them (numeric: log(1 + n) for n > 0, else 0; ids: the hex
id modulo the Embedding's input_dim, empty = 0).

  keras_ctr.py make DIR MODEL_JSON TRAIN TEST   initial weights (init.weights.h5), a pstrain job of
                                                full-batch SGD on TRAIN (job.json), and the test loss
                                                Keras reaches after each of 5 steps (keras_curve.json)
  keras_ctr.py check DIR TEST                   the test loss of pstrain's exports: Keras
                                                (export.weights.h5 with its .json) and ONNX
                                                Runtime (export.onnx, after onnx's full checker),
                                                as JSON
"""
import json
import math
import os
import sys

os.environ.setdefault("KERAS_BACKEND", "jax")
import keras  # noqa: E402
import numpy as np  # noqa: E402
from keras_json_refs import embedding_input_dims  # noqa: E402

STEPS = 5
LR = 0.1


def read_tsv(path, model, doc):
    numeric = model.inputs[0].shape[1]
    dims = embedding_input_dims(doc)  # input layer -> the input_dim of the Embedding it feeds
    sizes = [dims[entry[0]] for entry in doc["config"]["input_layers"][1:]]
    labels, x, ids = [], [], []
    with open(path) as f:
        for line in f:
            cols = line.rstrip("\n").split("\t")
            labels.append(float(cols[0]))
            row = []
            for text in cols[1:1 + numeric]:
                n = int(text) if text else 0
                row.append(math.log1p(n) if n > 0 else 0.0)
            x.append(row)
            ids.append([int(t, 16) % s if t else 0 for t, s in zip(cols[1 + numeric:], sizes)])
    ids = np.array(ids, dtype="int32")
    inputs = [np.array(x, dtype="float32")] + [ids[:, k:k + 1] for k in range(ids.shape[1])]
    return inputs, np.array(labels, dtype="float32").reshape(-1, 1)


def from_logits(model):
    return getattr(model.layers[-1], "activation", None) is not keras.activations.sigmoid


def test_loss(model, inputs, y):
    return loss_of(np.asarray(model.predict(inputs, verbose=0), dtype="float64"), y, from_logits(model))


def loss_of(out, y, logits):
    if logits:
        return float(np.mean(np.maximum(out, 0) - out * y + np.log1p(np.exp(-np.abs(out)))))
    p = np.clip(out, 1e-7, 1 - 1e-7)
    return float(np.mean(-(y * np.log(p) + (1 - y) * np.log(1 - p))))


def make(out, model_json, train, test):
    keras.utils.set_random_seed(3)
    with open(model_json) as f:
        doc = json.load(f)
    model = keras.models.model_from_json(json.dumps(doc))
    model.save_weights(os.path.join(out, "init.weights.h5"))
    x_train, y_train = read_tsv(train, model, doc)
    x_test, y_test = read_tsv(test, model, doc)
    job = {"name": "keras-ctr-roundtrip",
           "model": {"keras_json": os.path.abspath(model_json)},
           "optimizer": {"type": "sgd", "learning_rate": LR},
           "data": {"dataset": "criteo", "train_files": [train], "test_files": [test]},
           "batch_size": len(y_train), "schedule": {"epochs": STEPS, "steps_per_closure": 1}, "seed": 3}
    with open(os.path.join(out, "job.json"), "w") as f:
        json.dump(job, f)
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=LR),
                  loss=keras.losses.BinaryCrossentropy(from_logits=from_logits(model)))
    curve = []
    for _ in range(STEPS):
        model.train_on_batch(x_train, y_train)
        curve.append(test_loss(model, x_test, y_test))
    with open(os.path.join(out, "keras_curve.json"), "w") as f:
        json.dump(curve, f)


def check(out, test):
    with open(os.path.join(out, "export.weights.h5.json")) as f:
        doc = json.load(f)
    model = keras.models.model_from_json(json.dumps(doc))
    model.load_weights(os.path.join(out, "export.weights.h5"))
    x_test, y_test = read_tsv(test, model, doc)
    import onnx
    import onnxruntime
    proto = onnx.load(os.path.join(out, "export.onnx"))
    onnx.checker.check_model(proto, full_check=True)
    session = onnxruntime.InferenceSession(os.path.join(out, "export.onnx"), providers=["CPUExecutionProvider"])
    names = [entry[0] for entry in doc["config"]["input_layers"]]
    feed = {name: (x if k == 0 else x.astype("int64")) for k, (name, x) in enumerate(zip(names, x_test))}
    (onnx_out,) = session.run(None, feed)
    print(json.dumps({"keras_test_loss": test_loss(model, x_test, y_test),
                      "onnx_test_loss": loss_of(np.asarray(onnx_out, dtype="float64"), y_test, from_logits(model))}))


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(*sys.argv[2:6])
    else:
        check(*sys.argv[2:4])
