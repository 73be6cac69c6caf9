#!/usr/bin/env bash
# TFRecord files of tf.Example written by real TensorFlow (tf.io.TFRecordWriter, PyPI): a Criteo-
# like set (pstrain datagen ctr) written as tf.Example, plain and GZIP, with numeric features as
# int64 and float lists and ids as int64 (int(hex, 16)) and bytes lists. pstrain reads them back to
# the values Python computes from the TSV (log1p of the counts, ids modulo the table, bytes ids
# FNV-1a 64 hashed), and `pstrain train` on the TFRecord files reaches the same test AUC as on the
# TSV files (the same examples in the same order: the same CtrData, so the same AUC). A record with
# a feature of the wrong type fails the job naming the file, the record and the feature; with
# skip_bad_lines it is skipped and counted. A real cluster (1 ps, 2 workers, sync) trains one epoch on
# the TFRecord files as on the TSV files, to the same metrics. Exits 77 when TensorFlow cannot be installed.
source "$(dirname "$0")/lib.sh" "$1"
source "$(dirname "$0")/pypi_venv.sh"
PY=$(pypi_python tf) || exit 77
READER="$BIN/../benchmarks/tfrecord_reader_benchmark"
[ -x "$READER" ] || fail "$READER is not built (ninja tfrecord_reader_benchmark)"

"$BIN/pstrain" datagen ctr --out "$WORK/data" --train 3000 --test 1000 --vocabulary 100000 --seed 7 \
  >"$WORK/datagen.out" 2>&1 || fail "datagen failed: $(cat "$WORK/datagen.out")"

# Writes WORK/*.tfrecord* with TensorFlow and WORK/expected-*.tsv with the values pstrain must read.
timeout 300 "$PY" - "$WORK" <<'PY' >"$WORK/write.log" 2>&1 || fail "TensorFlow could not write the files: $(tail -n 20 "$WORK/write.log")"
import math, os, struct, sys
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np
import tensorflow as tf
work = sys.argv[1]
TABLE = 100000

def fnv1a64(b):
    h = 14695981039346656037
    for c in b:
        h = ((h ^ c) * 1099511628211) & (2**64 - 1)
    return h

def signed64(u):
    return u - 2**64 if u >= 2**63 else u

def example(line, bytes_ids):
    f = line.rstrip("\n").split("\t")
    feats = {"label": tf.train.Feature(int64_list=tf.train.Int64List(value=[int(f[0])]))}
    want = [f[0]]
    for j in range(13):
        x = f[1 + j]
        v = float(x) if x else 0.0
        if j % 2 == 0 and v == int(v):  # I1, I3, ...: int64 counts
            feats["I%d" % (j + 1)] = tf.train.Feature(int64_list=tf.train.Int64List(value=[int(v)]))
        else:  # float32, as tf.train.FloatList stores it
            feats["I%d" % (j + 1)] = tf.train.Feature(float_list=tf.train.FloatList(value=[v]))
            v = float(np.float32(v))
        want.append("%.9g" % np.float32(math.log1p(v)) if v > 0 else "0")
    for c in range(26):
        h = f[14 + c]
        if bytes_ids and c >= 20:  # C21..C26 as bytes: FNV-1a 64 of the text
            feats["C%d" % (c + 1)] = tf.train.Feature(bytes_list=tf.train.BytesList(value=[h.encode()]))
            want.append(str(fnv1a64(h.encode()) % TABLE if h else 0))
        else:
            u = int(h, 16) if h else 0
            feats["C%d" % (c + 1)] = tf.train.Feature(int64_list=tf.train.Int64List(value=[signed64(u)]))
            want.append(str(u % TABLE))
    return tf.train.Example(features=tf.train.Features(feature=feats)), "\t".join(want)

def write(src, dst, gzip, bytes_ids, expected=None):
    options = tf.io.TFRecordOptions(compression_type="GZIP" if gzip else "")
    rows = []
    with tf.io.TFRecordWriter(dst, options) as w:
        for line in open(src):
            e, want = example(line, bytes_ids)
            w.write(e.SerializeToString())
            rows.append(want)
    if expected:
        open(expected, "w").write("\n".join(rows) + "\n")

