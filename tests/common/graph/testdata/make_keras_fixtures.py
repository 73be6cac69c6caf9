"""Writes the Keras model fixtures the graph tests read: to_json() of real Keras models, and for some
of them inputs, weights and Keras's predictions (inference mode).

  python make_keras_fixtures.py keras2 OUT_DIR   # TensorFlow 2.15's tf.keras (Keras 2), with
                                                 # tensorflow_recommenders on PYTHONPATH (see below)
  python make_keras_fixtures.py keras3 OUT_DIR   # Keras 3 (any backend; numpy suffices)

The Keras 2 run needs TensorFlow Recommenders 0.7.3 (Cross, DotInteraction: the recommenders, dcn_v2
and dlrm models) importable without installing it into TensorFlow's environment (its dependencies
would change TensorFlow's):

  python -m pip download tensorflow-recommenders==0.7.3 --no-deps -d /tmp/tfrs
  (cd /tmp/tfrs && unzip -q -o tensorflow_recommenders-0.7.3-py3-none-any.whl -d site)
  PYTHONPATH=/tmp/tfrs/site python make_keras_fixtures.py keras2 OUT_DIR

Write into an empty OUT_DIR and copy in only new or deliberately changed files: Keras numbers the
models it names itself, so a model added before others renames them in their to_json.

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

# Recommendation models on one CTR-shaped input convention, in this order (jobs map data columns to
# inputs by it): `numeric` [3] float, then ids c0..c3 [1] (vocabulary 20), each feeding Embedding
# layers only. Batch 6; their own random stream, after every model above (Keras 2 numbers its
# automatic names, so models added earlier would rename the ones after them).
rec_rng = np.random.default_rng(11)
RB, VOCAB, DIM = 6, 20, 4
# Keras 2 takes int64 ids too: two models use them.
ID_DTYPE = {"deepfm": "int32", "dcn_v2": "int64", "wide_deep": "int32", "dlrm": "int64", "two_tower": "int32"}


def ctr_inputs(model):
    numeric = keras.Input(shape=(3,), name="numeric")
    ids = [keras.Input(shape=(1,), dtype=ID_DTYPE[model] if FLAVOR == "keras2" else "int32", name=f"c{i}")
           for i in range(4)]
    return numeric, ids


def ctr_record(model):
    values = {"numeric": rec_rng.normal(size=(RB, 3)).astype("float32")}
    for i in range(4):
        values[f"c{i}"] = rec_rng.integers(0, VOCAB, size=(RB, 1)).astype(ID_DTYPE[model])
    return values


def field_embeddings(ids, dim, prefix):
    # [B, 1] ids -> Embedding -> [B, 1, dim] -> Flatten -> [B, dim].
    return [L.Flatten(name=f"{prefix}_flat{i}")(L.Embedding(VOCAB, dim, name=f"{prefix}{i}")(c))
            for i, c in enumerate(ids)]


# DeepFM: first order (Embedding(20, 1) per field + Dense on numeric), second order
# (sum e)^2 - sum e^2 (its 0.5 left to a Dense without bias), a deep MLP; their sum is the logit.
numeric, ids = ctr_inputs("deepfm")
e = field_embeddings(ids, DIM, "fm_emb")
first = L.Add(name="first_order")(field_embeddings(ids, 1, "linear_emb") + [L.Dense(1, name="linear_numeric")(numeric)])
summed = L.Add(name="sum_e")(e)
square_of_sum = L.Multiply(name="square_of_sum")([summed, summed])
sum_of_squares = L.Add(name="sum_of_squares")([L.Multiply(name=f"square{i}")([v, v]) for i, v in enumerate(e)])
fm = L.Dense(1, use_bias=False, name="fm")(L.Subtract(name="fm_pairs")([square_of_sum, sum_of_squares]))
deep = L.Dense(8, activation="relu", name="deep_hidden")(L.Concatenate(name="deep_in")([numeric] + e))
deep = L.Dense(1, name="deep_out")(deep)
write("deepfm", keras.Model([numeric] + ids, L.Add(name="logit")([first, fm, deep]), name="deepfm"),
      ctr_record("deepfm"))

# Wide & Deep: every field feeds a wide Embedding(20, 1) and a deep Embedding(20, 4); sigmoid out.
numeric, ids = ctr_inputs("wide_deep")
wide = L.Add(name="wide")(field_embeddings(ids, 1, "wide_emb") + [L.Dense(1, name="wide_numeric")(numeric)])
deep = L.Concatenate(name="deep_in")([numeric] + field_embeddings(ids, DIM, "deep_emb"))
deep = L.Dense(8, activation="relu", name="deep_hidden")(deep)
deep = L.Dense(1, name="deep_out")(L.Dense(4, activation="tanh", name="deep_hidden_2")(deep))
out = L.Activation("sigmoid", name="probability")(L.Add(name="wide_plus_deep")([wide, deep]))
write("wide_deep", keras.Model([numeric] + ids, out, name="wide_deep"), ctr_record("wide_deep"))

# Two towers: user (numeric, c0, c1) and item (c2, c3) vectors; their dot product is the logit.
numeric, ids = ctr_inputs("two_tower")
e = field_embeddings(ids, DIM, "emb")
user = L.Dense(8, activation="relu", name="user_hidden")(L.Concatenate(name="user_in")([numeric, e[0], e[1]]))
user = L.Dense(8, name="user_vector")(user)
item = L.Dense(8, name="item_vector")(L.Concatenate(name="item_in")([e[2], e[3]]))
write("two_tower", keras.Model([numeric] + ids, L.Dot(axes=1, name="score")([user, item]), name="two_tower"),
      ctr_record("two_tower"))

if FLAVOR == "keras2":
    # DCN-v2: a low-rank then a full-rank Cross over [numeric, embeddings]; sigmoid out.
    numeric, ids = ctr_inputs("dcn_v2")
    x0 = L.Concatenate(name="x0")([numeric] + field_embeddings(ids, DIM, "emb"))
    c1 = tfrs.layers.dcn.Cross(projection_dim=4, name="cross_low")(x0)
    c2 = tfrs.layers.dcn.Cross(name="cross_full")(x0, c1)
    out = L.Dense(1, activation="sigmoid", name="probability")(L.Dense(8, activation="relu", name="hidden")(c2))
    write("dcn_v2", keras.Model([numeric] + ids, out, name="dcn_v2"), ctr_record("dcn_v2"))

    # DLRM: bottom MLP to the embedding size; DotInteraction over [bottom, e0..e3] (TFRS stacks the
    # list to [B, 5, 4] itself), concatenated with bottom; top MLP to the logit.
    numeric, ids = ctr_inputs("dlrm")
    bottom = L.Dense(DIM, activation="relu", name="bottom_out")(L.Dense(8, activation="relu", name="bottom_hidden")(numeric))
    inter = tfrs.layers.feature_interaction.DotInteraction(name="interaction")([bottom] + field_embeddings(ids, DIM, "emb"))
    top = L.Dense(8, activation="relu", name="top_hidden")(L.Concatenate(name="top_in")([inter, bottom]))
    write("dlrm", keras.Model([numeric] + ids, L.Dense(1, name="logit")(top), name="dlrm"), ctr_record("dlrm"))
else:
    # The `ctr` preset (worker/README.md) as Keras 3 writes it (to_json only): 13 numeric and 26 id
    # inputs, tables 100000 x 16, Dense(512, relu) -> Dense(256, relu) -> Dense(1) logit, with the
    # layer names a fresh Keras session gives them.
    numeric = keras.Input(shape=(13,), name="numeric")
    ids = [keras.Input(shape=(1,), dtype="int32", name=f"c{i}") for i in range(26)]
    flats = [L.Flatten(name="flatten" + (f"_{i}" if i else ""))(
                 L.Embedding(100000, 16, name="embedding" + (f"_{i}" if i else ""))(c)) for i, c in enumerate(ids)]
    h = L.Dense(512, activation="relu", name="dense")(L.Concatenate(name="concatenate")([numeric] + flats))
    h = L.Dense(256, activation="relu", name="dense_1")(h)
    write("ctr_preset", keras.Model([numeric] + ids, L.Dense(1, name="dense_2")(h), name="ctr_preset"))
print("wrote", FLAVOR, "fixtures to", OUT)
