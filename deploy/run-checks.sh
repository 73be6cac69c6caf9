#!/usr/bin/env bash
# The slow checks, after deploy/run-tests.sh (CI runs both; each step can also run on its own):
#   - the bad-input tests under AddressSanitizer + UndefinedBehaviorSanitizer
#     (deploy/sanitize-tests.sh asan, its own clang build in build-asan/; bounded at 30 min),
#   - the concurrency tests under ThreadSanitizer (deploy/sanitize-tests.sh tsan, build-tsan/; bounded at 30 min),
#   - clang's thread-safety analysis of every source (as errors): the two sanitizer builds compile
#     with it, and deploy/thread-safety.sh parses the sources they did not compile (syntax only;
#     the whole tree takes 3.5-4 min on 2 idle cores; bounded at 15 min),
#   - every libFuzzer target for FUZZ_SECONDS (10) from its corpus (deploy/fuzz.sh, built in build-asan/;
#     bounded at 12 min).
# Cold (empty build dirs and ccache) the sanitizer builds cost about 17 minutes on 2 idle cores, far
# less with ccache's objects.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -gt 0 ]; then
  echo "run-checks: takes no arguments (run a single step with its own script, listed in this file's header)" >&2
  exit 2
fi
timeout 1800 bash deploy/sanitize-tests.sh asan
timeout 1800 bash deploy/sanitize-tests.sh tsan
timeout 900 bash deploy/thread-safety.sh --except-checked-in build-asan build-tsan
timeout 720 bash deploy/fuzz.sh "${FUZZ_SECONDS:-10}"
