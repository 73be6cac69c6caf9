"""Checks pstrain's ONNX export with the real tools: for every CASE.onnx and CASE.json in a folder
(written by onnx_export_tool), onnx's full checker (with shape inference) must accept the model,
and ONNX Runtime (with and without its graph rewrites) must compute from the case's inputs what
pstrain's executor computed (and Keras, when the case has Keras's predictions), to 1e-5 absolute
plus 1e-5 relative, and from the first example alone the first row.

  check_onnx_models.py DIR
Exit 0 when every model passes; 1 naming every model and element that does not.
"""
import json
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort

TOL = 1e-5


def compare(what, got, want):
    want_values = np.asarray(want["values"], dtype=np.float64).reshape(want["shape"])
    if list(got.shape) != list(want_values.shape):
        return [f"{what}: shape {list(got.shape)}, expected {list(want_values.shape)}"]
    bad = np.abs(got.astype(np.float64) - want_values) > TOL + TOL * np.abs(want_values)
    if not bad.any():
        return []
    idx = np.argwhere(bad)[:5]
    return [f"{what}: {int(bad.sum())} of {bad.size} values differ, e.g. at {tuple(int(v) for v in i)}: "
            f"onnxruntime {got[tuple(i)]!r} vs {want_values[tuple(i)]!r}" for i in idx]


def check(directory, name):
    path = os.path.join(directory, name + ".onnx")
    model = onnx.load(path)
    onnx.checker.check_model(model, full_check=True)
    with open(os.path.join(directory, name + ".json")) as f:
        case = json.load(f)
    feeds = {}
    for key, value in case["inputs"].items():
        dtype = np.int64 if value["int"] else np.float32
        feeds[key] = np.asarray(value["values"], dtype=np.float64).astype(dtype).reshape(value["shape"])
    errors = []
    # As written (no graph rewrites: the export's own ops) and as users run it (every rewrite).
    for level in (ort.GraphOptimizationLevel.ORT_DISABLE_ALL, ort.GraphOptimizationLevel.ORT_ENABLE_ALL):
        options = ort.SessionOptions()
        options.graph_optimization_level = level
        session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        inputs = [i.name for i in session.get_inputs()]
        if sorted(inputs) != sorted(feeds):
            return [f"inputs {inputs}, the case has {sorted(feeds)}"]
        (got,) = session.run(None, feeds)
        errors += compare(f"{level.name} vs pstrain", got, case["pstrain"])
        if case.get("keras") is not None:
            errors += compare(f"{level.name} vs Keras", got, case["keras"])
        # The batch is symbolic: the first example alone gives the first row.
        (first,) = session.run(None, {k: v[:1] for k, v in feeds.items()})
        row = np.asarray(case["pstrain"]["values"]).reshape(case["pstrain"]["shape"])[:1]
        errors += compare(f"{level.name} batch of 1", first, {"shape": list(row.shape), "values": row.ravel().tolist()})
    return errors


def main():
    directory = sys.argv[1]
    names = sorted(f[:-5] for f in os.listdir(directory) if f.endswith(".onnx"))
    if not names:
        print(f"FAIL: no .onnx files in {directory}")
        return 1
    failed = 0
    for name in names:
        try:
            errors = check(directory, name)
        except Exception as e:  # the checker's and the runtime's errors name the node
            errors = [f"{type(e).__name__}: {e}"]
        if errors:
            failed += 1
            print(f"FAIL {name}:")
            for e in errors:
                print("  " + e)
        else:
            print(f"ok   {name}")
    print(f"{len(names) - failed} of {len(names)} models match (onnx {onnx.__version__}, "
          f"onnxruntime {ort.__version__})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
