#!/usr/bin/env bash
# Installs what the benchmarks' PyTorch peers need (Debian packages only): python3-torch,
# python3-numpy and the OpenMP OpenBLAS used by their "tuned" setup through LD_LIBRARY_PATH.
# Keeps the reference BLAS as the system default, as on the machine the peers were measured on.
# Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
bash deploy/install-deps.sh python3-torch python3-numpy libopenblas0-openmp
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
if [ -e /usr/lib/x86_64-linux-gnu/blas/libblas.so.3 ]; then
  $SUDO update-alternatives --set libblas.so.3-x86_64-linux-gnu /usr/lib/x86_64-linux-gnu/blas/libblas.so.3 >/dev/null 2>&1 || true
  $SUDO update-alternatives --set liblapack.so.3-x86_64-linux-gnu /usr/lib/x86_64-linux-gnu/lapack/liblapack.so.3 >/dev/null 2>&1 || true
fi
