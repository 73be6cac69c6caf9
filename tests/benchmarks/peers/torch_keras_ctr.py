#!/usr/bin/env python3
"""PyTorch peer: keras_ctr_models.py's DeepFM and DCN-v2 written in PyTorch, tuned for the CPU, on the
`ctr` job's settings.

    python torch_keras_ctr.py --model deepfm|dcn_v2 --train F --test F [--threads 2] [--batch 1024] [--epochs 1]

The same layers, shapes and initializers as the Keras models (Embedding uniform [-0.05, 0.05], Dense
glorot-uniform kernels and zero biases, Cross kernels truncated normal (stddev 0.05)). Tuning: the 26
tables of a kind live in one nn.Embedding(sparse=True) with per-field row offsets (one gather and one
sparse update per step instead of 26); torch.set_num_threads(--threads); the files are parsed into
tensors and shuffled before timing, so a step slices contiguous rows. Sigmoid cross-entropy from the
logit, mean over the batch; torch.optim.Adagrad lr 0.02, initial accumulator 1e-6, eps 1e-7 (Keras's
update rule), on sparse gradients for the tables (the rows a batch touches) and foreach for the dense
variables. Prints a RESULT line with examples/s (the training loop only), wall time, test AUC and log
loss.
"""
import argparse
import time

import numpy as np
import torch
import torch.nn as nn

import ctr_data
from tf_common import Timer, log, result

TABLE, DIM = 100000, 16
F, N = ctr_data.NUM_CAT, ctr_data.NUM_DENSE


def dense(n_in, n_out, bias=True):
    m = nn.Linear(n_in, n_out, bias=bias)
    nn.init.xavier_uniform_(m.weight)
    if bias:
        nn.init.zeros_(m.bias)
    return m


def table(dim):
    t = nn.Embedding(F * TABLE, dim, sparse=True)
    nn.init.uniform_(t.weight, -0.05, 0.05)
    return t


def tower(width):
    return nn.Sequential(dense(width, 512), nn.ReLU(), dense(512, 256), nn.ReLU(), dense(256, 1))


class Cross(nn.Module):
    """TensorFlow Recommenders' full-rank Cross: x0 * (W x + b) + x."""

    def __init__(self, width):
        super().__init__()
        self.dense = nn.Linear(width, width)
        nn.init.trunc_normal_(self.dense.weight, std=0.05, a=-0.1, b=0.1)
        nn.init.zeros_(self.dense.bias)

    def forward(self, x0, x):
        return x0 * self.dense(x) + x


class DeepFM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb, self.linear_emb = table(DIM), table(1)
        self.linear_numeric, self.fm = dense(N, 1), dense(DIM, 1, bias=False)
        self.tower = tower(N + F * DIM)

    def forward(self, x, c):
        e = self.emb(c)                                           # [B, 26, 16]
        first = self.linear_emb(c).sum(1) + self.linear_numeric(x)
        s = e.sum(1)
        fm = self.fm(s * s - (e * e).sum(1))
        return (first + fm + self.tower(torch.cat([x, e.flatten(1)], 1))).squeeze(1)


class DCNv2(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = table(DIM)
        width = N + F * DIM
        self.cross1, self.cross2 = Cross(width), Cross(width)
        self.tower = tower(width)

    def forward(self, x, c):
        x0 = torch.cat([x, self.emb(c).flatten(1)], 1)
        return self.tower(self.cross2(x0, self.cross1(x0, x0))).squeeze(1)


def load(path):
    x, c, y = ctr_data.load(path, TABLE)
    offsets = np.arange(F, dtype=np.int64) * TABLE  # field f's rows in the fused tables
    return torch.from_numpy(x), torch.from_numpy(c + offsets), torch.from_numpy(y)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", choices=("deepfm", "dcn_v2"), required=True)
    ap.add_argument("--train", required=True)
    ap.add_argument("--test", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--epochs", type=int, default=1)
    args = ap.parse_args()
    wall = Timer()
    torch.set_num_threads(args.threads)
    torch.sparse.check_sparse_tensor_invariants.disable()  # the default, said explicitly: no per-step checks
    torch.manual_seed(42)
    t = Timer()
    xtr, ctr, ytr = load(args.train)
    xte, cte, yte = load(args.test)
    log("parsed %d train / %d test examples in %.1f s" % (len(ytr), len(yte), t.seconds()))

    model = DeepFM() if args.model == "deepfm" else DCNv2()
    sparse = [p for m in model.modules() if isinstance(m, nn.Embedding) for p in m.parameters()]
    ids = {id(p) for p in sparse}
    dense_params = [p for p in model.parameters() if id(p) not in ids]
    hyper = dict(lr=0.02, initial_accumulator_value=1e-6, eps=1e-7)
    opts = [torch.optim.Adagrad(sparse, foreach=False, **hyper), torch.optim.Adagrad(dense_params, foreach=True, **hyper)]
    lossf = nn.BCEWithLogitsLoss()

    train_s, seen, steps = 0.0, 0, 0
    for _ in range(args.epochs):
        perm = torch.randperm(len(ytr))  # shuffled before the clock starts
        xs, cs, ys = xtr[perm].contiguous(), ctr[perm].contiguous(), ytr[perm].contiguous()
        t0 = time.perf_counter()
        for i in range(0, len(ys), args.batch):
            for o in opts:
                o.zero_grad(set_to_none=True)
            loss = lossf(model(xs[i:i + args.batch], cs[i:i + args.batch]), ys[i:i + args.batch])
            loss.backward()
            for o in opts:
                o.step()
            steps += 1
        train_s += time.perf_counter() - t0
        seen += len(ys)

    model.eval()
    with torch.no_grad():
        logits = torch.cat([model(xte[i:i + 8192], cte[i:i + 8192]) for i in range(0, len(yte), 8192)])
    p = torch.sigmoid(logits.double()).numpy()
    ex_s = seen / train_s
    test_auc, test_ll = ctr_data.auc(p, yte.numpy()), ctr_data.logloss(p, yte.numpy())
    log("%s: %d steps of %d in %.1f s: %.0f examples/s; test AUC %.4f, log loss %.4f" %
        (args.model, steps, args.batch, train_s, ex_s, test_auc, test_ll))
    result(peer="torch_keras_ctr", model=args.model, torch=torch.__version__, threads=args.threads, batch=args.batch,
           steps=steps, train_seconds=train_s, train_examples_per_sec=ex_s, test_auc=test_auc, test_logloss=test_ll,
           wall_seconds=wall.seconds())


if __name__ == "__main__":
    main()
