#!/usr/bin/env bash
# Sanitizer runs: builds the unit tests and the binaries with a sanitizer (clang) into
# build-<kind>/, then runs there the tests that feed pstrain bad input: a malformed input must end
# in a clear error, never in a memory error or undefined behaviour.
#
# Usage: bash deploy/sanitize-tests.sh [KIND] [-R CTEST_REGEX]
#   KIND  asan (default): AddressSanitizer + UndefinedBehaviorSanitizer.
#   -R    run only the tests matching CTEST_REGEX (of those built).
# Each kind is one function below setting its compiler flags and run-time options; another
# sanitizer is another such function (and a line in the `case`). deploy/run-tests.sh (CI) runs the
# asan kind: about 5 minutes from cold on 2 cores (4.7 minutes building, 20 s testing).
set -euo pipefail
cd "$(dirname "$0")/.."

KIND=asan
REGEX=""
while [ $# -gt 0 ]; do
  case $1 in
    -R) REGEX=$2; shift ;;
    -R*) REGEX=${1#-R} ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    -*) echo "sanitize-tests: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) KIND=$1 ;;
  esac
  shift
done

# Binaries the integration tests start, and the unit tests (by target and suite) of what parses,
# sizes and reads what users, files and peers give. Training-heavy suites are left to the plain
# build: under the sanitizers they cost minutes and exercise no input handling.
BINARIES=(pstrain pstrain-chief pstrain-worker pstrain-ps)
UNIT_TARGETS=(common_bad_input_test common_job_spec_test common_cluster_spec_test common_partitioner_test
              common_variable_planner_test common_tensor_test common_env_test ps_bad_input_test ps_test
              chief_bad_input_test in_process_cluster_test worker_bad_input_test worker_dataset_test
              worker_criteo_reader_test)
SUITES="CheckedMath|JsonLimits|JsonFields|MemoryBudget|ConfinedPath|ReadRegularFile|TaskFlags|JobSpec|ClusterSpec"
SUITES+="|CheckpointBadInput|PsMemoryBudget|TensorChannelBounds|ByteBudget|ModelDirRuns|CoordinatorMemory"
SUITES+="|DivergenceCheck|DatasetBadInput|Partitioner|VariablePlanner|Tensor|Env|Checkpoint|TableCheckpoint|Checksum"
SUITES+="|PsServer|SparsePs|TensorChannelWire|TensorChannelClient|Channel|InProcessCluster|Divergence|Idx|Csv"
SUITES+="|CriteoLine|CriteoBadLine|CriteoReader"
INTEGRATION="bad_input_.*|bad_config|file_access"
TESTS="^((${SUITES})(Test)?\\.|integration_(${INTEGRATION})$)"

kind_asan() {
  BUILD_DIR=build-asan
  SAN_FLAGS="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
  # -O1 and line tables only: a third of the compile time of -O2 -g, with usable stack traces.
  OPT_FLAGS="-O1 -gline-tables-only"
  LINK_FLAGS="-fsanitize=address,undefined"
  # Leaks are not checked: gRPC keeps its process-wide state until exit by design. A report exits 86.
  # A 32 MiB quarantine of freed memory (default 256): the port test measures the ps's memory, and
  # the buffers its flood frees would otherwise be held as if the ps kept them.
  export ASAN_OPTIONS="allocator_may_return_null=1:exitcode=86:detect_leaks=0:abort_on_error=0:halt_on_error=1"
  ASAN_OPTIONS+=":quarantine_size_mb=32"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:exitcode=86"
}

case $KIND in
  asan) kind_asan ;;
  *) echo "sanitize-tests: unknown kind \"$KIND\" (known: asan)" >&2; exit 2 ;;
esac

[ -n "$REGEX" ] && TESTS=$REGEX

bash deploy/install-deps.sh clang libclang-rt-14-dev strace
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$(pwd)}"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Sanitize -DCMAKE_C_COMPILER=clang \
    -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_CXX_FLAGS="$SAN_FLAGS $OPT_FLAGS" -DCMAKE_C_FLAGS="$SAN_FLAGS $OPT_FLAGS" \
    -DCMAKE_EXE_LINKER_FLAGS="$LINK_FLAGS" -DPSTRAIN_CUDA=OFF -DPSTRAIN_NATIVE=OFF \
    -DPSTRAIN_BUILD_BENCHMARKS=OFF >"$log" 2>&1; then
  cat "$log" >&2
  exit 1
fi
start=$(date +%s)
cmake --build "$BUILD_DIR" -j"$(nproc)" --target "${UNIT_TARGETS[@]}" "${BINARIES[@]}"
built=$(date +%s)
echo "sanitize-tests ($KIND): built in $((built - start)) s" >&2
ctest --test-dir "$BUILD_DIR" --output-on-failure -j"$(nproc)" --timeout 600 -R "$TESTS"
echo "sanitize-tests ($KIND): tests ran in $(($(date +%s) - built)) s" >&2
