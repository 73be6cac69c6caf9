#!/usr/bin/env python3
"""TensorFlow peer: a Keras 2 CTR model given as a to_json file (keras_ctr_models.py writes DeepFM and
DCN-v2), loaded by model_from_json and trained by Model.fit, one process, on the `ctr` job's settings.

    python tf_keras_ctr.py --model_json F --train F --test F [--threads 2] [--batch 1024] [--epochs 1]

TensorFlow 2.15's tf.keras (TensorFlow Recommenders' Cross on PYTHONPATH for DCN-v2). Intra- and
inter-op threads --threads. Sigmoid cross-entropy from the logit, mean over the batch; Adagrad lr
0.02, initial accumulator 1e-6, epsilon 1e-7 (the tables' gradients are IndexedSlices: sparse
updates). The files are parsed before timing (ctr_data: the same hashing and numeric transform as
pstrain) into arrays fed by tf.data (shuffled each epoch, batch 1024, prefetch). Timed: the training
loop after the first execution (tracing), examples/s over the steps after it. Prints a RESULT line
with examples/s, wall time, test AUC and log loss.
"""
import argparse
import os

import numpy as np

import ctr_data
from tf_common import Timer, fit_after_first_step, log, result


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model_json", required=True)
    ap.add_argument("--train", required=True)
    ap.add_argument("--test", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--steps_per_execution", type=int, default=1)
    args = ap.parse_args()
    wall = Timer()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf
    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    keras = tf.keras
    custom = {}
    try:
        import tensorflow_recommenders as tfrs
        custom = {"Cross": tfrs.layers.dcn.Cross, "DotInteraction": tfrs.layers.feature_interaction.DotInteraction}
    except ImportError:
        pass
    keras.utils.set_random_seed(42)

    t = Timer()
    xtr, ctr, ytr = ctr_data.load(args.train)
    xte, cte, yte = ctr_data.load(args.test)
    log("parsed %d train / %d test examples in %.1f s" % (len(ytr), len(yte), t.seconds()))

    with open(args.model_json) as f:
        model = keras.models.model_from_json(f.read(), custom_objects=custom)
    names = [i.name.split(":")[0] for i in model.inputs]
    floats = [n for n, i in zip(names, model.inputs) if i.dtype.is_floating]
    ints = [n for n, i in zip(names, model.inputs) if not i.dtype.is_floating]
    if len(floats) != 1 or len(ints) != ctr_data.NUM_CAT:
        raise SystemExit("%s: want one float input and %d id inputs, got %s" % (args.model_json, ctr_data.NUM_CAT, names))

    def features(x, c):
        d = {floats[0]: x}
        d.update({n: c[:, i:i + 1] for i, n in enumerate(ints)})
        return d

    ds = tf.data.Dataset.from_tensor_slices((features(xtr, ctr), ytr[:, None]))
    ds = ds.shuffle(len(ytr), seed=42).batch(args.batch).prefetch(tf.data.AUTOTUNE)
    steps = -(-len(ytr) // args.batch)
    model.compile(keras.optimizers.Adagrad(0.02, initial_accumulator_value=1e-6, epsilon=1e-7),
                  loss=keras.losses.BinaryCrossentropy(from_logits=True),
                  steps_per_execution=args.steps_per_execution)

    # The clock starts when the first execution (which traces the step) ends.
    fit_s, train_s, after = fit_after_first_step(keras, model, ds, args.epochs)
    timed_examples = args.epochs * len(ytr) - after * args.batch
    logits = model.predict(features(xte, cte), batch_size=8192, verbose=0).ravel()
    p = 1.0 / (1.0 + np.exp(-logits.astype(np.float64)))
    ex_s = timed_examples / train_s
    test_auc, test_ll = ctr_data.auc(p, yte), ctr_data.logloss(p, yte)
    log("%s: %d steps of %d, fit %.1f s (timed %.1f s): %.0f examples/s; test AUC %.4f, log loss %.4f" %
        (os.path.basename(args.model_json), steps * args.epochs, args.batch, fit_s, train_s, ex_s, test_auc, test_ll))
    result(peer="tf_keras_ctr", model=os.path.basename(args.model_json), tensorflow=tf.__version__,
           threads=args.threads, batch=args.batch, steps=steps * args.epochs, fit_seconds=fit_s, train_seconds=train_s,
           train_examples_per_sec=ex_s, test_auc=test_auc, test_logloss=test_ll, wall_seconds=wall.seconds())


if __name__ == "__main__":
    main()
