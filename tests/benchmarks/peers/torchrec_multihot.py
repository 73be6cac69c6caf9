#!/usr/bin/env python3
"""TorchRec peer: the DLRM and DeepFM of keras_multihot_models.py on the multi-hot set of
multihot_data.py (its .npz files), in TorchRec on the CPU.

Sparse features: c1..c8 (C1..C8, one id each, pooling SUM) and b1..b4 (B1..B4, bags of 0..20 ids,
pooling MEAN; an empty bag gives zeros), one KeyedJaggedTensor per batch. Every table 100,000 x 16
(DeepFM's first-order tables 100,000 x 1), uniform init in [-0.05, 0.05], in EmbeddingBagCollections
sharded by DistributedModelParallel (one rank, gloo on 127.0.0.1) table-wise onto FBGEMM's CPU
table-batched embedding kernel with the optimizer fused into the backward pass (Adagrad lr 0.02,
eps 1e-7: FBGEMM's exact Adagrad, whose accumulator starts at 0 where pstrain's starts at 1e-6).
Dense layers: xavier-uniform (glorot) kernels, zero biases; their Adagrad is torch.optim.Adagrad
(lr 0.02, initial accumulator 1e-6, eps 1e-7).

  dlrm:   bottom Linear(13, 64) relu, Linear(64, 16) relu on numeric -> b; the dot products of every
          pair i < j of [b, e1..e12] (13 vectors, 78 dots, upper triangle row by row: TensorFlow
          Recommenders' DotInteraction with self_interaction=False); top Linear(94, 256) relu,
          Linear(256, 128) relu, Linear(128, 1) on concat(b, dots) -> logit.
  deepfm: first order: the 12 first-order (x 1) embeddings summed + Linear(13, 1) on numeric; FM:
          Linear(16, 1, bias=False) on (sum_i e_i)^2 - sum_i e_i^2 (elementwise); deep:
          Linear(205, 512) relu, Linear(512, 256) relu, Linear(256, 1) on concat(numeric, e1..e12);
          logit = first order + FM + deep.

Sigmoid cross-entropy from the logit (mean over the batch); batch 1024, one pass over the training
set per epoch in a permuted order (numpy default_rng(epoch)).

    python torchrec_multihot.py --train TRAIN.npz --test TEST.npz --model dlrm|deepfm [--epochs 1]
                                [--threads 2] [--batch 1024]

Loading is not timed; building each batch's KeyedJaggedTensor is. Prints a RESULT line: training
examples/s, wall time, test AUC and log loss.
"""
import argparse
import json
import time

import numpy as np

import ctr_data
import torchrec_common

TABLE, DIM, NUMERIC, ONEHOT, BAGS = 100000, 16, 13, 8, 4
LINEAR_COLS = 4  # DeepFM's first-order tables: see DeepFm
FEATURES = ["c%d" % i for i in range(1, ONEHOT + 1)] + ["b%d" % i for i in range(1, BAGS + 1)]


