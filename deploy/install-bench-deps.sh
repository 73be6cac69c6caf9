#!/usr/bin/env bash
# Installs what the benchmarks against the PyTorch peer need (not needed to build or test pstrain):
# Debian's PyTorch and NumPy, and the OpenMP OpenBLAS the peer's "tuned" setup loads with
# LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp. Idempotent.
set -euo pipefail

PACKAGES=(python3-torch python3-numpy libopenblas0-openmp dataset-fashion-mnist)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-bench-deps: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  SUDO="sudo"
fi
echo "install-bench-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q >/dev/null
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
# Installing OpenBLAS makes it the system libblas.so.3; the peer's "default" rows use the reference
# BLAS, so put that back as the default (the tuned runs select OpenBLAS per process).
if [ -e /usr/lib/x86_64-linux-gnu/blas/libblas.so.3 ]; then
  $SUDO update-alternatives --set libblas.so.3-x86_64-linux-gnu /usr/lib/x86_64-linux-gnu/blas/libblas.so.3 || true
fi
if [ -e /usr/lib/x86_64-linux-gnu/lapack/liblapack.so.3 ]; then
  $SUDO update-alternatives --set liblapack.so.3-x86_64-linux-gnu /usr/lib/x86_64-linux-gnu/lapack/liblapack.so.3 || true
fi
