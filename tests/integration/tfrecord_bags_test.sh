#!/usr/bin/env bash
# Multi-hot (bag) features of tf.Example written by real TensorFlow (tf.io.TFRecordWriter, PyPI):
# variable-length int64 and bytes features (empty bags included) and per-id float weights.
# 1. pstrain's combined embeddings of every test example (ctr_bag_embeddings: the CPU CTR model's
#    batches, id dedupe and forward), for given tables, equal TensorFlow's
#    tf.nn.safe_embedding_lookup_sparse (tf.nn.embedding_lookup_sparse on the rows without empty
#    bags) for sum, mean and sqrtn, with and without weights; a one-id field equals its row.
# 2. `pstrain train` of a ctr job on the multi-hot data learns (test AUC above 0.6; the label is
#    planted in the bags).
# 3. A real cluster (1 ps, 2 workers, sync, one epoch) trains on the bags too: each worker reads its
#    part of the records, pulls and pushes its batches' unique ids (bag ids included) over gRPC;
#    `pstrain evaluate` of its checkpoint gives the chief's final figures.
# 4. A bag whose weights do not match its ids fails the job naming the file, record and feature.
# 5. A Keras model (tf.keras's to_json) on the same bags trains, on one process and a cluster.
# 6. Two bag features share one table in a Keras model: the columns of an input of shape (2,).
# Exits 77 when TensorFlow cannot be installed.
source "$(dirname "$0")/lib.sh" "$1"
source "$(dirname "$0")/pypi_venv.sh"
PY=$(pypi_python tf) || exit 77
EMB="$BIN/../tests/ctr_bag_embeddings"
[ -x "$EMB" ] || fail "$EMB is not built (ninja ctr_bag_embeddings)"

# Writes WORK/{train,test,bad}.tfrecord, WORK/tables/<field>.f32 and, per combiner assignment
# A, B, C, WORK/expected-X.tsv: TensorFlow's combined embeddings of the test examples.
timeout 300 "$PY" - "$WORK" <<'PY' >"$WORK/write.log" 2>&1 || fail "TensorFlow failed: $(tail -n 20 "$WORK/write.log")"
import os, sys
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np
import tensorflow as tf
work = sys.argv[1]
rng = np.random.default_rng(5)
V = {"C1": 100, "tags": 50, "cats": 40, "words": 1000}
WORDS = ["w%d" % i for i in range(30)] + [""]
tag_effect = rng.normal(0, 2.0, V["tags"])
word_effect = {w: rng.normal(0, 1.5) for w in WORDS}

def fnv1a64(b):
    h = 14695981039346656037
    for c in b:
        h = ((h ^ c) * 1099511628211) & (2**64 - 1)
    return h

def make(n, bad_at=-1):
    out = []
    for i in range(n):
        tags = list(rng.integers(0, V["tags"], rng.integers(0, 7)))
        w = [float(np.float32(x)) for x in rng.uniform(0.1, 2.0, len(tags))]
        cats = list(rng.integers(0, 3 * V["cats"], rng.integers(0, 5)))  # ids past the table: taken modulo
        words = [WORDS[j] for j in rng.integers(0, len(WORDS), rng.integers(0, 6))]
        z = (sum(wi * tag_effect[t] for t, wi in zip(tags, w)) / sum(w) if tags else 0.0) + \
            sum(word_effect[x] for x in words) * 0.5
        label = int(rng.random() < 1 / (1 + np.exp(-z)))
        f = {"label": tf.train.Feature(int64_list=tf.train.Int64List(value=[label])),
             "I1": tf.train.Feature(float_list=tf.train.FloatList(value=[float(rng.random())])),
             "C1": tf.train.Feature(int64_list=tf.train.Int64List(value=[int(rng.integers(0, 100))]))}
        if tags or i % 2 or i == bad_at:  # an empty bag: the feature missing, or an empty list
            f["tags"] = tf.train.Feature(int64_list=tf.train.Int64List(value=[int(t) for t in tags]))
            f["tag_w"] = tf.train.Feature(float_list=tf.train.FloatList(value=w if i != bad_at else w + [1.0]))
        if cats:
            f["cats"] = tf.train.Feature(int64_list=tf.train.Int64List(value=[int(c) for c in cats]))
        if words or i % 3:
            f["words"] = tf.train.Feature(bytes_list=tf.train.BytesList(value=[x.encode() for x in words]))
        out.append(tf.train.Example(features=tf.train.Features(feature=f)).SerializeToString())
    return out

