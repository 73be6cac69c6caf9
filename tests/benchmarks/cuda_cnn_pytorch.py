#!/usr/bin/env python3
"""PyTorch peer of cuda_cnn_benchmark: the same `cnn` preset step on the same GPU.

Model (Keras layout in pstrain, PyTorch's own here; the arithmetic is the same):
  conv 3x3 x32 relu -> maxpool 2 -> conv 3x3 x64 relu -> maxpool 2 -> flatten -> dense 64 relu -> dense 10
Loss: softmax cross-entropy summed over the batch times 1/batch (pstrain's loss scaling).

One step matches what pstrain's GradientComputer does per batch (default, --copies):
  parameters host -> device, inputs host -> device, forward, backward, gradients device -> pinned host.
--compute-only keeps everything on the GPU (forward + backward only) for a second view.
FP32 throughout (TF32 off for matmul and cuDNN), as pstrain's cuBLAS path; --tf32 turns it on.

Prints: RESULT impl=pytorch device=cuda:0 batch=B examples_per_s=X ms_per_step=Y
Usage: python3 cuda_cnn_pytorch.py [--steps 200] [--batch 64 512] [--compute-only] [--tf32]
"""
import argparse
import time

import torch
import torch.nn as nn


def make_model():
    return nn.Sequential(
        nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * 5 * 5, 64), nn.ReLU(), nn.Linear(64, 10))


def run(batch, steps, copies, device):
    torch.manual_seed(1)
    model = make_model().to(device)
    host_params = [p.detach().cpu().clone() for p in model.parameters()]  # pageable, as pstrain's tensors
    host_grads = [torch.empty_like(p).pin_memory() for p in host_params]
    x_host = torch.rand(batch, 1, 28, 28) * 0.2
    y_host = torch.arange(batch) % 10
    x, y = x_host.to(device), y_host.to(device)
    loss_fn = nn.CrossEntropyLoss(reduction="sum")

    def step():
        nonlocal x, y
        if copies:
            with torch.no_grad():
                for p, h in zip(model.parameters(), host_params):
                    p.copy_(h, non_blocking=False)
            x, y = x_host.to(device), y_host.to(device)
        model.zero_grad(set_to_none=False)
        loss = loss_fn(model(x), y) * (1.0 / batch)
        loss.backward()
        if copies:
            for p, h in zip(model.parameters(), host_grads):
                h.copy_(p.grad, non_blocking=True)
        torch.cuda.synchronize(device)

    for _ in range(10):
        step()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    seconds = time.perf_counter() - start
    return steps * batch / seconds


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--batch", type=int, nargs="+", default=[64, 512])
    ap.add_argument("--compute-only", action="store_true")
    ap.add_argument("--tf32", action="store_true")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA device: PyTorch sees no GPU; nothing measured")
        return
    torch.backends.cuda.matmul.allow_tf32 = args.tf32
    torch.backends.cudnn.allow_tf32 = args.tf32
    torch.backends.cudnn.benchmark = True
    device = torch.device("cuda:0")
    for b in args.batch:
        eps = run(b, args.steps, not args.compute_only, device)
        mode = "compute-only" if args.compute_only else "copies"
        print(f"RESULT impl=pytorch device=cuda:0 mode={mode} batch={b} examples_per_s={eps:.0f} "
              f"ms_per_step={1e3 * b / eps:.3f}")


if __name__ == "__main__":
    main()
