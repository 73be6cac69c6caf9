"""Writes the Keras model fixtures the graph tests read: to_json() of real Keras models, and for some
of them inputs, weights and Keras's predictions (inference mode).

  python make_keras_fixtures.py keras2 OUT_DIR   # TensorFlow 2.15's tf.keras (Keras 2), with
                                                 # tensorflow_recommenders on PYTHONPATH for Cross
  python make_keras_fixtures.py keras3 OUT_DIR   # Keras 3 (any backend; numpy suffices)

Files: <flavor>_<model>.json (to_json) and <flavor>_<model>.predict.json ({"inputs": {name: {shape,
values}}, "weights": {name: {shape, values}}, "output": {shape, values}}) with Keras's save_weights of
the same weights (keras3_<model>.weights.h5, keras2_<model>.h5). Refused models only get the to_json
file.
"""
import json
import os
import sys

import numpy as np

FLAVOR = sys.argv[1]
OUT = sys.argv[2]
if FLAVOR == "keras2":
    import tensorflow as tf
    keras = tf.keras
    L = keras.layers
else:
    import keras
    L = keras.layers


def var_name(w, model):
    # Keras 3: path "dense/kernel" (a Sequential model puts its own name in front, which pstrain's
    # names leave out); Keras 2: name "dense/kernel:0".
    name = getattr(w, "path", None) if FLAVOR == "keras3" else w.name
    if FLAVOR == "keras3" and name.startswith(model.name + "/"):
        name = name[len(model.name) + 1:]
    return name.split(":")[0]


def write(name, model, inputs=None):
    with open(os.path.join(OUT, f"{FLAVOR}_{name}.json"), "w") as f:
        f.write(model.to_json())
    if inputs is None:
        return
    rng = np.random.default_rng(7)
    weights = {}
    for w in model.weights:
        value = rng.uniform(-0.5, 0.5, size=tuple(w.shape)).astype("float32")
        if "variance" in var_name(w, model):
            value = rng.uniform(0.5, 1.5, size=tuple(w.shape)).astype("float32")
        w.assign(value)
        weights[var_name(w, model)] = {"shape": list(value.shape), "values": value.ravel().tolist()}
    # Keras's own weight file of these values: Keras 3's .weights.h5, Keras 2's legacy .h5.
    model.save_weights(os.path.join(OUT, f"{FLAVOR}_{name}" + (".weights.h5" if FLAVOR == "keras3" else ".h5")))
    out = np.asarray(model(inputs, training=False))
    record = {
        "inputs": {k: {"shape": list(v.shape), "values": np.asarray(v, "float64").ravel().tolist()}
                   for k, v in inputs.items()},
        "weights": weights,
        "output": {"shape": list(out.shape), "values": out.astype("float64").ravel().tolist()},
    }
    with open(os.path.join(OUT, f"{FLAVOR}_{name}.predict.json"), "w") as f:
        json.dump(record, f)


rng = np.random.default_rng(3)
B = 4

# Two inputs -> a Dense each -> Concatenate -> Dense.
a = keras.Input(shape=(3,), name="a")
b = keras.Input(shape=(2,), name="b")
ha = L.Dense(4, activation="relu", name="dense_a")(a)
hb = L.Dense(2, activation="tanh", use_bias=False, name="dense_b")(b)
y = L.Dense(1, activation="sigmoid", name="out")(L.Concatenate(name="concat")([ha, hb]))
write("two_inputs", keras.Model([a, b], y),
      {"a": rng.normal(size=(B, 3)).astype("float32"), "b": rng.normal(size=(B, 2)).astype("float32")})

# A Sequential MLP.
seq = keras.Sequential([keras.Input(shape=(6,)), L.Dense(8, activation="gelu"), L.Dropout(0.25, seed=5),
                        L.Dense(5, activation="swish"), L.Dense(3, activation="softmax")], name="mlp")
write("sequential_mlp", seq, {seq.inputs[0].name.split(":")[0]: rng.normal(size=(B, 6)).astype("float32")})

# Many layers in one DAG: ids -> Embedding; dense features -> norms; merges; pooling.
ids = keras.Input(shape=(5,), dtype="int32", name="ids")
dense = keras.Input(shape=(8,), name="dense_in")
emb = L.Embedding(11, 4, name="embedding")(ids)                      # [B, 5, 4]
pooled_avg = L.GlobalAveragePooling1D(name="gap")(emb)                # [B, 4]
pooled_max = L.GlobalMaxPooling1D(name="gmp")(emb)                    # [B, 4]
flat = L.Flatten(name="flatten")(emb)                                  # [B, 20]
x = L.LayerNormalization(name="layer_norm")(dense)
x = L.BatchNormalization(name="batch_norm")(x)
x = L.Dense(4, activation="elu", name="proj")(x)
added = L.Add(name="add")([x, pooled_avg])
sub = L.Subtract(name="sub")([added, pooled_max])
mul = L.Multiply(name="mul")([sub, x])
avg = L.Average(name="avg")([mul, pooled_avg, pooled_max])
dot = L.Dot(axes=-1, normalize=True, name="cosine")([avg, x])         # [B, 1]
r = L.Reshape((4, 5), name="reshape")(flat)
r = L.GlobalAveragePooling1D(name="gap2")(r)                           # [B, 5]
r = L.ReLU(name="relu")(r)
act = L.Activation("sigmoid", name="act")(L.Dense(3, name="d3")(avg))
merged = L.Concatenate(name="merge")([dot, r, act])
out = L.Dense(2, name="logits")(merged)
out = L.Activation("softmax", name="probs")(out)
write("many_layers", keras.Model([ids, dense], out),
      {"ids": rng.integers(0, 11, size=(B, 5)).astype("int32"), "dense_in": rng.normal(size=(B, 8)).astype("float32")})

