#!/usr/bin/env python3
"""TorchRec peer: pstrain's `ctr` preset in TorchRec on the CPU: an EmbeddingBagCollection of 26
tables (100,000 x 16, one id per bag, uniform init in [-0.05, 0.05]) sharded by
DistributedModelParallel (one rank, gloo on 127.0.0.1) onto FBGEMM's CPU table-batched embedding
kernel with the optimizer fused into the backward pass (Adagrad lr 0.02, eps 1e-7: FBGEMM's exact
Adagrad, whose accumulator starts at 0 where the preset's starts at 1e-6), concatenated with the 13
numeric inputs, Dense 512 relu, Dense 256 relu, Dense 1 (glorot kernels, zero biases), sigmoid
cross-entropy (mean over the batch); the dense layers' Adagrad as torch.optim.Adagrad (initial
accumulator 1e-6, eps 1e-7); batch 1024, one pass over the training file per epoch, reshuffled.

    python torchrec_ctr.py --train F --test F [--epochs 1] [--threads 2]

Parsing is not timed. Prints a RESULT line: training examples/s, wall time, test AUC and log loss.
"""
import argparse
import time

import numpy as np

import ctr_data
import torchrec_common

TABLE, DIM = 100000, 16


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--train", required=True)
    ap.add_argument("--test", required=True)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--profile", type=int, default=0, help="profile this many steps (after 5) and print the top ops")
    args = ap.parse_args()
    t_wall = time.perf_counter()
    import torch
    import torch.distributed as dist
    import torchrec
    from torchrec.distributed.model_parallel import DistributedModelParallel
    from torchrec.modules.embedding_configs import EmbeddingBagConfig, PoolingType
    from torchrec.modules.embedding_modules import EmbeddingBagCollection
    from torchrec.optim.apply_optimizer_in_backward import apply_optimizer_in_backward
    from torchrec.optim.optimizers import in_backward_optimizer_filter
    from torchrec.sparse.jagged_tensor import KeyedJaggedTensor

    torch.set_num_threads(args.threads)
    torch.manual_seed(42)
    torchrec_common.init_one_rank(dist)

    xtr, ctr, ytr = ctr_data.load(args.train)
    xte, cte, yte = ctr_data.load(args.test)
    keys = ["f%d" % i for i in range(ctr_data.NUM_CAT)]

    class Ctr(torch.nn.Module):
        def __init__(self, device):
            super().__init__()
            self.ebc = EmbeddingBagCollection(device=device, tables=[
                EmbeddingBagConfig(name="t%d" % i, embedding_dim=DIM, num_embeddings=TABLE, feature_names=[k],
                                   pooling=PoolingType.SUM, init_fn=lambda w: torch.nn.init.uniform_(w, -0.05, 0.05))
                for i, k in enumerate(keys)])
            layers, width = [], ctr_data.NUM_CAT * DIM + ctr_data.NUM_DENSE
            for h in (512, 256):
                layers += [torch.nn.Linear(width, h, device=device), torch.nn.ReLU()]
                width = h
            layers.append(torch.nn.Linear(width, 1, device=device))
            self.mlp = torch.nn.Sequential(*layers)

        def forward(self, numeric, kjt):
            emb = self.ebc(kjt).values()
            return self.mlp(torch.cat([emb, numeric], dim=1)).squeeze(1)

    model = Ctr(torch.device("meta"))
    apply_optimizer_in_backward(torch.optim.Adagrad, model.ebc.parameters(), {"lr": 0.02, "eps": 1e-7})
    # Every table whole on the one rank, in FBGEMM's fused kernel (left to itself the planner may
    # make a one-rank table data-parallel: a dense 100,000-row gradient and update every step).
    from torchrec.distributed.embeddingbag import EmbeddingBagCollectionSharder
    from torchrec.distributed.planner import EmbeddingShardingPlanner, ParameterConstraints, Topology
    constraints = {"t%d" % i: ParameterConstraints(sharding_types=["table_wise"], compute_kernels=["fused"])
                   for i in range(len(keys))}
    planner = EmbeddingShardingPlanner(topology=Topology(world_size=1, compute_device="cpu"), constraints=constraints)
    plan = planner.collective_plan(model, [EmbeddingBagCollectionSharder()], dist.GroupMember.WORLD)
    dmp = DistributedModelParallel(module=model, device=torch.device("cpu"), plan=plan)
    print("plan: %s" % sorted({(p.sharding_type, p.compute_kernel) for m in plan.plan.values() for p in m.values()}),
          flush=True)
    for m in dmp.module.mlp:
        if isinstance(m, torch.nn.Linear):
            torch.nn.init.xavier_uniform_(m.weight)
            torch.nn.init.zeros_(m.bias)
    dense = dict(in_backward_optimizer_filter(dmp.named_parameters()))
    dense_opt = torch.optim.Adagrad(dense.values(), lr=0.02, initial_accumulator_value=1e-6, eps=1e-7)
    bce = torch.nn.BCEWithLogitsLoss()

    def kjt_of(ids):
        n = ids.shape[0]
        return KeyedJaggedTensor.from_lengths_sync(
            keys=keys, values=torch.from_numpy(np.ascontiguousarray(ids.T).reshape(-1)),
            lengths=torch.ones(n * len(keys), dtype=torch.int32))

    x_all, y_all = torch.from_numpy(xtr), torch.from_numpy(ytr)

    def step(idx):
        logits = dmp(x_all[idx], kjt_of(ctr[idx]))
        loss = bce(logits, y_all[idx])
        dense_opt.zero_grad()
        loss.backward()
        dense_opt.step()
        return loss

    if args.profile:
        from torch.profiler import ProfilerActivity, profile
        for i in range(5):
            step(np.arange(i * args.batch, (i + 1) * args.batch))
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            for i in range(5, 5 + args.profile):
                step(np.arange(i * args.batch, (i + 1) * args.batch))
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=15))
        return
    steps, train_s = 0, 0.0
    for epoch in range(args.epochs):
        order = np.random.default_rng(epoch).permutation(len(ytr))
        t = time.perf_counter()
        for b in range(0, len(order), args.batch):
            loss = step(order[b:b + args.batch])
            steps += 1
        train_s += time.perf_counter() - t
        print("epoch %d: %.1f s, %.0f examples/s, last loss %.4f" % (epoch + 1, train_s, len(order) / train_s,
                                                                     float(loss.detach())), flush=True)
    with torch.no_grad():
        p = torch.cat([torch.sigmoid(dmp(torch.from_numpy(xte[b:b + 8192]), kjt_of(cte[b:b + 8192])))
                       for b in range(0, len(yte), 8192)]).numpy()
    examples = args.epochs * len(ytr)
    import json
    print("RESULT " + json.dumps(dict(peer="torchrec_ctr", torch=torch.__version__, torchrec=torchrec.__version__,
                                      threads=args.threads, steps=steps, train_seconds=train_s,
                                      train_examples_per_sec=examples / train_s, test_auc=ctr_data.auc(p, yte),
                                      test_logloss=ctr_data.logloss(p, yte),
                                      wall_seconds=time.perf_counter() - t_wall)), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
