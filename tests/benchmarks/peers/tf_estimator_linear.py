#!/usr/bin/env python3
"""TensorFlow peer: the migration guide's TF1 program. tf.estimator.train_and_evaluate with the
guide's model_fn (tf1.layers.Dense(1), mean squared error, AdagradOptimizer(0.05)) on TensorFlow
2.15, the last release with tf.estimator.

    python tf_estimator_linear.py                              # the guide's three examples, batch 1
    python tf_estimator_linear.py --train_csv F --test_csv F --batch 64 --steps 20 --kernel 0.1

With CSV files (label last, as pstrain's csv data) the same program trains --steps batches of --batch
in file order, the kernel starting at the constant --kernel (the guide: Keras's default glorot) and
the bias at 0. Prints the estimator's evaluation (loss, global_step) and a RESULT line.
"""
import argparse
import os
import tempfile

import numpy as np

from tf_common import Timer, log, result

FEATURES = [[1., 1.5], [2., 2.5], [3., 3.5]]
LABELS = [[0.3], [0.5], [0.7]]
EVAL_FEATURES = [[4., 4.5], [5., 5.5], [6., 6.5]]
EVAL_LABELS = [[0.8], [0.9], [1.]]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--train_csv")
    ap.add_argument("--test_csv")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--steps", type=int, default=0, help="0: one pass over the training data, as the guide")
    ap.add_argument("--kernel", type=float, default=None)
    args = ap.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf
    import tensorflow.compat.v1 as tf1
    tf1.logging.set_verbosity(tf1.logging.ERROR)

    if args.train_csv:
        tr = np.loadtxt(args.train_csv, delimiter=",", dtype=np.float32, ndmin=2)
        te = np.loadtxt(args.test_csv, delimiter=",", dtype=np.float32, ndmin=2)
        feats, labels, efeats, elabels = tr[:, :-1], tr[:, -1:], te[:, :-1], te[:, -1:]
    else:
        feats, labels = np.asarray(FEATURES, np.float32), np.asarray(LABELS, np.float32)
        efeats, elabels = np.asarray(EVAL_FEATURES, np.float32), np.asarray(EVAL_LABELS, np.float32)

    def input_fn():
        ds = tf1.data.Dataset.from_tensor_slices((feats, labels))
        return (ds.repeat() if args.steps else ds).batch(args.batch)

    def eval_input_fn():
        return tf1.data.Dataset.from_tensor_slices((efeats, elabels)).batch(len(efeats))

    def model_fn(features, labels, mode):
        init = tf1.constant_initializer(args.kernel) if args.kernel is not None else None
        logits = tf1.layers.Dense(1, kernel_initializer=init)(features)
        loss = tf1.losses.mean_squared_error(labels=labels, predictions=logits)
        optimizer = tf1.train.AdagradOptimizer(0.05)
        train_op = optimizer.minimize(loss, global_step=tf1.train.get_global_step())
        return tf1.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)

    t = Timer()
    with tempfile.TemporaryDirectory() as model_dir:
        estimator = tf1.estimator.Estimator(model_fn=model_fn, model_dir=model_dir,
                                            config=tf1.estimator.RunConfig(tf_random_seed=42))
        train_spec = tf1.estimator.TrainSpec(input_fn=input_fn, max_steps=args.steps or None)
        eval_spec = tf1.estimator.EvalSpec(input_fn=eval_input_fn, steps=None)
        metrics, _ = tf1.estimator.train_and_evaluate(estimator, train_spec, eval_spec)
    log("train_and_evaluate: %s (%.1f s)" % (metrics, t.seconds()))
    result(peer="tf_estimator_linear", tensorflow=tf.__version__, eval_loss=float(metrics["loss"]),
           global_step=int(metrics["global_step"]), seconds=t.seconds())


if __name__ == "__main__":
    main()