# A small CNN: strides, both paddings, the poolings.
img = keras.Input(shape=(9, 8, 3), name="image")
c = L.Conv2D(4, 3, strides=2, padding="same", activation="relu", name="conv_same")(img)      # [5, 4, 4]
c = L.Conv2D(5, (2, 3), use_bias=False, name="conv_valid")(c)                                # [4, 2, 5]
p1 = L.MaxPooling2D(name="max_pool")(c)                                                      # [2, 1, 5]
p2 = L.AveragePooling2D((3, 2), strides=(2, 1), padding="same", name="avg_pool")(c)         # [2, 2, 5]
p3 = L.MaxPooling2D(3, strides=2, padding="same", name="max_pool_same")(c)                  # [2, 1, 5]
g = L.Concatenate(name="pools")([L.GlobalAveragePooling2D(name="gap")(p2), L.GlobalMaxPooling2D(name="gmp")(p3),
                                 L.Flatten(name="flat")(p1)])
write("cnn", keras.Model(img, L.Dense(3, activation="softmax", name="classes")(g)),
      {"image": rng.normal(size=(B, 9, 8, 3)).astype("float32")})

# Trained by jobs (to_json only): on Fashion-MNIST the seeds' CNN as the cnn preset has it (logits
# out) and a functional residual MLP (probabilities out); on synthetic_linear a small regression MLP.
# Layer names as a fresh Keras session gives them (and the preset has them).
write("seeds_cnn", keras.Sequential([keras.Input(shape=(28, 28, 1)),
                                     L.Conv2D(32, 3, activation="relu", name="conv2d"),
                                     L.MaxPooling2D(name="max_pooling2d"),
                                     L.Conv2D(64, 3, activation="relu", name="conv2d_1"),
                                     L.MaxPooling2D(name="max_pooling2d_1"), L.Flatten(name="flatten"),
                                     L.Dense(64, activation="relu", name="dense"), L.Dense(10, name="dense_1")],
                                    name="seeds_cnn"))
xy = keras.Input(shape=(2,), name="xy")
write("regression_mlp", keras.Model(xy, L.Dense(1, name="y")(L.Dense(8, activation="tanh", name="hidden")(xy))))
pixels = keras.Input(shape=(28, 28, 1), name="pixels")
h = L.Dense(128, activation="relu", name="embed")(L.Flatten(name="flatten")(pixels))
r = L.Dense(128, activation="gelu", kernel_initializer="he_normal", name="block")(L.LayerNormalization(name="norm")(h))
h = L.Dropout(0.1, seed=1, name="drop")(L.Add(name="residual")([h, r]))
write("residual_mlp", keras.Model(pixels, L.Dense(10, activation="softmax", name="classes")(h)))

# The recommenders' interaction layers (Keras 2 with TensorFlow Recommenders only).
if FLAVOR == "keras2":
    import tensorflow_recommenders as tfrs
    f = keras.Input(shape=(6,), name="features")
    c1 = tfrs.layers.dcn.Cross(name="cross_full")(f)
    c2 = tfrs.layers.dcn.Cross(projection_dim=2, diag_scale=0.5, name="cross_low")(f, c1)
    e1 = L.Dense(3, name="e1")(c2)
    e2 = L.Dense(3, name="e2")(f)
    e3 = L.Dense(3, name="e3")(c1)
    inter = tfrs.layers.feature_interaction.DotInteraction(name="dot_interaction")([e1, e2, e3])
    out = L.Dense(1, name="score")(L.Concatenate(name="cat")([inter, c2]))
    write("recommenders", keras.Model(f, out), {"features": rng.normal(size=(B, 6)).astype("float32")})

# Refused: a layer called twice, two outputs, a Lambda, Conv2D groups, channels_first, dilation,
# Embedding mask_zero.
i = keras.Input(shape=(4,), name="x")
shared = L.Dense(4, name="shared")
write("shared_layer", keras.Model(i, shared(shared(i))))
write("two_outputs", keras.Model(i, [L.Dense(1, name="o1")(i), L.Dense(1, name="o2")(i)]))
write("lambda", keras.Model(i, L.Lambda(lambda t: t * 2, name="double")(i)))
img = keras.Input(shape=(8, 8, 4), name="img")
write("conv_groups", keras.Model(img, L.Conv2D(4, 3, groups=2, name="grouped")(img)))
write("conv_dilation", keras.Model(img, L.Conv2D(4, 3, dilation_rate=2, name="dilated")(img)))
write("conv_channels_first", keras.Model(img, L.Conv2D(4, 3, data_format="channels_first", name="cf")(img)))
ids2 = keras.Input(shape=(3,), dtype="int32", name="ids")
write("mask_zero", keras.Model(ids2, L.Embedding(10, 2, mask_zero=True, name="masked")(ids2)))
print("wrote", FLAVOR, "fixtures to", OUT)
