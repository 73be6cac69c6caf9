"""The Keras side of keras_dynamic_export_test.sh: a Keras user's view of `pstrain export` of a
model with dynamic tables. The export is WEIGHTS (a Keras weights file), WEIGHTS.json (the model,
its dynamic Embedding layers' input_dim = keys + 1) and WEIGHTS.<input>.keys.npy (an id input's
keys, ascending). Ids map to Embedding rows as the README says: keys[i] -> i + 1, any other id -> 0.
Criteo TSV is read as pstrain reads it for a dynamic table: numeric log(1 + n) for n > 0, else 0;
an id is its hex value as a 64-bit pattern (empty = 0).

  dynamic_export_check.py WEIGHTS TSV    prints {"test_loss", "known_ids"} as JSON
  dynamic_export_check.py WEIGHTS TSV --known_lines=OUT
                                         writes TSV's lines whose ids all have rows to OUT and
                                         prints {"lines", "kept"}: async workers each read their
                                         own part of the data, and a faster one may start its
                                         next epoch before a slower one ends its part, so a
                                         line's ids may never have been pushed

Keras 3 (`*.weights.h5`, JAX backend) maps ids with np.searchsorted; tf.keras 2.15 (a Keras 2 `.h5`)
with keras.layers.IntegerLookup(vocabulary=keys), checked against np.searchsorted first.
"""
import glob
import json
import math
import os
import sys

import numpy as np

from keras_json_refs import embedding_input_dims

WEIGHTS, TSV = sys.argv[1], sys.argv[2]
KNOWN_LINES = sys.argv[3][len("--known_lines="):] if len(sys.argv) > 3 else None
KERAS3 = WEIGHTS.endswith(".weights.h5")
if KERAS3:
    os.environ.setdefault("KERAS_BACKEND", "jax")
    import keras
else:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf
    keras = tf.keras



with open(WEIGHTS + ".json") as f:
    doc = json.load(f)
model = keras.models.model_from_json(json.dumps(doc))
model.load_weights(WEIGHTS)

inputs = [entry[0] for entry in doc["config"]["input_layers"]]
dtypes = {}
for layer in doc["config"]["layers"]:
    if layer["class_name"] == "InputLayer":
        dtypes[layer["config"]["name"]] = layer["config"]["dtype"]
id_inputs = [name for name in inputs if "int" in str(dtypes[name])]
input_dims = embedding_input_dims(doc)  # id input -> the input_dim of the Embedding layers it feeds
numeric_inputs = [name for name in inputs if name not in id_inputs]
assert len(numeric_inputs) == 1, numeric_inputs
width = model.get_layer(numeric_inputs[0]).output.shape[-1]

labels, numeric, ids, lines = [], [], [], []
with open(TSV) as f:
    for line in f:
        lines.append(line)
        cols = line.rstrip("\n").split("\t")
        labels.append(float(cols[0]))
        numeric.append([math.log1p(int(t)) if t and int(t) > 0 else 0.0 for t in cols[1:1 + width]])
        row = []
        for t in cols[1 + width:1 + width + len(id_inputs)]:
            v = int(t, 16) % 2**64 if t else 0
            row.append(v - 2**64 if v >= 2**63 else v)
        ids.append(row)
ids = np.array(ids, dtype=np.int64)

if KNOWN_LINES is not None:
    keep = np.ones(len(lines), dtype=bool)
    for k, name in enumerate(id_inputs):
        path = f"{WEIGHTS}.{name}.keys.npy"
        if os.path.exists(path):
            keep &= np.isin(ids[:, k], np.load(path))
    with open(KNOWN_LINES, "w") as f:
        f.writelines(line for line, kept in zip(lines, keep) if kept)
    print(json.dumps({"lines": len(lines), "kept": int(np.count_nonzero(keep))}))
    sys.exit(0)
y = np.array(labels, dtype=np.float64).reshape(-1, 1)

feed, known, total = {numeric_inputs[0]: np.array(numeric, dtype=np.float32)}, 0, 0
for k, name in enumerate(id_inputs):
    column = ids[:, k]
    path = f"{WEIGHTS}.{name}.keys.npy"
    if not os.path.exists(path):  # an input whose tables are not dynamic: the id modulo input_dim
        feed[name] = (column.astype(np.uint64) % np.uint64(input_dims[name])).reshape(-1, 1).astype(np.int32)
        continue
    keys = np.load(path)
    assert keys.dtype == np.int64 and np.all(np.diff(keys) > 0), path
    at = np.minimum(np.searchsorted(keys, column), len(keys) - 1)
    rows = np.where(keys[at] == column, at + 1, 0)
    if not KERAS3:
        lookup = keras.layers.IntegerLookup(vocabulary=keys)
        by_keras = np.asarray(lookup(column)).astype(np.int64)
        assert np.array_equal(by_keras, rows), "IntegerLookup and np.searchsorted map ids differently"
    known += int(np.count_nonzero(rows))
    total += len(rows)
    feed[name] = rows.reshape(-1, 1).astype(np.int32)
assert total > 0, f"no keys files beside {WEIGHTS}: {glob.glob(WEIGHTS + '.*')}"

out = np.asarray(model.predict([feed[name] for name in inputs], verbose=0), dtype=np.float64)
if getattr(model.layers[-1], "activation", None) is keras.activations.sigmoid:
    p = np.clip(out, 1e-7, 1 - 1e-7)
    loss = float(np.mean(-(y * np.log(p) + (1 - y) * np.log(1 - p))))
else:
    loss = float(np.mean(np.maximum(out, 0) - out * y + np.log1p(np.exp(-np.abs(out)))))
print(json.dumps({"test_loss": loss, "known_ids": known / total}))
