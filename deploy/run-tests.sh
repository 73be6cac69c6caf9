#!/usr/bin/env bash
# Installs, builds and runs the whole test suite with ctest (unit and integration tests).
set -euo pipefail
cd "$(dirname "$0")/.."
bash deploy/build.sh
ctest --test-dir build --output-on-failure -j"$(nproc)" --timeout 900
