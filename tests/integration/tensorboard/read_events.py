#!/usr/bin/env python3
"""Reads a model dir's TensorBoard event files and checks them against its metrics.jsonl files.

    read_events.py MODEL_DIR PY_OUT_DIR     (PY_OUT_DIR holds event_pb2.py from protoc --python_out)

Written apart from pstrain's writer: its own CRC32C, its own copy of TensorFlow's messages. Checks
that every file under MODEL_DIR/train and MODEL_DIR/eval is a sequence of TFRecords whose length
and data CRCs (masked CRC32C) are right, that the first event of each file is its file_version,
and that the scalars equal the records of MODEL_DIR/metrics.jsonl (train and eval records) and
MODEL_DIR/eval/metrics.jsonl (the evaluator's), each number rounded to float32 as simple_value
holds it. Prints a summary; exits 1 naming the first problem.
"""
import glob
import json
import os
import struct
import sys
from collections import Counter


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def masked(crc):
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def records(path):
    with open(path, "rb") as f:
        data = f.read()
    pos = 0
    while pos < len(data):
        if len(data) - pos < 12:
            raise ValueError("%s: %d stray bytes at the end" % (path, len(data) - pos))
        header = data[pos:pos + 8]
        (length,) = struct.unpack("<Q", header)
        (length_crc,) = struct.unpack("<I", data[pos + 8:pos + 12])
        if length_crc != masked(crc32c(header)):
            raise ValueError("%s: bad length CRC at offset %d" % (path, pos))
        body = data[pos + 12:pos + 12 + length]
        (body_crc,) = struct.unpack("<I", data[pos + 12 + length:pos + 16 + length])
        if len(body) != length or body_crc != masked(crc32c(body)):
            raise ValueError("%s: bad data CRC at offset %d" % (path, pos))
        yield body
        pos += 16 + length


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def expected_scalars(record):
    """(step, tag, float32 value) of a metrics.jsonl record, as TensorBoard should show them."""
    is_eval = record.get("kind") == "eval"
    out = []
    for key, value in record.items():
        if key in ("step", "wall_time", "kind"):
            continue
        tag = key[5:] if is_eval and key.startswith("test_") else key
        if isinstance(value, bool) or value is None:
            continue
        if isinstance(value, (int, float)):
            if value == value and abs(value) != float("inf"):
                out.append((record["step"], tag, f32(value)))
        elif isinstance(value, list):
            for i, v in enumerate(value):
                if isinstance(v, (int, float)):
                    out.append((record["step"], "%s/worker_%d" % (tag, i), f32(v)))
    return out


def main(model_dir, py_out):
    sys.path.insert(0, py_out)
    import event_pb2

    seen = {"train": Counter(), "eval": Counter()}
    files = 0
    for run in ("train", "eval"):
        for path in sorted(glob.glob(os.path.join(model_dir, run, "events.out.tfevents.*"))):
            files += 1
            for i, body in enumerate(records(path)):
                event = event_pb2.Event()
                event.ParseFromString(body)
                if i == 0:
                    if event.WhichOneof("what") != "file_version" or not event.file_version.startswith("brain.Event:"):
                        raise ValueError("%s: the first event is not the file_version" % path)
                    continue
                if event.WhichOneof("what") != "summary" or event.wall_time < 1e9:
                    raise ValueError("%s: event %d is not a summary with a wall time" % (path, i))
                for v in event.summary.value:
                    if v.WhichOneof("value") != "simple_value":
                        raise ValueError("%s: %s is not a simple_value" % (path, v.tag))
                    seen[run][(event.step, v.tag, v.simple_value)] += 1
    want = {"train": Counter(), "eval": Counter()}
    for jsonl in (os.path.join(model_dir, "metrics.jsonl"), os.path.join(model_dir, "eval", "metrics.jsonl")):
        if not os.path.exists(jsonl):
            continue
        with open(jsonl) as f:
            for line in f:
                record = json.loads(line)
                run = "eval" if record.get("kind") == "eval" else "train"
                for s in expected_scalars(record):
                    want[run][s] += 1
    for run in ("train", "eval"):
        if seen[run] != want[run]:
            missing = list((want[run] - seen[run]).items())[:5]
            extra = list((seen[run] - want[run]).items())[:5]
            raise ValueError("%s scalars differ from metrics.jsonl: missing %s, unexpected %s" % (run, missing, extra))
        if not want[run]:
            raise ValueError("no %s records to compare" % run)
    tags = sorted({t for run in seen for (_, t, _) in seen[run]})
    print("%d event files, every CRC right; %d train and %d eval scalars equal metrics.jsonl; tags: %s" % (
        files, sum(seen["train"].values()), sum(seen["eval"].values()), ", ".join(tags)))


if __name__ == "__main__":
    try:
        main(sys.argv[1], sys.argv[2])
    except ValueError as e:
        print("FAIL: %s" % e)
        sys.exit(1)