d = os.path.join(work, "data")
write(d + "/train.txt", work + "/train.tfrecord", False, False)
write(d + "/test.txt", work + "/test.tfrecord.gz", True, False, work + "/expected-test.tsv")
write(d + "/test.txt", work + "/test-bytes.tfrecord", False, True, work + "/expected-test-bytes.tsv")
# The training set in two files, as TSV and as TFRecord, for the cluster (one file per worker).
for part in range(2):
    half = open(d + "/train.txt").readlines()[part::2]
    open("%s/train-%d.txt" % (work, part), "w").writelines(half)
    write("%s/train-%d.txt" % (work, part), "%s/train-%d.tfrecord" % (work, part), part == 1, False)
# A file with one bad record (C5 a float_list) among good ones, for the bad-input checks.
lines = open(d + "/train.txt").readlines()[:50]
with tf.io.TFRecordWriter(work + "/bad.tfrecord") as w:
    for i, line in enumerate(lines):
        e, _ = example(line, False)
        if i == 7:
            e.features.feature["C5"].CopyFrom(tf.train.Feature(float_list=tf.train.FloatList(value=[1.5])))
        w.write(e.SerializeToString())
print("written")
PY

# 1. Read back: every value as Python computed it, plain and GZIP, int64 and bytes ids.
compare() {  # compare NAME FILE EXPECTED
  "$READER" --dump "$2" >"$WORK/$1.dump" 2>"$WORK/$1.err" || fail "$1: reading $2 failed: $(cat "$WORK/$1.err")"
  python3 - "$WORK/$1.dump" "$3" "$1" <<'PY' || fail "$1: pstrain read different values than TensorFlow wrote"
import sys
got, want, name = [open(p).read().splitlines() for p in sys.argv[1:3]] + [sys.argv[3]]
assert len(got) == len(want) == 1000, (name, len(got), len(want))
for i, (g, w) in enumerate(zip(got, want)):
    g, w = g.split("\t"), w.split("\t")
    assert len(g) == len(w) == 40, (name, i, len(g))
    assert float(g[0]) == float(w[0]), (name, i, "label", g[0], w[0])
    for j in range(1, 14):
        assert abs(float(g[j]) - float(w[j])) <= 1e-6 * max(1.0, abs(float(w[j]))), (name, i, "I%d" % j, g[j], w[j])
    assert g[14:] == w[14:], (name, i, "ids", g[14:], w[14:])
print(name, "ok")
PY
}
compare gzip "$WORK/test.tfrecord.gz" "$WORK/expected-test.tsv"
compare bytes "$WORK/test-bytes.tfrecord" "$WORK/expected-test-bytes.tsv"

# 2. Training: the same job on TSV and on TFRecord (the ctr preset's model, smaller for speed).
job() {  # job DATA_JSON
  cat <<JSON
{"name": "ctr-tfrecord",
 "model": {"numeric_inputs": 13,
           "fields": [{"vocabulary_size": 100000, "embedding_dim": 8, "count": 26}],
           "layers": [{"type": "dense", "units": 64, "activation": "relu"},
                      {"type": "dense", "units": 32, "activation": "relu"}, {"type": "dense", "units": 1}],
           "loss": "binary_crossentropy"},
 "optimizer": {"type": "adagrad", "learning_rate": 0.02, "initial_accumulator_value": 1e-6, "epsilon": 1e-7},
 "data": $1,
 "batch_size": 32, "schedule": {"steps": 300, "steps_per_closure": 10, "eval_every_steps": 0},
 "partitioner": {"type": "min_size", "min_shard_bytes": 262144, "max_shards": 2, "strategy": "mod"},
 "seed": 42}
JSON
}
NAMES='"label": "label", "numeric": ["I1","I2","I3","I4","I5","I6","I7","I8","I9","I10","I11","I12","I13"],
  "categorical": ["C1","C2","C3","C4","C5","C6","C7","C8","C9","C10","C11","C12","C13","C14","C15","C16","C17",
                  "C18","C19","C20","C21","C22","C23","C24","C25","C26"]'
job "{\"dataset\": \"criteo\", \"train_files\": [\"$WORK/data/train.txt\"], \"test_files\": [\"$WORK/data/test.txt\"]}" \
  >"$WORK/job-tsv.json"
job "{\"dataset\": \"tfrecord\", \"train_files\": [\"$WORK/train.tfrecord\"], \"test_files\": [\"$WORK/test.tfrecord.gz\"],
      \"features\": {$NAMES}}" >"$WORK/job-tfrecord.json"
for kind in tsv tfrecord; do
  timeout 240 "$BIN/pstrain" train --job="$WORK/job-$kind.json" --threads=1 >"$WORK/train-$kind.out" \
    2>"$WORK/train-$kind.log" || fail "pstrain train on $kind failed: $(tail -n 20 "$WORK/train-$kind.log")"
  tail -n 1 "$WORK/train-$kind.out" >"$WORK/train-$kind.json"
  [ "$(json_get "$WORK/train-$kind.json" "d['steps']")" = 300 ] || fail "$kind: pstrain train did not run 300 steps"
