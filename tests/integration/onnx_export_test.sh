#!/usr/bin/env bash
# pstrain's ONNX export against the real tools: onnx_export_tool writes every Keras fixture with
# predictions (tests/common/graph/testdata, real Keras 2 and Keras 3 models with their weights) and
# every small model of tests/common/graph/onnx_export_cases.h (random weights) as .onnx files, with
# pstrain's own GraphExecutor outputs for their inputs; onnx's full checker must accept each model
# and ONNX Runtime must compute pstrain's outputs (and Keras's saved predictions) to 1e-5. PyPI's
# onnx and onnxruntime come from the cache's 'keras' environment (installed on first use); when
# PyPI cannot be reached the test skips (exit 77), naming the install command.
#   onnx_export_test.sh BIN_DIR
source "$(dirname "$0")/lib.sh" "$1"
ROOT=$(cd "$IT_DIR/../.." && pwd)
TOOL="$BIN/../tests/onnx_export_tool"
[ -x "$TOOL" ] || fail "$TOOL is missing (ninja -C build onnx_export_tool)"
mkdir -p "$WORK/models"
"$TOOL" "$ROOT/tests/common/graph/testdata" "$WORK/models" >"$WORK/tool.log" 2>&1 || fail "onnx_export_tool failed"
n=$(ls "$WORK"/models/*.onnx | wc -l)
[ "$n" -ge 14 ] || fail "onnx_export_tool wrote $n models, expected at least 14"

source "$IT_DIR/pypi_venv.sh"
PY=$(pypi_python keras) || exit 77
"$PY" "$IT_DIR/onnx/check_onnx_models.py" "$WORK/models" >"$WORK/check.log" 2>&1 || fail "ONNX Runtime disagrees"
cat "$WORK/check.log"

# The check must see a wrong number: one of pstrain's outputs changed by 1e-3 fails it.
"$PY" - "$WORK/models/keras2_cnn.json" <<'PY'
import json, sys
path = sys.argv[1]
case = json.load(open(path))
case["pstrain"]["values"][0] += 1e-3
json.dump(case, open(path, "w"))
PY
if "$PY" "$IT_DIR/onnx/check_onnx_models.py" "$WORK/models" >"$WORK/check_changed.log" 2>&1; then
  fail "a changed output was not caught"
fi
grep -q "FAIL keras2_cnn" "$WORK/check_changed.log" || fail "the changed output was not named: $(cat "$WORK/check_changed.log")"
echo "PASS: $n models"
