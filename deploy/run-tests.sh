#!/usr/bin/env bash
# Installs, builds and runs the whole test suite with ctest (unit and integration tests), then the
# bad-input tests under AddressSanitizer + UndefinedBehaviorSanitizer (deploy/sanitize-tests.sh,
# mostly its clang build: 14.6 more minutes from an empty build dir without ccache on 2 shared cores at
# load 5, far less with ccache; bounded at 20), after clang's thread-safety analysis of every source
# (deploy/thread-safety.sh: syntax only, about 3 minutes on 2 loaded cores; bounded at 8).
# --no-sanitizers skips both.
set -euo pipefail
cd "$(dirname "$0")/.."
sanitizers=1
for arg in "$@"; do
  case $arg in
    --no-sanitizers) sanitizers=0 ;;
    *) echo "run-tests: unknown argument $arg (--no-sanitizers skips the sanitizer and thread-safety runs)" >&2; exit 2 ;;
  esac
done
bash deploy/build.sh
ctest --test-dir build --output-on-failure -j"$(nproc)" --timeout 900
if [ "$sanitizers" = 1 ]; then
  timeout 480 bash deploy/thread-safety.sh
  timeout 1200 bash deploy/sanitize-tests.sh asan
fi
