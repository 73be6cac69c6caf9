#!/usr/bin/env bash
# cnn training-step throughput on one GPU: pstrain's CUDA GradientComputer, pstrain's CPU path and
# PyTorch on the same GPU, at batch 64 and 512, with the ratios. Needs a GPU machine, a build with
# CUDA (build/tests/cuda_cnn_benchmark) and, for the PyTorch peer, python3 with a CUDA torch.
# Usage: tests/benchmarks/run_cuda_benchmark.sh [build_dir=build] [steps=200]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="${1:-build}"
steps="${2:-200}"
out="$(mktemp)"
trap 'rm -f "$out"' EXIT

"$build/tests/cuda_cnn_benchmark" "$steps" 64 512 | tee -a "$out"
if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
  python3 "$here/cuda_cnn_pytorch.py" --steps "$steps" --batch 64 512 | tee -a "$out"
  python3 "$here/cuda_cnn_pytorch.py" --steps "$steps" --batch 64 512 --compute-only | tee -a "$out"
else
  echo "PyTorch with CUDA not available: PyTorch figures skipped"
fi

# Ratio pstrain-cuda / pytorch (same step: copies in and out) per batch.
awk '
  /^RESULT/ {
    impl = ""; mode = ""; b = ""; eps = "";
    for (i = 2; i <= NF; ++i) { split($i, kv, "="); v[kv[1]] = kv[2] }
    impl = v["impl"]; mode = v["mode"]; b = v["batch"]; eps = v["examples_per_s"]; delete v
    if (impl == "pstrain-cuda") cuda[b] = eps
    if (impl == "pytorch" && mode == "copies") torch[b] = eps
  }
  END { for (b in cuda) if (b in torch) printf("RATIO batch=%s pstrain-cuda/pytorch=%.2fx\n", b, cuda[b] / torch[b]) }
' "$out"
