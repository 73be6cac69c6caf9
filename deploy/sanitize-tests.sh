#!/usr/bin/env bash
# Sanitizer runs: builds unit tests (and for asan the binaries) with a sanitizer (clang) into
# build-<kind>/, then runs there the tests that kind is for.
#
# Usage: bash deploy/sanitize-tests.sh [KIND] [-R CTEST_REGEX]
#   KIND  asan (default): AddressSanitizer + UndefinedBehaviorSanitizer over the tests that feed
#         pstrain bad input: a malformed input must end in a clear error, never in a memory error
#         or undefined behaviour.
#         tsan: ThreadSanitizer over the unit and in-process tests that run threads against each
#         other (ps store and server, tensor channel with and without TLS, clients, closure queue,
#         worker pool and queue, coordinator over fakes, worker over an in-process ps, metrics).
#   -R    run only the tests matching CTEST_REGEX (of those built).
#   --build-only TARGET...  configure and build only these targets, run nothing (deploy/fuzz.sh
#         builds its libFuzzer targets in build-asan/ this way: the asan kind's objects carry the
#         fuzzer's coverage too, so CI compiles the sources once for both).
# Each kind is one function below setting its build dir, targets, tests, compiler flags and
# run-time options; another sanitizer is another such function (and a line in the `case`).
# deploy/run-checks.sh (CI) runs both kinds. asan: from an empty build dir without ccache, 14.6
# minutes on 2 cores shared at load 5 (13.9 minutes building, 24 s testing) before its objects took the
# fuzzer's coverage; with it and the fuzz targets, 16.5 CPU-minutes (44 min at load 3-16), 36 s
# testing. tsan: from an empty
# build dir and an empty ccache, 21.5 minutes on 2 cores shared at load 7-10 (11 CPU-minutes, so
# about 6 on 2 idle cores), then 33-37 s testing. With ccache's objects a fresh build dir takes far less.
set -euo pipefail
cd "$(dirname "$0")/.."

KIND=asan
REGEX=""
ONLY=()
while [ $# -gt 0 ]; do
  case $1 in
    --build-only) shift; ONLY=("$@"); break ;;
    -R) REGEX=$2; shift ;;
    -R*) REGEX=${1#-R} ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    -*) echo "sanitize-tests: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) KIND=$1 ;;
  esac
  shift
done

kind_asan() {
  BUILD_DIR=build-asan
  # Binaries the integration tests start, and the unit tests (by target and suite) of what parses,
  # sizes and reads what users, files and peers give. Training-heavy suites are left to the plain
  # build: under the sanitizers they cost minutes and exercise no input handling.
  BINARIES=(pstrain pstrain-chief pstrain-worker pstrain-ps)
  UNIT_TARGETS=(common_bad_input_test common_job_spec_test common_cluster_spec_test common_partitioner_test
                common_variable_planner_test common_tensor_test common_env_test ps_bad_input_test ps_store_test ps_transport_test ps_client_test
                chief_bad_input_test in_process_cluster_test worker_bad_input_test worker_dataset_test
                worker_criteo_reader_test ps_replication_test common_grpc_status_test
                common_keras_json_test common_keras_weights_test worker_graph_executor_test common_slurm_cluster_test
                common_onnx_export_test common_job_spec_keras_test worker_graph_gradient_computer_test
                worker_tfrecord_reader_test worker_ctr_graph_gradient_computer_test ps_dynamic_table_test
                worker_tf_example_bags_test worker_ctr_bag_model_test worker_dynamic_exchange_test
                worker_dynamic_table_updater_test chief_saved_dynamic_table_test chief_dynamic_tables_test
                keras_dynamic_export_test common_npy_int64_test)
  SUITES="CheckedMath|JsonLimits|JsonFields|MemoryBudget|ConfinedPath|ReadRegularFile|TaskFlags|JobSpec|ClusterSpec"
  SUITES+="|SlurmHostlist|SlurmTasksPerNode|SlurmTasksFlag|SlurmCluster|SlurmBootstrap"
  SUITES+="|DynamicPsServer|DynamicPsCheckpoint|GrpcDynamicTable"
  SUITES+="|CheckpointBadInput|PsMemoryBudget|TensorChannelBounds|ByteBudget|ModelDirRuns|CoordinatorMemory"
  SUITES+="|DivergenceCheck|DatasetBadInput|Partitioner|VariablePlanner|Tensor|Env|Checkpoint|TableCheckpoint|Checksum"
  SUITES+="|PsServer|SparsePs|TensorChannelWire|TensorChannelClient|Channel|InProcessCluster|Divergence|Idx|Csv"
  SUITES+="|CriteoLine|CriteoBadLine|CriteoReader|Replication|EveryOptimizer/ReplicaBits|GrpcStatus|CtrSplitFiles"
  SUITES+="|KerasJson|Flavors/KerasJson|KerasJsonRefusal|Fixtures/KerasJsonRefusal|GraphExecutor|GraphLoss"
  SUITES+="|Fixtures/KerasFixture|OnnxExport|KerasWeights|JobSpecKeras|GraphGradientComputer|CtrGraphGradientComputer"
  SUITES+="|Crc32c|TfRecordFraming|TfRecordBadInput|TfExampleCtr|NonTrainableShard|DynamicTableCheckpoint|InitialWeights"
  SUITES+="|TfExampleBags|CtrBagModel|CtrBagModelRegression|Combiners/CtrBagModel|IdDeduperDynamic"
  SUITES+="|DynamicTableUpdater|SavedDynamicTable|DynamicIndex|DynamicCheckpoint|KerasDynamicExport|SetEmbeddingInputDims"
  SUITES+="|NpyInt64|DynamicInitialWeights"
  INTEGRATION="bad_input_.*|bad_config|file_access|model_dir_owner"
  TESTS="^((${SUITES})(Test)?\\.|integration_(${INTEGRATION})$)"
  # fuzzer-no-link: the libFuzzer targets (tests/fuzz, deploy/fuzz.sh) are built here too; for the
  # tests it only adds coverage counters, which the ASan run-time takes.
  SAN_FLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
  # -O1 and line tables only: a third of the compile time of -O2 -g, with usable stack traces.
  OPT_FLAGS="-O1 -gline-tables-only"
  LINK_FLAGS="-fsanitize=address,undefined"
  # Leaks are not checked: gRPC keeps its process-wide state until exit by design. A report exits 86.
  # A 32 MiB quarantine of freed memory (default 256): the port test measures the ps's memory, and
  # the buffers its flood frees would otherwise be held as if the ps kept them.
  export ASAN_OPTIONS="allocator_may_return_null=1:exitcode=86:detect_leaks=0:abort_on_error=0:halt_on_error=1"
  ASAN_OPTIONS+=":quarantine_size_mb=32"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:exitcode=86"
  EXTRA_CMAKE=(-DPSTRAIN_FUZZ=ON)
}

kind_tsan() {
  BUILD_DIR=build-tsan
  BINARIES=()
  UNIT_TARGETS=(ps_store_test ps_transport_test ps_client_test closure_queue_test coordinator_test worker_thread_pool_test worker_logic_test
                worker_with_ps_test worker_sparse_exchange_test worker_dynamic_exchange_test common_metrics_test in_process_cluster_test
                job_shutdown_test ps_replication_test ps_dynamic_table_test worker_ctr_graph_gradient_computer_test)
  TESTS=""  # every test of those targets (their suites, listed once they are built)
  # gRPC's header code is compiled uninstrumented, as its libraries are (reason in the file).
  SAN_FLAGS="-fsanitize=thread -fsanitize-ignorelist=$(pwd)/deploy/tsan-ignorelist.txt -fno-omit-frame-pointer"
  OPT_FLAGS="-O1 -gline-tables-only"
  LINK_FLAGS="-fsanitize=thread"
  EXTRA_CMAKE=(-DPSTRAIN_TSAN_ABSL=ON)
  # Every race of a test is reported (not only the first); any report fails the test (exit 86).
  # The suppressions are false positives inside Debian's uninstrumented libraries (gRPC, OpenSSL,
  # protobuf, abseil's Status, Cord and time zones), each with its reason in the file; abseil's
  # locks are made visible by tests/test_util/tsan_absl_sync.cc instead.
  export TSAN_OPTIONS="halt_on_error=0:exitcode=86:second_deadlock_stack=1:suppressions=$(pwd)/deploy/tsan-suppressions.txt"
}

EXTRA_CMAKE=()
case $KIND in
  asan) kind_asan ;;
  tsan) kind_tsan ;;
  *) echo "sanitize-tests: unknown kind \"$KIND\" (known: asan, tsan)" >&2; exit 2 ;;
