#!/usr/bin/env bash
# Clang's thread-safety analysis (-Wthread-safety, as errors) over every C++ source of pstrain:
# each lock's ABSL_GUARDED_BY / ABSL_EXCLUSIVE_LOCKS_REQUIRED contract is checked at every use.
# Syntax-only (no code generated), so it costs a fraction of a build: about 3 minutes on 2 cores.
# Needs the generated protobuf headers: it builds the `pstrain_proto` and `pstrain_onnx_proto` targets
# of build/ first (deploy/build.sh configures build/).
#
# Usage: bash deploy/thread-safety.sh [FILE...]   (default: every .cc under common, ps, chief, worker, tests)
#        bash deploy/thread-safety.sh --except-checked-in DIR...
#   the default files less those a sanitizer build in DIR compiled with the analysis
#   (DIR/thread-safety-checked.txt, written by deploy/sanitize-tests.sh); CI runs it so.
set -euo pipefail
cd "$(dirname "$0")/.."

bash deploy/install-deps.sh clang
[ -f build/build.ninja ] || bash deploy/build.sh -DPSTRAIN_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build build --target pstrain_proto pstrain_onnx_proto >/dev/null

FILES=("$@")
CHECKED=()
if [ "${1:-}" = --except-checked-in ]; then
  FILES=()
  for dir in "${@:2}"; do
    [ -f "$dir/thread-safety-checked.txt" ] ||
      { echo "thread-safety: $dir/thread-safety-checked.txt is missing (run deploy/sanitize-tests.sh first)" >&2; exit 2; }
    CHECKED+=("$dir/thread-safety-checked.txt")
  done
fi
if [ ${#FILES[@]} -eq 0 ]; then
  mapfile -t FILES < <(git ls-files 'common/*.cc' 'ps/*.cc' 'chief/*.cc' 'worker/*.cc' 'tests/*.cc' |
                       grep -v -e '^tests/fuzz/' -e '/cuda/' |
                       { if [ ${#CHECKED[@]} -gt 0 ]; then grep -vxF -f <(cat "${CHECKED[@]}"); else cat; fi; })
fi
# The ISA-specific sources are checked once, at the baseline level (the analysis does not depend on it).
FLAGS=(-std=c++17 -fsyntax-only -Wthread-safety -Werror=thread-safety -Wno-unknown-warning-option
       -DPSTRAIN_ISA_NS=isa_baseline -DPSTRAIN_BIN_DIR='"build/bin"' -DPSTRAIN_PS_BINARY='"build/bin/pstrain-ps"'
       -DPSTRAIN_GRAPH_TESTDATA='"tests/common/graph/testdata"'
       -I. -Ibuild -I/usr/include/eigen3
       $(pkg-config --cflags grpc++ protobuf hdf5))
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT
export log
check() {
  local out
  out="$log/$(echo "$1" | tr / _).txt"
  clang++ "${@:2}" "$1" >"$out" 2>&1 || { echo "thread-safety: $1" >&2; cat "$out" >&2; return 1; }
}
export -f check
start=$(date +%s)
if printf '%s\n' "${FILES[@]}" | xargs -P "$(nproc)" -I{} bash -c 'check "$@"' _ {} "${FLAGS[@]}"; then
  echo "thread-safety: ${#FILES[@]} files clean in $(( $(date +%s) - start )) s${CHECKED[*]:+ (the others: by the sanitizer builds)}"
else
  echo "thread-safety: FAILED (above)" >&2
  exit 1
fi