def write(path, records):
    with tf.io.TFRecordWriter(path) as wr:
        for r in records:
            wr.write(r)

train, test = make(3000), make(400)
write(work + "/train.tfrecord", train)
write(work + "/test.tfrecord", test)
write(work + "/bad.tfrecord", make(20, bad_at=4))
tables = {"C1": rng.normal(0, 1, (V["C1"], 3)), "tags": rng.normal(0, 1, (V["tags"], 4)),
          "cats": rng.normal(0, 1, (V["cats"], 2)), "words": rng.normal(0, 1, (V["words"], 5))}
os.makedirs(work + "/tables", exist_ok=True)
for name, t in tables.items():
    tables[name] = t.astype(np.float32)
    tables[name].tofile("%s/tables/%s.f32" % (work, name))

parsed = tf.io.parse_example(test, {
    "C1": tf.io.FixedLenFeature([], tf.int64), "tags": tf.io.VarLenFeature(tf.int64),
    "tag_w": tf.io.VarLenFeature(tf.float32), "cats": tf.io.VarLenFeature(tf.int64),
    "words": tf.io.VarLenFeature(tf.string)})
n = len(test)
def ids_of(name):
    sp = parsed[name]
    if sp.dtype == tf.string:  # pstrain's bytes ids: FNV-1a 64 modulo the table
        vals = [fnv1a64(b) % V[name] if b else 0 for b in sp.values.numpy()]
    else:
        vals = [int(v) % V[name] for v in sp.values.numpy()]
    return tf.SparseTensor(sp.indices, tf.constant(vals, tf.int64), sp.dense_shape)

def lookup(name, combiner, weights):
    sp = ids_of(name)
    sw = None
    if weights:
        w = parsed["tag_w"]
        sw = tf.SparseTensor(w.indices, w.values, sp.dense_shape)
    safe = tf.nn.safe_embedding_lookup_sparse(tables[name], sp, sw, combiner=combiner).numpy()
    # embedding_lookup_sparse gives the same rows where a bag is not empty (and none past the last).
    plain = tf.nn.embedding_lookup_sparse(tables[name], sp, sw, combiner=combiner).numpy()
    nonempty = np.bincount(sp.indices[:, 0].numpy(), minlength=n) > 0
    assert np.allclose(plain[nonempty[:len(plain)]], safe[:len(plain)][nonempty[:len(plain)]], rtol=1e-6, atol=1e-6)
    assert (~nonempty).any() and not safe[~nonempty].any(), "want empty bags, given zeros"
    return safe

# A Keras model of the ctr job's shape (Flatten of each Embedding, then the tower), for part 5.
ids = {n: tf.keras.Input(shape=(1,), dtype="int32", name=n) for n in ("C1", "tags", "cats", "words")}
numeric = tf.keras.Input(shape=(1,), name="numeric")
embedded = [tf.keras.layers.Flatten()(tf.keras.layers.Embedding(V[n], d, name=n + "_emb")(ids[n]))
            for n, d in (("C1", 3), ("tags", 4), ("cats", 2), ("words", 5))]
x = tf.keras.layers.Dense(16, activation="relu")(tf.keras.layers.Concatenate()([numeric] + embedded))
model = tf.keras.Model(list(ids.values()) + [numeric], tf.keras.layers.Dense(1)(x))
with open(work + "/keras_bags.json", "w") as f:
    f.write(model.to_json())
# Part 6: the bags tags and cats as the two columns of one input, so one Embedding (one table) serves both.
c1, tags_cats, words = (tf.keras.Input(shape=(k,), dtype="int32", name=n) for n, k in
                        (("C1", 1), ("tags_cats", 2), ("words", 1)))
