#!/usr/bin/env bash
# CI: installs, builds and runs the whole test suite with ctest (unit and integration tests), then
#   - clang's thread-safety analysis of every source (deploy/thread-safety.sh: syntax only; 3.5-4 min on 2
#     idle cores, 7 while a build shares them; bounded at 15 min),
#   - the bad-input tests under AddressSanitizer + UndefinedBehaviorSanitizer
#     (deploy/sanitize-tests.sh asan, its own clang build in build-asan/; bounded at 30 min),
#   - the concurrency tests under ThreadSanitizer (deploy/sanitize-tests.sh tsan, build-tsan/; bounded at 30 min),
#   - every libFuzzer target for FUZZ_SECONDS (10) from its corpus (deploy/fuzz.sh, built in build-asan/; bounded at 12 min).
# Cold costs (empty build dirs and ccache), measured on 2 shared cores: tsan 11 CPU-minutes (21.5 min at
# load 7-10), asan with the fuzz targets 16.5 CPU-minutes (44 min at load 3-16), thread-safety about 6;
# on 2 idle cores that is about 17 minutes besides the Release build and ctest, so the whole run is
# about 30 minutes or more there, and well past it on loaded cores. With ccache's objects each takes far less.
# --no-sanitizers skips all but the build and ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
sanitizers=1
for arg in "$@"; do
  case $arg in
    --no-sanitizers) sanitizers=0 ;;
    *) echo "run-tests: unknown argument $arg (--no-sanitizers skips the sanitizer, fuzzing and thread-safety runs)" >&2; exit 2 ;;
  esac
done
bash deploy/build.sh
ctest --test-dir build --output-on-failure -j"$(nproc)" --timeout 900
if [ "$sanitizers" = 1 ]; then
  timeout 900 bash deploy/thread-safety.sh
  timeout 1800 bash deploy/sanitize-tests.sh asan
  timeout 1800 bash deploy/sanitize-tests.sh tsan
  timeout 720 bash deploy/fuzz.sh "${FUZZ_SECONDS:-10}"
fi