esac

[ -n "$REGEX" ] && TESTS=$REGEX
# Both kinds compile with clang's thread-safety analysis as errors, so deploy/thread-safety.sh need not
# parse again the sources these builds compiled (listed in $BUILD_DIR/thread-safety-checked.txt).
SAN_FLAGS+=" -Wthread-safety -Werror=thread-safety"

bash deploy/install-deps.sh clang libclang-rt-14-dev strace
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$(pwd)}"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Sanitize -DCMAKE_C_COMPILER=clang \
    -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_CXX_FLAGS="$SAN_FLAGS $OPT_FLAGS" -DCMAKE_C_FLAGS="$SAN_FLAGS $OPT_FLAGS" \
    -DCMAKE_EXE_LINKER_FLAGS="$LINK_FLAGS" -DPSTRAIN_CUDA=OFF -DPSTRAIN_NATIVE=OFF \
    -DPSTRAIN_BUILD_BENCHMARKS=OFF "${EXTRA_CMAKE[@]}" >"$log" 2>&1; then
  cat "$log" >&2
  exit 1
fi
if [ ${#ONLY[@]} -gt 0 ]; then
  cmake --build "$BUILD_DIR" -j"$(nproc)" --target "${ONLY[@]}"
  exit 0
fi
start=$(date +%s)
cmake --build "$BUILD_DIR" -j"$(nproc)" --target "${UNIT_TARGETS[@]}" ${BINARIES[@]+"${BINARIES[@]}"}
built=$(date +%s)
# The sources compiled for these targets, relative to the repository (ninja keeps each object current
# with its command line, so every one was compiled with the flags above).
ninja -C "$BUILD_DIR" -t commands "${UNIT_TARGETS[@]}" ${BINARIES[@]+"${BINARIES[@]}"} |
  grep -o ' -c [^ ]*\.cc' | sed "s| -c ||; s|^$(pwd)/||" | sort -u >"$BUILD_DIR/thread-safety-checked.txt"
if [ -z "$TESTS" ]; then
  suites=$(for t in "${UNIT_TARGETS[@]}"; do "$BUILD_DIR/tests/$t" --gtest_list_tests | sed -n 's/^\([A-Za-z0-9_/]*\)\.$/\1/p'; done |
           sort -u | paste -sd'|')
  TESTS="^(${suites})\\."
fi
echo "sanitize-tests ($KIND): built in $((built - start)) s" >&2
ctest --test-dir "$BUILD_DIR" --output-on-failure -j"$(nproc)" --timeout 600 ${TESTS:+-R "$TESTS"}
echo "sanitize-tests ($KIND): tests ran in $(($(date +%s) - built)) s" >&2
