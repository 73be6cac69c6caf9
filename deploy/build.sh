#!/usr/bin/env bash
# Installs dependencies (when missing) and builds pstrain into build/ (binaries in build/bin).
# Extra arguments go to the CMake configure step, e.g. -DPSTRAIN_CUDA=OFF.
set -euo pipefail
cd "$(dirname "$0")/.."
bash deploy/install-deps.sh
# Paths relative to the checkout let ccache reuse objects across clones of the repo.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$(pwd)}"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build build -j"$(nproc)"
