#!/usr/bin/env python3
"""Reads a model dir's event files with real TensorBoard (PyPI `tensorboard`: its EventAccumulator,
what `tensorboard --logdir` loads runs with) and checks every scalar against metrics.jsonl.

    check_with_tensorboard.py MODEL_DIR      (run with the python of install-python-peers.sh tools)

The runs MODEL_DIR/train and MODEL_DIR/eval must each hold scalars whose (step, tag, value) multiset
equals the records of MODEL_DIR/metrics.jsonl (train and eval records) and MODEL_DIR/eval/metrics.jsonl
(the evaluator's), each number rounded to float32 as simple_value holds it (read_events.py's
expected_scalars). Prints a summary; exits 1 naming the first difference.
"""
import json
import os
import sys
from collections import Counter

from tensorboard.backend.event_processing import event_accumulator

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from read_events import expected_scalars  # noqa: E402


def tensorboard_scalars(run_dir):
    # Everything, not a sample (size_guidance 0), and no purge: the chief and the evaluator both
    # write eval scalars, so steps need not rise from one event to the next.
    acc = event_accumulator.EventAccumulator(run_dir, size_guidance={event_accumulator.SCALARS: 0},
                                             purge_orphaned_data=False)
    acc.Reload()
    seen = Counter()
    for tag in acc.Tags()["scalars"]:
        for e in acc.Scalars(tag):
            if e.wall_time < 1e9:
                raise ValueError("%s: %s at step %d has no wall time" % (run_dir, tag, e.step))
            seen[(e.step, tag, e.value)] += 1
    return seen, acc.file_version


def main(model_dir):
    want = {"train": Counter(), "eval": Counter()}
    for jsonl in (os.path.join(model_dir, "metrics.jsonl"), os.path.join(model_dir, "eval", "metrics.jsonl")):
        if os.path.exists(jsonl):
            for line in open(jsonl):
                record = json.loads(line)
                run = "eval" if record.get("kind") == "eval" else "train"
                for s in expected_scalars(record):
                    want[run][s] += 1
    counts = {}
    for run in ("train", "eval"):
        seen, version = tensorboard_scalars(os.path.join(model_dir, run))
        if version is None or version < 2:
            raise ValueError("%s: TensorBoard read file_version %s (brain.Event:2 expected)" % (run, version))
        if not want[run]:
            raise ValueError("no %s records in metrics.jsonl to compare" % run)
        if seen != want[run]:
            missing = sorted((want[run] - seen).items())[:5]
            extra = sorted((seen - want[run]).items())[:5]
            raise ValueError("TensorBoard's %s scalars differ from metrics.jsonl: missing %s, unexpected %s"
                             % (run, missing, extra))
        counts[run] = (sum(seen.values()), sorted({t for (_, t, _) in seen}))
    import tensorboard
    print("TensorBoard %s EventAccumulator: %d train scalars (%s) and %d eval scalars (%s) equal metrics.jsonl"
          % (tensorboard.__version__, counts["train"][0], ", ".join(counts["train"][1]),
             counts["eval"][0], ", ".join(counts["eval"][1])))


if __name__ == "__main__":
    try:
        main(sys.argv[1])
    except ValueError as e:
        print("FAIL: %s" % e)
        sys.exit(1)