embedded = [tf.keras.layers.Flatten()(tf.keras.layers.Embedding(v, d, name=n)(i)) for i, v, d, n in
            ((c1, 100, 3, "C1_emb"), (tags_cats, 120, 4, "tags_cats_emb"), (words, 1000, 5, "words_emb"))]
x = tf.keras.layers.Dense(16, activation="relu")(tf.keras.layers.Concatenate()([numeric] + embedded))
shared = tf.keras.Model([c1, tags_cats, words, numeric], tf.keras.layers.Dense(1)(x))
with open(work + "/keras_shared.json", "w") as f:
    f.write(shared.to_json())

c1 = tables["C1"][parsed["C1"].numpy() % V["C1"]]
for job, (ct, cc, cw) in {"A": ("sum", "mean", "sqrtn"), "B": ("mean", "sqrtn", "sum"),
                          "C": ("sqrtn", "sum", "mean")}.items():
    cols = np.concatenate([c1, lookup("tags", ct, True), lookup("cats", cc, False), lookup("words", cw, False)], 1)
    np.savetxt("%s/expected-%s.tsv" % (work, job), cols, fmt="%.9g", delimiter="\t")
print("written")
PY

job() {  # job TAGS CATS WORDS [TRAIN_FILE]
  cat <<JSON
{"name": "ctr-bags",
 "model": {"numeric_inputs": 1,
           "fields": [{"name": "C1", "vocabulary_size": 100, "embedding_dim": 3},
                      {"name": "tags", "vocabulary_size": 50, "embedding_dim": 4},
                      {"name": "cats", "vocabulary_size": 40, "embedding_dim": 2},
                      {"name": "words", "vocabulary_size": 1000, "embedding_dim": 5}],
           "layers": [{"type": "dense", "units": 16, "activation": "relu"}, {"type": "dense", "units": 1}],
           "loss": "binary_crossentropy"},
 "optimizer": {"type": "adagrad", "learning_rate": 0.05},
 "data": {"dataset": "tfrecord", "train_files": ["${4:-$WORK/train.tfrecord}"], "test_files": ["$WORK/test.tfrecord"],
          "features": {"label": "label", "numeric": ["I1"],
                       "categorical": ["C1", {"name": "tags", "combiner": "$1", "weights": "tag_w", "max_length": 8},
                                       {"name": "cats", "combiner": "$2"}, {"name": "words", "combiner": "$3"}]}},
 "batch_size": 32, "schedule": {"steps": 300, "steps_per_closure": 10, "eval_every_steps": 0},
 "seed": 3}
JSON
}

# 1. Combined embeddings against TensorFlow, every combiner with and without weights.
for assignment in "A sum mean sqrtn" "B mean sqrtn sum" "C sqrtn sum mean"; do
  set -- $assignment
  job "$2" "$3" "$4" >"$WORK/job-$1.json"
  "$EMB" "$WORK/job-$1.json" "$WORK/tables" >"$WORK/got-$1.tsv" 2>"$WORK/emb-$1.log" ||
    fail "$1: ctr_bag_embeddings failed: $(cat "$WORK/emb-$1.log")"
  python3 - "$WORK/got-$1.tsv" "$WORK/expected-$1.tsv" "$1" <<'PY' || fail "$1: pstrain's combined embeddings differ from TensorFlow's"
import sys
got, want = ([[float(x) for x in l.split("\t")] for l in open(p).read().splitlines()] for p in sys.argv[1:3])
assert len(got) == len(want) == 400, (len(got), len(want))
for i, (g, w) in enumerate(zip(got, want)):
    assert len(g) == len(w) == 14, (i, len(g), len(w))
    for j, (a, b) in enumerate(zip(g, w)):
        assert abs(a - b) <= 1e-5 * max(1.0, abs(b)), (sys.argv[3], "example", i, "column", j, a, b)
print(sys.argv[3], "ok")
PY
done

# 2. Training on the multi-hot data learns.
job mean sqrtn sum >"$WORK/job-train.json"
timeout 240 "$BIN/pstrain" train --job="$WORK/job-train.json" --threads=2 >"$WORK/train.out" 2>"$WORK/train.log" ||
  fail "pstrain train on bags failed: $(tail -n 20 "$WORK/train.log")"
