#!/usr/bin/env python3
"""DLRM and DeepFM for the multi-hot set of multihot_data.py, written in Keras 2 (TensorFlow 2.15's
tf.keras, with TensorFlow Recommenders' DotInteraction on PYTHONPATH) as to_json files that pstrain
trains, and the pstrain job spec of each (tfrecord data, the B features as mean bags).

    python keras_multihot_models.py OUT_DIR TRAIN.tfrecord TEST.tfrecord
        # writes OUT_DIR/{dlrm,deepfm}.json and OUT_DIR/{dlrm,deepfm}-job.json

Inputs follow pstrain's CTR convention: `numeric` (13,) float, then c1..c8 and b1..b4, (1,) int64
ids each feeding Embedding layers only; the job spec makes b1..b4 bags (combiner mean), whose
Embedding layers then output the bag's mean row. Tables 100000 x 16 (Keras's default uniform
initializer in [-0.05, 0.05]); both models end in a logit. tf_multihot.py and torchrec_multihot.py
build the same models:

  DLRM:   bottom Dense(64 relu) - Dense(16 relu) on numeric -> b; DotInteraction (pairwise dots,
          no self-interaction) of [b, e1..e12]; top Dense(256 relu) - Dense(128 relu) - Dense(1)
          on concat(b, dots).
  DeepFM: keras_ctr_models.deepfm on these inputs: first order Embedding(100000, 1) per feature +
          Dense(1) on numeric; second order a Dense(1) without bias on (sum e)^2 - sum e^2; deep
          Dense(512 relu) - Dense(256 relu) - Dense(1) on concat(numeric, e); the three summed.
"""
import json
import os
import sys

import keras_ctr_models

DIM, NUMERIC = keras_ctr_models.DIM, 13
FEATURES = ["c%d" % i for i in range(1, 9)] + ["b%d" % i for i in range(1, 5)]


def inputs(keras):
    numeric = keras.Input(shape=(NUMERIC,), name="numeric")
    ids = [keras.Input(shape=(1,), dtype="int64", name=f) for f in FEATURES]
    return numeric, ids


def dlrm(keras, tfrs):
    L = keras.layers
    numeric, ids = inputs(keras)
    b = L.Dense(16, activation="relu", name="bottom_out")(L.Dense(64, activation="relu", name="bottom1")(numeric))
    e = keras_ctr_models.embeddings(keras, ids, DIM, "emb_", FEATURES)
    dots = tfrs.layers.feature_interaction.DotInteraction(name="interaction")([b] + e)
    x = L.Concatenate(name="top_in")([b, dots])
    x = L.Dense(128, activation="relu", name="top2")(L.Dense(256, activation="relu", name="top1")(x))
    return keras.Model([numeric] + ids, L.Dense(1, name="logit")(x), name="dlrm")


def deepfm(keras):
    numeric, ids = inputs(keras)
    return keras_ctr_models.deepfm(keras, numeric, ids, ["_" + f for f in FEATURES])


def job(name, model_json, train, test):
    categorical = ["C%d" % i for i in range(1, 9)] + \
        [{"name": "B%d" % i, "combiner": "mean", "max_length": 20} for i in range(1, 5)]
    return {"name": "multihot-" + name, "model": {"keras_json": model_json},
            "optimizer": {"type": "adagrad", "learning_rate": 0.02, "initial_accumulator_value": 1e-6,
                          "epsilon": 1e-7},
            "data": {"dataset": "tfrecord", "train_files": [train], "test_files": [test],
                     "features": {"label": "label", "numeric": ["I%d" % i for i in range(1, NUMERIC + 1)],
                                  "categorical": categorical}},
            "batch_size": 1024, "schedule": {"epochs": 1, "steps_per_closure": 10}, "seed": 42}


def main():
    out, train, test = sys.argv[1:4]
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf
    import tensorflow_recommenders as tfrs
    keras = tf.keras
    for name, model in (("dlrm", dlrm(keras, tfrs)), ("deepfm", deepfm(keras))):
        path = os.path.join(out, name + ".json")
        with open(path, "w") as f:
            f.write(model.to_json())
        with open(os.path.join(out, name + "-job.json"), "w") as f:
            json.dump(job(name, path, train, test), f, indent=1)
        print("%s: %d parameters -> %s" % (name, model.count_params(), path))


if __name__ == "__main__":
    main()
