"""Criteo-layout TSV files (`label \t I1..I13 \t C1..C26`, as `pstrain datagen ctr` writes them) read
the way pstrain's `ctr` preset and the PyTorch peer read them: numeric log(1 + max(x, 0)) (empty: 0),
categorical hex ids modulo the table size (empty: 0). Shared by the TensorFlow and TorchRec CTR
peers, with an exact AUC (ties averaged) and the log loss."""
import numpy as np

NUM_DENSE, NUM_CAT = 13, 26


def load(path, table_size=100000):
    """(numeric float32 [n, 13], ids int64 [n, 26], labels float32 [n])."""
    labels, dense, cats = [], [], []
    with open(path) as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            labels.append(float(parts[0]))
            dense.append([max(int(x), 0) if x else 0 for x in parts[1:1 + NUM_DENSE]])
            cats.append([int(x, 16) % table_size if x else 0 for x in parts[1 + NUM_DENSE:]])
    return (np.log1p(np.asarray(dense, np.float32)), np.asarray(cats, np.int64), np.asarray(labels, np.float32))


def auc(p, y):
    p, y = np.asarray(p, np.float64), np.asarray(y)
    order = np.argsort(p, kind="mergesort")
    sp = p[order]
    _, start, counts = np.unique(sp, return_index=True, return_counts=True)
    ranks = np.empty(len(p))
    for s, c in zip(start, counts):
        ranks[s:s + c] = s + (c + 1) / 2.0
    r = np.empty(len(p))
    r[order] = ranks
    pos = y > 0.5
    n_pos, n_neg = pos.sum(), (~pos).sum()
    return float((r[pos].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def logloss(p, y):
    p = np.clip(np.asarray(p, np.float64), 1e-7, 1 - 1e-7)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))