tail -n 1 "$WORK/train.out" >"$WORK/train.json"
auc=$(json_get "$WORK/train.json" "d['final_test_auc']")
echo "test AUC after 300 steps on multi-hot features: $auc"
python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) > 0.6 else 1)" "$auc" ||
  fail "training on bags reached only test AUC $auc (the label is planted in the bags)"

# 3. A real cluster on the same job (sync, 3 epochs of 3000 records in batches of 64), against
# `pstrain train` of that job.
job mean sqrtn sum | sed 's/"steps": 300, "steps_per_closure": 10/"epochs": 3, "steps_per_closure": 4/' |
  sed 's/"batch_size": 32/"batch_size": 64, "mode": "sync"/' >"$WORK/job-cluster.json"
run_cluster_job 1 2 "$WORK/model" 120 --job="$WORK/job-cluster.json"
timeout 240 "$BIN/pstrain" train --job="$WORK/job-cluster.json" --threads=1 >"$WORK/train-cluster.out" \
  2>"$WORK/train-cluster.log" || fail "pstrain train of the cluster's job failed: $(tail -n 20 "$WORK/train-cluster.log")"
tail -n 1 "$WORK/train-cluster.out" >"$WORK/train-cluster.json"
python3 - "$WORK/model/summary.json" "$WORK/train-cluster.json" <<'PY' ||
import json, sys
d, t = (json.load(open(p)) for p in sys.argv[1:3])
steps = d.get("global_step", d.get("steps"))
assert steps == 141, steps  # 3 * ceil(3000 / 64)
print("cluster on bags: steps", steps, "test AUC", d["final_test_auc"], "; pstrain train", t["final_test_auc"])
assert d["final_test_auc"] > 0.6, d["final_test_auc"]
assert d["final_test_auc"] >= t["final_test_auc"] - 0.03, (d["final_test_auc"], t["final_test_auc"])
PY
  fail "the cluster did not learn on bags: $(cat "$WORK/model/summary.json")"
# `pstrain evaluate` of the cluster's checkpoint reads the bags as the chief did: the same figures.
"$BIN/pstrain" evaluate --checkpoint="$WORK/model" --format=json >"$WORK/evaluate.json" 2>"$WORK/evaluate.log" ||
  fail "pstrain evaluate failed: $(cat "$WORK/evaluate.log")"
python3 - "$WORK/evaluate.json" "$WORK/model/summary.json" <<'PY' || fail "pstrain evaluate disagrees with the chief"
import json, sys
e, s = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert e["test_examples"] == 400 and e["step"] == s["global_step"], (e, s["global_step"])
assert abs(e["test_auc"] - s["final_test_auc"]) <= 1e-9, (e["test_auc"], s["final_test_auc"])
assert abs(e["test_logloss"] - s["final_test_logloss"]) <= 1e-6 * s["final_test_logloss"], (e, s["final_test_logloss"])
PY

# 5. A Keras model (written by tf.keras) on the same bags: each bag feature feeds an integer input
# of shape (1,), whose Embedding layer combines the bag's rows. `pstrain train` learns, and a sync
# cluster (1 ps, 2 workers) reaches its AUC; `pstrain evaluate` gives the chief's figures.
python3 - "$WORK/job-cluster.json" "$WORK/keras_bags.json" "$WORK/job-keras.json" <<'PY'
import json, sys
job = json.load(open(sys.argv[1]))
job["name"] = "keras-bags"
job["model"] = {"keras_json": sys.argv[2]}
json.dump(job, open(sys.argv[3], "w"))
PY
timeout 240 "$BIN/pstrain" train --job="$WORK/job-keras.json" --threads=2 >"$WORK/train-keras.out" \
  2>"$WORK/train-keras.log" || fail "pstrain train of a Keras model on bags failed: $(tail -n 20 "$WORK/train-keras.log")"
