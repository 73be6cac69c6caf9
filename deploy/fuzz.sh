#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz) with clang, AddressSanitizer and UndefinedBehaviorSanitizer
# in the asan build dir (build-asan/, configured by deploy/sanitize-tests.sh, whose objects carry the
# fuzzer's coverage), then runs each one for a bounded time from its seed corpus
# (tests/fuzz/corpus/<target>/). A crash, a sanitizer report or a failed check stops that target,
# leaves the input that caused it in build-asan/findings/<target>/ and makes the script exit 1.
#
# Usage: bash deploy/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]
#   SECONDS_PER_TARGET  how long each target runs (default 60; 0 builds them only); CI runs 10.
#   TARGET              only these targets (default: all of them).
# New inputs the fuzzer finds go to build-asan/corpus/<target>/, never into the repo's seeds.
set -euo pipefail
cd "$(dirname "$0")/.."

SECONDS_PER_TARGET=60
if [ $# -gt 0 ] && [[ $1 =~ ^[0-9]+$ ]]; then
  SECONDS_PER_TARGET=$1
  shift
fi
ALL=(tf_config_fuzz job_spec_fuzz idx_reader_fuzz csv_reader_fuzz criteo_parser_fuzz checkpoint_fuzz
     channel_frames_fuzz tfrecord_reader_fuzz dynamic_table_checkpoint_fuzz)
TARGETS=("$@")
[ ${#TARGETS[@]} -eq 0 ] && TARGETS=("${ALL[@]}")

BUILD_DIR=build-asan
bash deploy/sanitize-tests.sh asan --build-only "${TARGETS[@]}"
[ "$SECONDS_PER_TARGET" -eq 0 ] && exit 0

export ASAN_OPTIONS="detect_leaks=0:allocator_may_return_null=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
failed=()
for target in "${TARGETS[@]}"; do
  corpus=$BUILD_DIR/corpus/$target
  findings=$BUILD_DIR/findings/$target
  mkdir -p "$corpus" "$findings"
  # -rss_limit_mb: an input that makes a parser hold more than this is a finding too.
  if "$BUILD_DIR"/fuzz/"$target" -max_total_time="$SECONDS_PER_TARGET" -rss_limit_mb=2048 -timeout=10 \
      -print_final_stats=1 -artifact_prefix="$findings/" "$corpus" "tests/fuzz/corpus/$target" \
      >"$findings/log.txt" 2>&1; then
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$findings/log.txt")
    echo "fuzz: $target: clean, ${runs:-?} inputs in ${SECONDS_PER_TARGET} s"
  else
    echo "fuzz: $target: FAILED (log and input in $findings/):" >&2
    grep -E "ERROR|SUMMARY|Test unit written|deadly signal" "$findings/log.txt" | head -20 >&2
    failed+=("$target")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: failed: ${failed[*]}" >&2
  exit 1
fi
