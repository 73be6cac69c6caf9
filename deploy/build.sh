#!/usr/bin/env bash
# Installs dependencies (when missing) and builds pstrain into build/ (binaries in build/bin).
# Extra arguments go to the CMake configure step, e.g. -DPSTRAIN_CUDA=OFF.
set -euo pipefail
cd "$(dirname "$0")/.."
bash deploy/install-deps.sh
# Paths relative to the checkout let ccache reuse objects across clones of the repo.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$(pwd)}"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >"$log" 2>&1; then
  cat "$log" >&2
  exit 1
fi
grep '^-- pstrain:' "$log" >&2 || true  # what was found (e.g. whether CUDA is built)
cmake --build build -j"$(nproc)"
