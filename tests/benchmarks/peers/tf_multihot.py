#!/usr/bin/env python3
"""TensorFlow peer: the DLRM and DeepFM of keras_multihot_models.py on the multi-hot set of
multihot_data.py (its .tfrecord files), written directly in TensorFlow 2.15's tf.keras (Keras 2) as
subclassed Models and trained by Model.fit, one process, on the CPU.

    python tf_multihot.py --train TRAIN.tfrecord --test TEST.tfrecord --model dlrm|deepfm
                          [--epochs 1] [--threads 2] [--batch 1024] [--pipeline gather|slices]

Sparse features: c1..c8 (C1..C8, one id each: a row gather) and b1..b4 (B1..B4, bags of 0..20 ids
as RaggedTensors: the MEAN of the bag's rows, an empty bag gives zeros). A bag is pooled by one fused
tf.sparse.segment_mean(table, flat ids, row ids, num_segments=batch, sparse_gradient=True): empty
rows come out zero, and the table's gradient is IndexedSlices (sparse Adagrad updates), never a dense
100,000-row tensor. Every table 100,000 x 16 (DeepFM's first-order tables 100,000 x 1), initializer
RandomUniform(-0.05, 0.05). Dense layers: glorot-uniform kernels, zero biases (Keras's defaults).

  dlrm:   bottom Dense(64 relu) - Dense(16 relu) on numeric (13) -> b; the dot products of every
          pair of [b, e1..e12] (13 vectors, 78 dots, no self-interaction), in the order TensorFlow
          Recommenders' DotInteraction(self_interaction=False) gives them (its boolean mask of the
          strictly lower triangle of the 13 x 13 Gram matrix, row by row: (1,0), (2,0), (2,1), ...);
          top Dense(256 relu) - Dense(128 relu) - Dense(1) on concat(b, dots) (94) -> logit.
  deepfm: first order: the 12 first-order (x 1) embeddings summed + Dense(1) on numeric; FM:
          Dense(1, no bias) on (sum_i e_i)^2 - sum_i e_i^2 (elementwise, 16 wide); deep:
          Dense(512 relu) - Dense(256 relu) - Dense(1) on concat(numeric, e1..e12) (205);
          logit = first order + FM + deep.

Intra- and inter-op threads --threads. Sigmoid cross-entropy from the logit, mean over the batch;
Keras's Adagrad (as tf_keras_ctr.py: tf.keras.optimizers.Adagrad, the TF 2.11+ optimizer, which
applies IndexedSlices gradients as sparse updates, duplicate ids summed first) lr 0.02, initial
accumulator 1e-6, epsilon 1e-7.
The files are parsed by tf.io.parse_example into memory before timing; an in-memory tf.data pipeline
(shuffled each epoch with seed 42, batch 1024, prefetch) feeds Model.fit. --pipeline gather (the
default) shuffles example indices and gathers each batch from the in-memory tensors in one
vectorized map; --pipeline slices is from_tensor_slices over the dict of (ragged) tensors, shuffled
and batched example by example (the same batches, from the same seed; its per-example work, about
4x gather's on its own, competes with the step for the cores). Timed: the training
loop after the first step (tracing), examples/s over the steps after it. Prints a RESULT line with
examples/s, wall time, test AUC and log loss.
"""
import argparse
import os

import numpy as np

import ctr_data
from tf_common import Timer, fit_after_first_step, log, result

TABLE, DIM, NUMERIC, ONEHOT, BAGS = 100000, 16, 13, 8, 4
SEED = 42


def parse(tf, path):
    """The whole file as {numeric [n, 13] float32, onehot [n, 8] int64, b1..b4 RaggedTensor [n, None]
    int64} and labels [n, 1] float32."""
    spec = {"label": tf.io.FixedLenFeature([], tf.int64)}
    spec.update({"I%d" % i: tf.io.FixedLenFeature([], tf.float32) for i in range(1, NUMERIC + 1)})
    spec.update({"C%d" % i: tf.io.FixedLenFeature([], tf.int64) for i in range(1, ONEHOT + 1)})
    spec.update({"B%d" % i: tf.io.RaggedFeature(tf.int64) for i in range(1, BAGS + 1)})
    parts = [tf.io.parse_example(s, spec) for s in tf.data.TFRecordDataset(path).batch(1 << 16)]
    p = {k: tf.concat([q[k] for q in parts], 0) for k in spec}
    x = {"numeric": tf.stack([p["I%d" % i] for i in range(1, NUMERIC + 1)], 1),
         "onehot": tf.stack([p["C%d" % i] for i in range(1, ONEHOT + 1)], 1)}
    x.update({"b%d" % i: p["B%d" % i] for i in range(1, BAGS + 1)})
    return x, tf.cast(p["label"], tf.float32)[:, None]