class Sparse:
    """The 12 sparse features of one .npz as one CSR: every (feature, example) is a run of `values`
    starting at `starts[f, i]`, `lengths[f, i]` long (the one-hot features are runs of 1). A batch's
    KeyedJaggedTensor is then one vectorized gather, feature-major as the KJT wants it."""

    def __init__(self, z):
        onehot = z["onehot"]
        n = onehot.shape[0]
        parts, lengths, base = [], [], 0
        starts = np.empty((len(FEATURES), n), np.int64)
        for f in range(ONEHOT):
            parts.append(onehot[:, f].astype(np.int64))
            lengths.append(np.ones(n, np.int64))
        for b in range(1, BAGS + 1):
            parts.append(z["bag%d_values" % b].astype(np.int64))
            lengths.append(z["bag%d_lengths" % b].astype(np.int64))
        for f, (p, l) in enumerate(zip(parts, lengths)):
            assert l.sum() == len(p), FEATURES[f]
            starts[f] = base + np.cumsum(l) - l
            base += len(p)
        self.values = np.concatenate(parts)
        self.lengths = np.stack(lengths)
        self.starts = starts

    def batch(self, idx):
        """(values int64, lengths int32) of the examples idx, feature by feature."""
        lens = self.lengths[:, idx].reshape(-1)
        starts = self.starts[:, idx].reshape(-1)
        out_starts = np.cumsum(lens) - lens
        # Position k of the output belongs to run r: source = starts[r] + (k - out_starts[r]).
        pos = np.arange(int(out_starts[-1] + lens[-1])) + np.repeat(starts - out_starts, lens)
        return self.values[pos], lens.astype(np.int32)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--train", required=True)
    ap.add_argument("--test", required=True)
    ap.add_argument("--model", required=True, choices=["dlrm", "deepfm"])
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=1024)
    args = ap.parse_args()
    t_wall = time.perf_counter()
    import torch
    import torch.distributed as dist
    import torchrec
    from torchrec.distributed.embeddingbag import EmbeddingBagCollectionSharder
    from torchrec.distributed.model_parallel import DistributedModelParallel
    from torchrec.distributed.planner import EmbeddingShardingPlanner, ParameterConstraints, Topology
    from torchrec.modules.embedding_configs import EmbeddingBagConfig, PoolingType
    from torchrec.modules.embedding_modules import EmbeddingBagCollection
    from torchrec.optim.apply_optimizer_in_backward import apply_optimizer_in_backward
    from torchrec.optim.optimizers import in_backward_optimizer_filter
    from torchrec.sparse.jagged_tensor import KeyedJaggedTensor

    torch.set_num_threads(args.threads)
    torch.manual_seed(42)
    torchrec_common.init_one_rank(dist)

    ztr, zte = np.load(args.train), np.load(args.test)
    xtr, ytr, sptr = ztr["numeric"].astype(np.float32), ztr["labels"].astype(np.float32), Sparse(ztr)
    xte, yte, spte = zte["numeric"].astype(np.float32), zte["labels"].astype(np.float32), Sparse(zte)
    table_names = []

    def ebc(prefix, dim, device):
        tables = [EmbeddingBagConfig(name="%s_%s" % (prefix, f), embedding_dim=dim, num_embeddings=TABLE,
                                     feature_names=[f], pooling=PoolingType.SUM if f[0] == "c" else PoolingType.MEAN,
                                     init_fn=lambda w: torch.nn.init.uniform_(w, -0.05, 0.05))
                  for f in FEATURES]
        table_names.extend(t.name for t in tables)
        return EmbeddingBagCollection(device=device, tables=tables)

    def mlp(widths, device, last_relu):
        layers = []
        for i in range(len(widths) - 1):
            layers.append(torch.nn.Linear(widths[i], widths[i + 1], device=device))
            if last_relu or i < len(widths) - 2:
                layers.append(torch.nn.ReLU())
        return torch.nn.Sequential(*layers)

    def pooled(kt, n):
        # The KeyedTensor's values are [batch, sum of dims] in its keys' order: checked, since the
        # interaction's order and the per-feature view depend on it.
        assert kt.keys() == FEATURES, kt.keys()
        return kt.values().view(-1, len(FEATURES), n)

    class Dlrm(torch.nn.Module):
        def __init__(self, device):
            super().__init__()
            self.ebc = ebc("emb", DIM, device)
            self.bottom = mlp([NUMERIC, 64, DIM], device, last_relu=True)
            self.top = mlp([DIM + 78, 256, 128, 1], device, last_relu=False)
            n = len(FEATURES) + 1
            iu = torch.triu_indices(n, n, offset=1)  # row by row, as DotInteraction's boolean mask
            self.register_buffer("iu0", iu[0], persistent=False)
            self.register_buffer("iu1", iu[1], persistent=False)

        def forward(self, numeric, kjt):
            b = self.bottom(numeric)
            t = torch.cat([b.unsqueeze(1), pooled(self.ebc(kjt), DIM)], dim=1)  # [batch, 13, 16]
            z = torch.bmm(t, t.transpose(1, 2))
            return self.top(torch.cat([b, z[:, self.iu0, self.iu1]], dim=1)).squeeze(1)

    class DeepFm(torch.nn.Module):
        def __init__(self, device):
            super().__init__()
            self.ebc = ebc("fm_emb", DIM, device)
            # The first-order tables are 100,000 x 4 of which only column 0 is read: TorchRec's
            # fused kernels assert a multiple of 4 columns. Columns 1..3 get zero gradients, which
            # Adagrad leaves at their initial values, so the model is that of 1-wide tables.
            self.linear_ebc = ebc("linear_emb", LINEAR_COLS, device)
            self.linear_numeric = torch.nn.Linear(NUMERIC, 1, device=device)
            self.fm = torch.nn.Linear(DIM, 1, bias=False, device=device)
            self.deep = mlp([NUMERIC + len(FEATURES) * DIM, 512, 256, 1], device, last_relu=False)

        def forward(self, numeric, kjt):
            e = pooled(self.ebc(kjt), DIM)  # [batch, 12, 16]
            first = pooled(self.linear_ebc(kjt), LINEAR_COLS)[:, :, 0].sum(1) + self.linear_numeric(numeric).squeeze(1)
            s = e.sum(1)
            fm = self.fm(s * s - (e * e).sum(1)).squeeze(1)
            deep = self.deep(torch.cat([numeric, e.flatten(1)], dim=1)).squeeze(1)
            return first + fm + deep

    model = (Dlrm if args.model == "dlrm" else DeepFm)(torch.device("meta"))
    tables = [m for m in (getattr(model, "ebc", None), getattr(model, "linear_ebc", None)) if m is not None]
    for t in tables:
        apply_optimizer_in_backward(torch.optim.Adagrad, t.parameters(), {"lr": 0.02, "eps": 1e-7})
    # Every table whole on the one rank, in FBGEMM's fused kernel (left to itself the planner may
    # make a one-rank table data-parallel: a dense 100,000-row gradient and update every step).
    constraints = {n: ParameterConstraints(sharding_types=["table_wise"], compute_kernels=["fused"])
                   for n in table_names}
    planner = EmbeddingShardingPlanner(topology=Topology(world_size=1, compute_device="cpu"), constraints=constraints)
    plan = planner.collective_plan(model, [EmbeddingBagCollectionSharder()], dist.GroupMember.WORLD)
    dmp = DistributedModelParallel(module=model, device=torch.device("cpu"), plan=plan)
    print("plan: %s" % sorted({(p.sharding_type, p.compute_kernel) for m in plan.plan.values() for p in m.values()}),
          flush=True)
    for m in dmp.module.modules():
        if isinstance(m, torch.nn.Linear):
            torch.nn.init.xavier_uniform_(m.weight)
            if m.bias is not None:
                torch.nn.init.zeros_(m.bias)
    dense = dict(in_backward_optimizer_filter(dmp.named_parameters()))
    dense_opt = torch.optim.Adagrad(dense.values(), lr=0.02, initial_accumulator_value=1e-6, eps=1e-7)
    bce = torch.nn.BCEWithLogitsLoss()

    def kjt_of(sp, idx):
        values, lengths = sp.batch(idx)
        return KeyedJaggedTensor.from_lengths_sync(keys=FEATURES, values=torch.from_numpy(values),
                                                   lengths=torch.from_numpy(lengths))

    x_all, y_all = torch.from_numpy(xtr), torch.from_numpy(ytr)

    def step(idx):
        logits = dmp(x_all[idx], kjt_of(sptr, idx))
        loss = bce(logits, y_all[idx])
        dense_opt.zero_grad()
        loss.backward()
        dense_opt.step()
        return loss

    steps, train_s = 0, 0.0
    for epoch in range(args.epochs):
        order = np.random.default_rng(epoch).permutation(len(ytr))
        t = time.perf_counter()
        for b in range(0, len(order), args.batch):
            loss = step(order[b:b + args.batch])
            steps += 1
        epoch_s = time.perf_counter() - t
        train_s += epoch_s
        print("epoch %d: %.1f s, %.0f examples/s, last loss %.4f" % (epoch + 1, epoch_s, len(order) / epoch_s,
                                                                     float(loss.detach())), flush=True)
    with torch.no_grad():
        p = torch.cat([torch.sigmoid(dmp(torch.from_numpy(xte[b:b + 8192]),
                                         kjt_of(spte, np.arange(b, min(b + 8192, len(yte))))))
                       for b in range(0, len(yte), 8192)]).numpy()
    examples = args.epochs * len(ytr)
    print("RESULT " + json.dumps(dict(peer="torchrec_multihot", model=args.model, torch=torch.__version__,
                                      torchrec=torchrec.__version__, threads=args.threads, steps=steps,
                                      train_seconds=train_s, train_examples_per_sec=examples / train_s,
                                      test_auc=ctr_data.auc(p, yte), test_logloss=ctr_data.logloss(p, yte),
                                      wall_seconds=time.perf_counter() - t_wall)), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
