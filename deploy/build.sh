#!/usr/bin/env bash
# Installs dependencies (when missing) and builds pstrain into build/ (binaries in build/bin).
# Extra arguments go to the CMake configure step, e.g. -DPSTRAIN_CUDA=OFF.
set -euo pipefail
cd "$(dirname "$0")/.."
bash deploy/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build build -j"$(nproc)"