done
auc_tsv=$(json_get "$WORK/train-tsv.json" "d['final_test_auc']")
auc_tfr=$(json_get "$WORK/train-tfrecord.json" "d['final_test_auc']")
echo "test AUC after 300 steps: TSV $auc_tsv, TFRecord $auc_tfr"
python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) > 0.6 else 1)" "$auc_tfr" ||
  fail "training on TFRecord reached only test AUC $auc_tfr (the planted model is learnable)"
[ "$auc_tsv" = "$auc_tfr" ] || fail "test AUC on TFRecord ($auc_tfr) differs from the same data as TSV ($auc_tsv)"

# 3. A bad record: named (file, record, feature), or skipped and counted with skip_bad_lines.
job "{\"dataset\": \"tfrecord\", \"train_files\": [\"$WORK/bad.tfrecord\"], \"test_files\": [\"$WORK/test.tfrecord.gz\"],
      \"features\": {$NAMES}}" | sed 's/"steps": 300/"steps": 3/' >"$WORK/job-bad.json"
expect_exit 2 bad-record "TFRecord file $WORK/bad.tfrecord, record 7: feature \"C5\" \\(a categorical id\\) is a float_list" \
  timeout 120 "$BIN/pstrain" train --job="$WORK/job-bad.json" --threads=1
sed 's/"dataset": "tfrecord",/"dataset": "tfrecord", "skip_bad_lines": true,/' "$WORK/job-bad.json" >"$WORK/job-skip.json"
timeout 120 "$BIN/pstrain" train --job="$WORK/job-skip.json" --threads=1 >"$WORK/skip.out" 2>"$WORK/skip.log" ||
  fail "skip_bad_lines did not skip the bad record: $(tail -n 5 "$WORK/skip.log")"
grep -q "skipped 1 bad lines .*bad.tfrecord, record 7: feature \"C5\"" "$WORK/skip.log" ||
  fail "the skipped record is not reported: $(cat "$WORK/skip.log")"

# 4. A real cluster (1 ps, 2 workers, sync, one epoch): the chief counts the records for its step
# budget, each worker reads its own file (one plain, one GZIP); the same run on the same files as TSV
# gives the same steps and test metrics.
cluster_run() {  # cluster_run KIND DATA_JSON: the chief's summary in $WORK/cluster-KIND.json
  job "$2" | sed 's/"steps": 300, "steps_per_closure": 10/"epochs": 1, "steps_per_closure": 2/' |
    sed 's/"batch_size": 32/"batch_size": 64, "mode": "sync"/' >"$WORK/job-cluster-$1.json"
  make_cluster 1 2
  PIDS=()
  start_servers 1 2 --threads=1
  start chief 0 pstrain-chief --job="$WORK/job-cluster-$1.json" --model_dir="$WORK/model-$1" --wait_timeout_secs=60
  wait_pid "$LAST_PID" 120
  [ "$WAIT_RC" = 0 ] || fail "$1: the chief exited with $WAIT_RC: $(tail -n 20 "$WORK/chief-0.log")"
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
  cp "$WORK/model-$1/summary.json" "$WORK/cluster-$1.json"
}
cluster_run tsv "{\"dataset\": \"criteo\", \"train_files\": [\"$WORK/train-*.txt\"], \"test_files\": [\"$WORK/data/test.txt\"]}"
cluster_run tfrecord "{\"dataset\": \"tfrecord\", \"train_files\": [\"$WORK/train-*.tfrecord\"],
  \"test_files\": [\"$WORK/test.tfrecord.gz\"], \"features\": {$NAMES}}"
python3 - "$WORK/cluster-tsv.json" "$WORK/cluster-tfrecord.json" <<'PY' || fail "the cluster's run on TFRecord differs from TSV"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
steps = [d.get("global_step", d.get("steps")) for d in (a, b)]
assert steps[0] == steps[1] == 47, steps  # ceil(3000 / 64): the chief counted 3000 records
for key in ("final_test_auc", "final_test_logloss"):
    assert abs(a[key] - b[key]) <= 1e-5 * max(1, abs(a[key])), (key, a[key], b[key])
print("cluster: steps", steps[0], "test AUC", a["final_test_auc"], b["final_test_auc"])
PY
echo "PASS"
