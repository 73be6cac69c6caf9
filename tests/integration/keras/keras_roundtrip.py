"""The Keras side of keras_roundtrip_test.sh, with real Keras 3 (JAX backend), ONNX and ONNX Runtime.

  keras_roundtrip.py make DIR [KIND]
                                  writes a Keras model (to_json + initial .weights.h5), CSV train and
                                  test sets, a pstrain job on them, and the test loss Keras reaches
                                  after each of 5 full-batch SGD steps (keras_curve.json). KIND:
                                  residual (default: a functional residual MLP with BatchNormalization
                                  and LayerNormalization, 3 classes; also keras_frozen_curve.json, the
                                  losses had its moving statistics stayed at their initial values),
                                  linear (the Estimator guide's model: Dense(1), MSE) or
                                  mlp (the DTensor guide's MLP: Sequential Dense 700 relu, 500 relu, 10
                                  logits)
  keras_roundtrip.py check DIR    loads pstrain's exports of a checkpoint (export.weights.h5 with its
                                  .json, export.onnx) and prints the test loss Keras and ONNX Runtime
                                  compute with them, as JSON
"""
import json
import os
import sys

os.environ.setdefault("KERAS_BACKEND", "jax")
import keras  # noqa: E402
import numpy as np  # noqa: E402

STEPS = 5
LR = 0.1


def data(rng, n, w, regression):
    x = rng.normal(size=(n, 6)).astype("float32")
    if regression:
        return x, (x @ w[:, :1] + 0.1 * rng.normal(size=(n, 1))).astype("float32")
    y = np.argmax(x @ w, axis=1).astype("int64")
    return x, y


def write_csv(path, x, y):
    with open(path, "w") as f:
        for row, label in zip(x, y):
            f.write(",".join(repr(float(v)) for v in row) + "," + ",".join(repr(float(v)) for v in np.ravel(label)) + "\n")


def read_csv(path, regression=False):
    rows = np.loadtxt(path, delimiter=",", dtype="float64")
    if regression:
        return rows[:, :-1].astype("float32"), rows[:, -1:].astype("float32")
    return rows[:, :-1].astype("float32"), rows[:, -1].astype("int64")


def test_loss(out, y, kind="residual"):
    if kind == "linear":
        return float(np.mean((out.astype("float64") - y) ** 2))
    if kind == "mlp":  # logits
        z = out.astype("float64")
        z = z - z.max(axis=1, keepdims=True)
        return float(np.mean(np.log(np.exp(z).sum(axis=1)) - z[np.arange(len(y)), y]))
    p = np.clip(out[np.arange(len(y)), y].astype("float64"), 1e-7, 1 - 1e-7)
    return float(np.mean(-np.log(p)))


def moving_statistics(bn):
    return [keras.ops.convert_to_numpy(v) for v in (bn.moving_mean, bn.moving_variance)]


def build(kind):
    if kind == "linear":
        inputs = keras.Input(shape=(6,), name="features")
        return keras.Model(inputs, keras.layers.Dense(1, name="linear")(inputs)), "mse"
    if kind == "mlp":
        model = keras.Sequential([keras.Input(shape=(6,)),
                                  keras.layers.Dense(700, activation="relu", name="hidden_1"),
                                  keras.layers.Dense(500, activation="relu", name="hidden_2"),
                                  keras.layers.Dense(10, name="logits")])
        return model, keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    inputs = keras.Input(shape=(6,), name="features")
    h1 = keras.layers.Dense(16, activation="relu", name="h1")(inputs)
    # A small momentum moves the moving statistics far in 5 steps, so the test loss tells their values.
    h1 = keras.layers.BatchNormalization(momentum=0.8, name="bn")(h1)
    h2 = keras.layers.Dense(16, activation="gelu", name="h2")(keras.layers.LayerNormalization(name="norm")(h1))
    out_layer = keras.layers.Dense(3, activation="softmax", name="classes")(keras.layers.Add(name="residual")([h1, h2]))
    return keras.Model(inputs, out_layer), "sparse_categorical_crossentropy"


def make(out, kind="residual"):
    keras.utils.set_random_seed(3)
    rng = np.random.default_rng(3)
    w = rng.normal(size=(6, 3))
    regression = kind == "linear"
    x_train, y_train = data(rng, 256, w, regression)
    x_test, y_test = data(rng, 128, w, regression)
    write_csv(os.path.join(out, "train.csv"), x_train, y_train)
    write_csv(os.path.join(out, "test.csv"), x_test, y_test)
    x_train, y_train = read_csv(os.path.join(out, "train.csv"), regression)  # exactly what pstrain reads
    x_test, y_test = read_csv(os.path.join(out, "test.csv"), regression)
    model, loss = build(kind)
    with open(os.path.join(out, "model.json"), "w") as f:
        f.write(model.to_json())
    model.save_weights(os.path.join(out, "init.weights.h5"))
    job = {"name": "keras-roundtrip",
           "model": {"keras_json": "model.json", "loss": "mse" if regression else "sparse_categorical_crossentropy"},
           "optimizer": {"type": "sgd", "learning_rate": LR},
           "data": {"dataset": "csv", "train_file": os.path.join(out, "train.csv"),
                    "test_file": os.path.join(out, "test.csv"), "shuffle_seed": 1},
           "batch_size": 256, "schedule": {"epochs": STEPS, "steps_per_closure": 1}, "seed": 3}
    with open(os.path.join(out, "job.json"), "w") as f:
        json.dump(job, f)
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=LR), loss=loss)
    bn = model.get_layer("bn") if kind == "residual" else None
    initial_moving = moving_statistics(bn) if bn is not None else None
    curve, frozen = [], []
    for _ in range(STEPS):
        model.train_on_batch(x_train, y_train)
        curve.append(test_loss(np.asarray(model.predict(x_test, verbose=0)), y_test, kind))
        if bn is None:
            continue
        moving = moving_statistics(bn)
        bn.moving_mean.assign(initial_moving[0])
        bn.moving_variance.assign(initial_moving[1])
        frozen.append(test_loss(np.asarray(model.predict(x_test, verbose=0)), y_test, kind))
        bn.moving_mean.assign(moving[0])
        bn.moving_variance.assign(moving[1])
    with open(os.path.join(out, "keras_curve.json"), "w") as f:
        json.dump(curve, f)
    if bn is not None:
        with open(os.path.join(out, "keras_frozen_curve.json"), "w") as f:
            json.dump(frozen, f)


def check(out):
    import onnx
    import onnxruntime
    x_test, y_test = read_csv(os.path.join(out, "test.csv"))
    with open(os.path.join(out, "export.weights.h5.json")) as f:
        model = keras.models.model_from_json(f.read())
    model.load_weights(os.path.join(out, "export.weights.h5"))
    keras_loss = test_loss(np.asarray(model.predict(x_test, verbose=0)), y_test)  # the residual model
    proto = onnx.load(os.path.join(out, "export.onnx"))
    onnx.checker.check_model(proto, full_check=True)
    session = onnxruntime.InferenceSession(os.path.join(out, "export.onnx"), providers=["CPUExecutionProvider"])
    (probs,) = session.run(None, {session.get_inputs()[0].name: x_test})
    print(json.dumps({"keras_test_loss": keras_loss, "onnx_test_loss": test_loss(probs, y_test)}))


if __name__ == "__main__":
    {"make": make, "check": check}[sys.argv[1]](*sys.argv[2:])
