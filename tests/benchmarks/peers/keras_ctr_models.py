#!/usr/bin/env python3
"""DeepFM and DCN-v2 at the `ctr` preset's scale, written in Keras 2 (TensorFlow 2.15's tf.keras, with
TensorFlow Recommenders' Cross on PYTHONPATH), saved as to_json files that pstrain
(`--model_json`) and TensorFlow (`model_from_json`, tf_keras_ctr.py) both train.

    python keras_ctr_models.py OUT_DIR      # writes OUT_DIR/deepfm.json and OUT_DIR/dcn_v2.json

Inputs follow pstrain's CTR convention: `numeric` (13,) float, then c0..c25 (1,) int64 ids, each
feeding Embedding layers only. Both models end in a logit (no activation).

  DeepFM: first order: Embedding(100000, 1) per field + Dense(1) on numeric; second order:
          (sum e)^2 - sum e^2 over the 26 Embedding(100000, 16) vectors, reduced by a Dense(1) without
          bias (it learns FM's 0.5: Keras has no fixed reduction without a Lambda layer); deep tower
          Dense(512 relu) - Dense(256 relu) - Dense(1) on concat(numeric, e); the three summed.
  DCN-v2: x0 = concat(numeric, e) (429 wide), two full-rank Cross layers (x_{l+1} = x0 * (W x_l + b)
          + x_l), then the same tower.

torch_keras_ctr.py builds the same two models in PyTorch.
"""
import os
import sys

TABLE, DIM, FIELDS, NUMERIC = 100000, 16, 26, 13


def inputs(keras):
    numeric = keras.Input(shape=(NUMERIC,), name="numeric")
    ids = [keras.Input(shape=(1,), dtype="int64", name=f"c{i}") for i in range(FIELDS)]
    return numeric, ids


def embeddings(keras, ids, dim, prefix, suffixes=None):
    """An Embedding(TABLE, dim) per id input, flattened; layers named prefix + suffix (default the
    input's position)."""
    L = keras.layers
    suffixes = suffixes or [str(i) for i in range(len(ids))]
    return [L.Flatten(name=f"{prefix}_flat{s}")(L.Embedding(TABLE, dim, name=f"{prefix}{s}")(c))
            for s, c in zip(suffixes, ids)]


def tower(keras, x):
    L = keras.layers
    x = L.Dense(512, activation="relu", name="deep_hidden1")(x)
    x = L.Dense(256, activation="relu", name="deep_hidden2")(x)
    return L.Dense(1, name="deep_out")(x)


def deepfm(keras, numeric=None, ids=None, suffixes=None):
    """DeepFM on `numeric` and the id inputs `ids` (default: this file's 13 numeric, 26 fields)."""
    L = keras.layers
    if numeric is None:
        numeric, ids = inputs(keras)
    e = embeddings(keras, ids, DIM, "fm_emb", suffixes)
    first = L.Add(name="first_order")(embeddings(keras, ids, 1, "linear_emb", suffixes) +
                                      [L.Dense(1, name="linear_numeric")(numeric)])
    summed = L.Add(name="sum_e")(e)
    square_of_sum = L.Multiply(name="square_of_sum")([summed, summed])
    sum_of_squares = L.Add(name="sum_of_squares")([L.Multiply(name=f"square{i}")([v, v]) for i, v in enumerate(e)])
    fm = L.Dense(1, use_bias=False, name="fm")(L.Subtract(name="fm_pairs")([square_of_sum, sum_of_squares]))
    deep = tower(keras, L.Concatenate(name="deep_in")([numeric] + e))
    return keras.Model([numeric] + ids, L.Add(name="logit")([first, fm, deep]), name="deepfm")


def dcn_v2(keras, tfrs):
    L = keras.layers
    numeric, ids = inputs(keras)
    x0 = L.Concatenate(name="x0")([numeric] + embeddings(keras, ids, DIM, "emb"))
    c1 = tfrs.layers.dcn.Cross(name="cross1")(x0)
    c2 = tfrs.layers.dcn.Cross(name="cross2")(x0, c1)
    return keras.Model([numeric] + ids, tower(keras, c2), name="dcn_v2")


def main():
    out = sys.argv[1]
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf
    import tensorflow_recommenders as tfrs
    keras = tf.keras
    for name, model in (("deepfm", deepfm(keras)), ("dcn_v2", dcn_v2(keras, tfrs))):
        with open(os.path.join(out, name + ".json"), "w") as f:
            f.write(model.to_json())
        print("%s: %d parameters -> %s" % (name, model.count_params(), os.path.join(out, name + ".json")))


if __name__ == "__main__":
    main()
