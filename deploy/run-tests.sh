#!/usr/bin/env bash
# The test command: installs what is missing, builds (a no-op after the demo has built), then runs
# every unit and integration test with ctest. About 7-10 minutes on 2 idle cores after the build.
# The slower checks (clang's thread-safety analysis, the sanitizer runs, the fuzzers) are
# deploy/run-checks.sh; CI (.ci/run) runs this, then that.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -gt 0 ]; then
  echo "run-tests: takes no arguments (the thread-safety, sanitizer and fuzzing runs are deploy/run-checks.sh)" >&2
  exit 2
fi
bash deploy/build.sh
# The Python environments whose real tools check pstrain's files (TensorBoard, Keras, ONNX Runtime,
# TensorFlow), installed once before the tests that use them; offline, those tests skip.
timeout 1500 bash deploy/install-python-peers.sh tools keras tf >/dev/null ||
  echo "run-tests: the Python environments could not be installed (is PyPI reachable?); the tests that use them skip" >&2
start=$(date +%s)
ctest --test-dir build --output-on-failure -j"$(nproc)" --timeout 900
echo "run-tests: ctest took $(( $(date +%s) - start )) s" >&2