tail -n 1 "$WORK/train-keras.out" >"$WORK/train-keras.json"
run_cluster_job 1 2 "$WORK/keras-model" 120 --job="$WORK/job-keras.json"
"$BIN/pstrain" evaluate --checkpoint="$WORK/keras-model" --format=json >"$WORK/evaluate-keras.json" \
  2>"$WORK/evaluate.log" || fail "pstrain evaluate of the Keras model failed: $(cat "$WORK/evaluate.log")"
python3 - "$WORK/keras-model/summary.json" "$WORK/train-keras.json" "$WORK/evaluate-keras.json" <<'PY' ||
import json, sys
d, t, e = (json.load(open(p)) for p in sys.argv[1:4])
print("Keras model on bags: cluster test AUC", d["final_test_auc"], "; pstrain train", t["final_test_auc"])
assert t["final_test_auc"] > 0.6, t["final_test_auc"]
assert d["final_test_auc"] >= t["final_test_auc"] - 0.03, (d["final_test_auc"], t["final_test_auc"])
assert abs(e["test_auc"] - d["final_test_auc"]) <= 1e-9, (e["test_auc"], d["final_test_auc"])
PY
  fail "the Keras model on bags: $(cat "$WORK/keras-model/summary.json")"

# 6. The bags tags and cats as the two columns of one Keras input: they share its one table
# (tags_cats_emb, 120 x 4); `pstrain train` learns, its checkpoint holds that table and no other
# for them, and `pstrain evaluate` gives train's test figures.
python3 - "$WORK/job-keras.json" "$WORK/keras_shared.json" "$WORK/job-shared.json" <<'PY'
import json, sys
job = json.load(open(sys.argv[1]))
job["name"] = "keras-shared-bags"
job["model"] = {"keras_json": sys.argv[2]}
json.dump(job, open(sys.argv[3], "w"))
PY
timeout 240 "$BIN/pstrain" train --job="$WORK/job-shared.json" --threads=2 --model_dir="$WORK/shared-model" \
  >"$WORK/train-shared.out" 2>"$WORK/train-shared.log" ||
  fail "pstrain train of a Keras model whose bags share a table failed: $(tail -n 20 "$WORK/train-shared.log")"
tail -n 1 "$WORK/train-shared.out" >"$WORK/train-shared.json"
inspect_latest "$WORK/shared-model" "$WORK/inspect-shared.json"
"$BIN/pstrain" evaluate --checkpoint="$WORK/shared-model" --format=json >"$WORK/evaluate-shared.json" \
  2>"$WORK/evaluate.log" || fail "pstrain evaluate of the shared-table model failed: $(cat "$WORK/evaluate.log")"
python3 - "$WORK/train-shared.json" "$WORK/inspect-shared.json" "$WORK/evaluate-shared.json" <<'PY' ||
import json, sys
t, i, e = (json.load(open(p)) for p in sys.argv[1:4])
shapes = {v["name"]: v["shape"] for v in i["variables"]}
tables = sorted(n for n in shapes if n.endswith("/embeddings"))
print("Keras model, bags sharing a table: test AUC", t["final_test_auc"], "; tables", tables)
assert tables == ["C1_emb/embeddings", "tags_cats_emb/embeddings", "words_emb/embeddings"], tables
assert shapes["tags_cats_emb/embeddings"] == [120, 4], shapes["tags_cats_emb/embeddings"]
assert t["final_test_auc"] > 0.6, t["final_test_auc"]
assert abs(e["test_auc"] - t["final_test_auc"]) <= 1e-9, (e["test_auc"], t["final_test_auc"])
assert abs(e["test_logloss"] - t["final_test_logloss"]) <= 1e-6 * t["final_test_logloss"], (e, t)
PY
  fail "the Keras model whose bags share a table: $(cat "$WORK/train-shared.json")"

# 4. A bag's weights that do not match its ids: named.
job mean sqrtn sum "$WORK/bad.tfrecord" | sed 's/"steps": 300/"steps": 3/' >"$WORK/job-bad.json"
expect_exit 2 bad-weights "TFRecord file $WORK/bad.tfrecord, record 4: feature \"tag_w\" \\(the weights of bag \"tags\"\\) has" \
  timeout 120 "$BIN/pstrain" train --job="$WORK/job-bad.json" --threads=1
echo "PASS"
