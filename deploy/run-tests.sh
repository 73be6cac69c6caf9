#!/usr/bin/env bash
# Installs, builds and runs the whole test suite with ctest (unit and integration tests), then the
# bad-input tests under AddressSanitizer + UndefinedBehaviorSanitizer (deploy/sanitize-tests.sh,
# about 5 more minutes from cold; bounded at 20). --no-sanitizers skips that second part.
set -euo pipefail
cd "$(dirname "$0")/.."
sanitizers=1
for arg in "$@"; do
  case $arg in
    --no-sanitizers) sanitizers=0 ;;
    *) echo "run-tests: unknown argument $arg (--no-sanitizers skips the sanitizer run)" >&2; exit 2 ;;
  esac
done
bash deploy/build.sh
ctest --test-dir build --output-on-failure -j"$(nproc)" --timeout 900
if [ "$sanitizers" = 1 ]; then
  timeout 1200 bash deploy/sanitize-tests.sh asan
fi
