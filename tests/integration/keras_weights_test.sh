#!/usr/bin/env bash
# pstrain's Keras weight files against real Keras: Keras 3 (on JAX) and tf.keras 2.15 build models
# and save their weights; pstrain's reader reads them, shifts every variable by its own amount and
# writes both layouts (keras_weights_tool); Keras loads pstrain's files with load_weights and every
# weight must equal its saved value + that variable's shift exactly (Keras 3: the .weights.h5 and the legacy .h5 layout; Keras 2:
# the legacy .h5). Skips (77) when the Python environments cannot be installed.
# Usage: keras_weights_test.sh PATH/TO/keras_weights_tool
set -euo pipefail
TOOL=$1
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/integration/pypi_venv.sh
source "$HERE/pypi_venv.sh"
PY3=$(pypi_python keras) || exit 77
PY2=$(pypi_python tf) || exit 77
WORK=$(mktemp -d "${TMPDIR:-/tmp}/pstrain-keras-weights.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
export KERAS_BACKEND=jax TF_CPP_MIN_LOG_LEVEL=3 CUDA_VISIBLE_DEVICES=""

run_flavor() {  # FLAVOR PYTHON
  local flavor=$1 py=$2 dir="$WORK/$1" n=0 json name weights out3
  mkdir -p "$dir"
  timeout 300 "$py" "$HERE/keras_weights_check.py" make "$flavor" "$dir"
  for json in "$dir"/*.json; do
    name=$(basename "$json" .json)
    if [ "$flavor" = keras3 ]; then weights="$dir/$name.weights.h5"; else weights="$dir/$name.h5"; fi
    out3="$dir/$name.pstrain.weights.h5"
    [ "$flavor" = keras3 ] || out3=-  # a Keras 2 model's JSON does not load in Keras 3
    timeout 60 "$TOOL" "$json" "$weights" "$out3" "$dir/$name.pstrain.h5"
    n=$((n + 1))
  done
  [ "$n" -ge 4 ] || { echo "FAIL: $flavor made only $n models" >&2; exit 1; }
  timeout 300 "$py" "$HERE/keras_weights_check.py" check "$flavor" "$dir"
}

run_flavor keras3 "$PY3"
run_flavor keras2 "$PY2"
echo "PASS: Keras 3 and Keras 2 load pstrain's weight files with the expected values"