def build(tf, keras, name):
    L = keras.layers

    class Tables(L.Layer):
        """One table per sparse feature: [batch, 12, dim], one-hot rows gathered, bags mean-pooled."""

        def __init__(self, dim, **kw):
            super().__init__(**kw)
            # A fresh initializer per table: one unseeded instance reused would repeat its values.
            self.tables = [self.add_weight(name="table_%d" % f, shape=(TABLE, dim),
                                           initializer=keras.initializers.RandomUniform(-0.05, 0.05))
                           for f in range(ONEHOT + BAGS)]

        def call(self, x):
            out = [tf.gather(self.tables[f], x["onehot"][:, f]) for f in range(ONEHOT)]
            for b in range(BAGS):
                ids = x["b%d" % (b + 1)]
                # Fused gather + mean per row; num_segments makes trailing empty bags zero rows too.
                out.append(tf.sparse.segment_mean(self.tables[ONEHOT + b], ids.flat_values, ids.value_rowids(),
                                                  num_segments=ids.nrows(), sparse_gradient=True))
            return tf.stack(out, 1)

    class Dlrm(keras.Model):
        def __init__(self):
            super().__init__(name="dlrm")
            self.emb = Tables(DIM, name="emb")
            self.bottom = [L.Dense(64, activation="relu"), L.Dense(16, activation="relu")]
            self.top = [L.Dense(256, activation="relu"), L.Dense(128, activation="relu"), L.Dense(1)]
            n = 1 + ONEHOT + BAGS
            # DotInteraction's order: boolean mask of the strictly lower triangle, row-major.
            self.pairs = tf.constant([i * n + j for i in range(n) for j in range(i)], tf.int32)

        def call(self, x):
            b = x["numeric"]
            for d in self.bottom:
                b = d(b)
            v = tf.concat([b[:, None, :], self.emb(x)], 1)  # [batch, 13, 16]
            gram = tf.matmul(v, v, transpose_b=True)
            dots = tf.gather(tf.reshape(gram, [-1, v.shape[1] * v.shape[1]]), self.pairs, axis=1)
            h = tf.concat([b, dots], 1)
            for d in self.top:
                h = d(h)
            return h

    class DeepFm(keras.Model):
        def __init__(self):
            super().__init__(name="deepfm")
            self.emb = Tables(DIM, name="fm_emb")
            self.linear_emb = Tables(1, name="linear_emb")
            self.linear_numeric = L.Dense(1)
            self.fm = L.Dense(1, use_bias=False)
            self.deep = [L.Dense(512, activation="relu"), L.Dense(256, activation="relu"), L.Dense(1)]

        def call(self, x):
            e = self.emb(x)  # [batch, 12, 16]
            first = tf.reduce_sum(self.linear_emb(x), 1) + self.linear_numeric(x["numeric"])
            s = tf.reduce_sum(e, 1)
            fm = self.fm(s * s - tf.reduce_sum(e * e, 1))
            h = tf.concat([x["numeric"], tf.reshape(e, [-1, (ONEHOT + BAGS) * DIM])], 1)
            for d in self.deep:
                h = d(h)
            return first + fm + h

    return Dlrm() if name == "dlrm" else DeepFm()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--train", required=True)
    ap.add_argument("--test", required=True)
    ap.add_argument("--model", choices=["dlrm", "deepfm"], required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--pipeline", choices=["gather", "slices"], default="gather")
    args = ap.parse_args()
    wall = Timer()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf
    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    keras = tf.keras
    keras.utils.set_random_seed(SEED)

    t = Timer()
    xtr, ytr = parse(tf, args.train)
    xte, yte = parse(tf, args.test)
    n = int(ytr.shape[0])
    log("parsed %d train / %d test examples in %.1f s" % (n, int(yte.shape[0]), t.seconds()))

    if args.pipeline == "gather":
        # One shuffled index vector per epoch, batched, then every tensor (ragged ones too) gathered
        # by it: a handful of ops per batch instead of per-example slicing and re-batching.
        ds = tf.data.Dataset.range(n).shuffle(n, seed=SEED).batch(args.batch)
        ds = ds.map(lambda i: tf.nest.map_structure(lambda v: tf.gather(v, i), (xtr, ytr)))
    else:
        ds = tf.data.Dataset.from_tensor_slices((xtr, ytr)).shuffle(n, seed=SEED).batch(args.batch)
    ds = ds.prefetch(tf.data.AUTOTUNE)
    steps = -(-n // args.batch)
    model = build(tf, keras, args.model)
    model.compile(keras.optimizers.Adagrad(0.02, initial_accumulator_value=1e-6, epsilon=1e-7),
                  loss=keras.losses.BinaryCrossentropy(from_logits=True))

    # The clock starts when the first step (which traces the train function) ends.
    fit_s, train_s, after = fit_after_first_step(keras, model, ds, args.epochs)
    timed_examples = args.epochs * n - after * args.batch
    test_ds = tf.data.Dataset.from_tensor_slices(xte).batch(8192) if args.pipeline == "slices" else \
        tf.data.Dataset.range(int(yte.shape[0])).batch(8192).map(
            lambda i: tf.nest.map_structure(lambda v: tf.gather(v, i), xte))
    logits = model.predict(test_ds, verbose=0).ravel()
    p = 1.0 / (1.0 + np.exp(-logits.astype(np.float64)))
    y = yte.numpy().ravel()
    ex_s = timed_examples / train_s
    test_auc, test_ll = ctr_data.auc(p, y), ctr_data.logloss(p, y)
    log("%s: %d steps of %d, fit %.1f s (timed %.1f s): %.0f examples/s; test AUC %.4f, log loss %.4f" %
        (args.model, steps * args.epochs, args.batch, fit_s, train_s, ex_s, test_auc, test_ll))
    result(peer="tf_multihot", model=args.model, tensorflow=tf.__version__, threads=args.threads,
           batch=args.batch, pipeline=args.pipeline, steps=steps * args.epochs, fit_seconds=fit_s,
           train_seconds=train_s, train_examples_per_sec=ex_s, test_auc=test_auc, test_logloss=test_ll,
           wall_seconds=wall.seconds())


if __name__ == "__main__":
    main()
