#!/usr/bin/env bash
# Builds the unit tests and the binaries with AddressSanitizer + UndefinedBehaviorSanitizer (clang)
# into build-asan/, then runs the unit tests and the bad-input integration tests there: every
# malformed input must end in a clear error, never in a memory error or undefined behaviour.
# Usage: bash deploy/sanitize-tests.sh [ctest -R regex]   (CI runs it with no argument)
set -euo pipefail
cd "$(dirname "$0")/.."
bash deploy/install-deps.sh clang libclang-rt-14-dev strace

# The tests run here: the unit tests of the pieces that parse, size and read what users give, and
# every integration test that feeds the binaries bad input. Training runs are left to the plain
# build: under the sanitizers they cost minutes and exercise no input handling.
UNIT_TARGETS=(common_cluster_spec_test common_partitioner_test common_variable_planner_test common_job_spec_test
              common_tensor_test common_env_test common_bad_input_test ps_bad_input_test chief_bad_input_test
              in_process_cluster_test worker_bad_input_test worker_dataset_test)
BINARIES=(pstrain pstrain-chief pstrain-worker pstrain-ps)
UNIT_SUITES="CheckedMath|JsonLimits|JsonFields|MemoryBudget|ConfinedPath|ReadRegularFile|TaskFlags|JobSpec|ClusterSpec"
UNIT_SUITES+="|Partitioner|VariablePlanner|Tensor|Env|CheckpointBadInput|PsMemoryBudget|TensorChannelBounds|ByteBudget"
UNIT_SUITES+="|ModelDirRuns|CoordinatorMemory|Divergence|DivergenceCheck|DatasetBadInput|Idx|Csv"
TESTS=${1:-"^((${UNIT_SUITES})Test\\.|integration_(bad_input_.*|bad_config|file_access)$)"}

export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$(pwd)}"
flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang \
    -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_C_FLAGS="$flags" \
    -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" -DPSTRAIN_CUDA=OFF -DPSTRAIN_NATIVE=OFF \
    -DPSTRAIN_BUILD_BENCHMARKS=OFF >"$log" 2>&1; then
  cat "$log" >&2
  exit 1
fi
start=$(date +%s)
cmake --build build-asan -j"$(nproc)" --target "${UNIT_TARGETS[@]}" "${BINARIES[@]}"
echo "sanitize-tests: built in $(($(date +%s) - start)) s" >&2

# Leaks are not checked: gRPC keeps its process-wide state until exit by design.
export ASAN_OPTIONS="allocator_may_return_null=1:exitcode=86:detect_leaks=0:abort_on_error=0:halt_on_error=1:strict_string_checks=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:exitcode=86"
start=$(date +%s)
ctest --test-dir build-asan --output-on-failure -j"$(nproc)" --timeout 600 -R "$TESTS"
echo "sanitize-tests: tests ran in $(($(date +%s) - start)) s" >&2
