#!/usr/bin/env bash
# Reading speed of TFRecord files of tf.Example: pstrain's reader (tfrecord_reader_benchmark, one
# thread: framing, CRC-32C checks, tf.Example parsing, the mapping to CTR inputs) against
# TensorFlow's tf.data (TFRecordDataset + batched tf.io.parse_example with fixed-length features,
# one thread: threading pools of 1) on the same file, written by tf.io.TFRecordWriter with
# Criteo's 13 numeric and 26 categorical features. Prints records/s of both (best of REPS runs
# each) and the ratio.
#
# Usage: tests/benchmarks/tfrecord_read_vs_tensorflow.sh [RECORDS=200000] [REPS=3] [COMPRESSION=|GZIP]
#   env: BUILD_DIR (default build)
# Needs: a built tfrecord_reader_benchmark and the TensorFlow venv (deploy/install-python-peers.sh tf).
set -euo pipefail

RECORDS=${1:-200000}
REPS=${2:-3}
COMPRESSION=${3:-}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
READER=$BUILD_DIR/benchmarks/tfrecord_reader_benchmark
[ -x "$READER" ] || { echo "tfrecord_read_vs_tensorflow: $READER not found; build it first" >&2; exit 2; }
source "$ROOT/tests/integration/pypi_venv.sh"
PY=$(pypi_python tf) || { echo "tfrecord_read_vs_tensorflow: no TensorFlow environment" >&2; exit 2; }
export TF_CPP_MIN_LOG_LEVEL=2

DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
FILE=$DIR/data.tfrecord
[ -n "$COMPRESSION" ] && FILE=$FILE.gz
"$PY" - "$FILE" "$RECORDS" "$COMPRESSION" <<'PY'
import sys
import numpy as np
import tensorflow as tf
path, n, compression = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rng = np.random.default_rng(1)
labels = rng.integers(0, 2, n)
counts = rng.geometric(0.05, (n, 13)) - 1
ids = rng.integers(0, 2**32, (n, 26))
with tf.io.TFRecordWriter(path, tf.io.TFRecordOptions(compression_type=compression)) as w:
    for i in range(n):
        f = {"label": tf.train.Feature(int64_list=tf.train.Int64List(value=[labels[i]]))}
        for j in range(13):
            f["I%d" % (j + 1)] = tf.train.Feature(float_list=tf.train.FloatList(value=[counts[i, j]]))
        for c in range(26):
            f["C%d" % (c + 1)] = tf.train.Feature(int64_list=tf.train.Int64List(value=[ids[i, c]]))
        w.write(tf.train.Example(features=tf.train.Features(feature=f)).SerializeToString())
PY

ours() { "$READER" --repeats="$REPS" "$FILE" | grep -o '"records_per_sec": [0-9.]*' | cut -d' ' -f2; }
theirs() {
  "$PY" - "$FILE" "$REPS" "$COMPRESSION" <<'PY'
import sys, time
import tensorflow as tf
tf.config.threading.set_inter_op_parallelism_threads(1)
tf.config.threading.set_intra_op_parallelism_threads(1)
path, reps, compression = sys.argv[1], int(sys.argv[2]), sys.argv[3]
spec = {"label": tf.io.FixedLenFeature([], tf.int64)}
spec.update({"I%d" % (j + 1): tf.io.FixedLenFeature([], tf.float32) for j in range(13)})
spec.update({"C%d" % (c + 1): tf.io.FixedLenFeature([], tf.int64) for c in range(26)})
options = tf.data.Options()
options.threading.private_threadpool_size = 1
options.threading.max_intra_op_parallelism = 1
ds = (tf.data.TFRecordDataset(path, compression_type=compression).batch(1024)
      .map(lambda b: tf.io.parse_example(b, spec)).with_options(options))
best = None
for _ in range(reps):
    start, n = time.perf_counter(), 0
    for batch in ds:
        n += int(batch["label"].shape[0])
    s = time.perf_counter() - start
    best = s if best is None else min(best, s)
print("%.0f" % (n / best))
PY
}

echo "TFRecord of tf.Example, $RECORDS records ($(du -h "$FILE" | cut -f1), compression '${COMPRESSION:-none}'), best of $REPS; $(nproc) cores"
echo "cpu: $(lscpu | grep -m1 'Model name' | cut -d: -f2 | sed 's/^ *//')"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
x=$(ours)
y=$(theirs)
printf "%-28s %14s\n" reader "records/s" "pstrain (1 thread)" "$x" "tf.data + parse_example (1)" "$y"
awk -v a="$x" -v b="$y" 'BEGIN {printf "ratio pstrain/tf.data = %.2fx\n", a / b}'
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
