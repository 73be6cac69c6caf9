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

mkdir -p "$WORK/keras3" "$WORK/keras2"
timeout 300 "$PY3" "$HERE/keras_weights_check.py" keras3 "$WORK/keras3" "$TOOL"
timeout 300 "$PY2" "$HERE/keras_weights_check.py" keras2 "$WORK/keras2" "$TOOL"
echo "PASS: Keras 3 and Keras 2 load pstrain's weight files with the expected values"
