#!/usr/bin/env bash
# Installs what the benchmarks against the PyTorch peer need (not needed to build or test pstrain):
# Debian's PyTorch and NumPy, and the OpenMP OpenBLAS the peer's "tuned" setup loads with
# LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp. Idempotent.
#   deploy/install-bench-deps.sh [--python-peers]
# --python-peers: also the pinned virtual environments (PyPI, in the user's cache) of the
# TensorFlow, newest-PyTorch and TorchRec peers and of the checkers: deploy/install-python-peers.sh.
set -euo pipefail

BENCH_PACKAGES=(python3-torch python3-numpy libopenblas0-openmp)
cd "$(dirname "$0")/.."
already=1
for p in "${BENCH_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || already=0
done
bash deploy/install-deps.sh "${BENCH_PACKAGES[@]}"
if [ "${1:-}" = --python-peers ]; then bash deploy/install-python-peers.sh all; fi
[ "$already" = 1 ] && exit 0

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
# Installing OpenBLAS makes it the system libblas.so.3; the peer's "default" rows use the reference
# BLAS, so put that back as the default (the tuned runs select OpenBLAS per process).
if [ -e /usr/lib/x86_64-linux-gnu/blas/libblas.so.3 ]; then
  $SUDO update-alternatives --set libblas.so.3-x86_64-linux-gnu /usr/lib/x86_64-linux-gnu/blas/libblas.so.3 || true
fi
if [ -e /usr/lib/x86_64-linux-gnu/lapack/liblapack.so.3 ]; then
  $SUDO update-alternatives --set liblapack.so.3-x86_64-linux-gnu /usr/lib/x86_64-linux-gnu/lapack/liblapack.so.3 || true
fi

