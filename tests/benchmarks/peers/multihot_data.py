#!/usr/bin/env python3
"""A synthetic multi-hot CTR set, written once as TFRecord files of tf.Example (pstrain and the
TensorFlow peer read them) and as .npz arrays of the same values (the TorchRec peer reads them).

Per example:
  label        int64 0/1, from a planted logistic model (below)
  I1..I13      float, uniform in [0, 1)
  C1..C8       int64, one id each: Zipf(1.1) ranks over [0, 100000), shuffled per field
  B1..B4       int64 list of 0..20 ids (length uniform), each Zipf(1.1) over [0, 100000): bags
logit = sum_f effect_f[C_f] + sum_b mean(effect_b[B_b]) (0 for an empty bag) + w . I - 1.

    python multihot_data.py OUT_DIR [--train 200000] [--test 20000] [--seed 1]

writes OUT_DIR/{train,test}.tfrecord and OUT_DIR/{train,test}.npz. The npz holds numeric float32
[n, 13], onehot int64 [n, 8], labels float32 [n], and per bag b (1..4) bag{b}_lengths int32 [n] and
bag{b}_values int64 [sum of lengths], the example's ids in order.
"""
import argparse
import os

import numpy as np

NUMERIC, ONEHOT, BAGS, TABLE, MAX_BAG = 13, 8, 4, 100000, 20


def zipf_ids(rng, n, perm):
    ranks = np.minimum(rng.zipf(1.1, n), TABLE) - 1
    return perm[ranks]


def make(rng, n, effects, perms, w):
    numeric = rng.random((n, NUMERIC), dtype=np.float32)
    onehot = np.stack([zipf_ids(rng, n, perms[f]) for f in range(ONEHOT)], 1).astype(np.int64)
    logit = numeric.astype(np.float64) @ w - 1.0
    for f in range(ONEHOT):
        logit += effects[f][onehot[:, f]]
    bags = []
    for b in range(BAGS):
        lengths = rng.integers(0, MAX_BAG + 1, n).astype(np.int32)
        values = zipf_ids(rng, int(lengths.sum()), perms[ONEHOT + b]).astype(np.int64)
        sums = np.bincount(np.repeat(np.arange(n), lengths), weights=effects[ONEHOT + b][values], minlength=n)
        logit += sums / np.maximum(lengths, 1)
        bags.append((lengths, values))
    labels = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(np.float32)
    return numeric, onehot, bags, labels


def write(out, split, numeric, onehot, bags, labels):
    import tensorflow as tf
    arrays = dict(numeric=numeric, onehot=onehot, labels=labels)
    starts = []
    for b, (lengths, values) in enumerate(bags):
        arrays["bag%d_lengths" % (b + 1)] = lengths
        arrays["bag%d_values" % (b + 1)] = values
        starts.append(np.concatenate([[0], np.cumsum(lengths)]))
    np.savez(os.path.join(out, split + ".npz"), **arrays)
    with tf.io.TFRecordWriter(os.path.join(out, split + ".tfrecord")) as wr:
        for i in range(len(labels)):
            f = {"label": tf.train.Feature(int64_list=tf.train.Int64List(value=[int(labels[i])]))}
            for j in range(NUMERIC):
                f["I%d" % (j + 1)] = tf.train.Feature(float_list=tf.train.FloatList(value=[float(numeric[i, j])]))
            for j in range(ONEHOT):
                f["C%d" % (j + 1)] = tf.train.Feature(int64_list=tf.train.Int64List(value=[int(onehot[i, j])]))
            for b, (lengths, values) in enumerate(bags):
                ids = values[starts[b][i]:starts[b][i + 1]]
                f["B%d" % (b + 1)] = tf.train.Feature(int64_list=tf.train.Int64List(value=ids.tolist()))
            wr.write(tf.train.Example(features=tf.train.Features(feature=f)).SerializeToString())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--train", type=int, default=200000)
    ap.add_argument("--test", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    os.makedirs(args.out, exist_ok=True)
    rng = np.random.default_rng(args.seed)
    fields = ONEHOT + BAGS
    effects = [rng.normal(0, 0.8, TABLE) for _ in range(fields)]
    perms = [rng.permutation(TABLE) for _ in range(fields)]
    w = rng.normal(0, 0.5, NUMERIC)
    for split, n in (("train", args.train), ("test", args.test)):
        write(args.out, split, *make(rng, n, effects, perms, w))
        print("%s: %d examples -> %s/%s.{tfrecord,npz}" % (split, n, args.out, split), flush=True)


if __name__ == "__main__":
    main()
