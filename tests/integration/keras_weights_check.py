"""Real Keras against pstrain's Keras weight files (keras_weights_test.sh).

  python keras_weights_check.py keras3|keras2 DIR TOOL

Builds the models and writes NAME.json (to_json) and Keras's own save_weights file; runs TOOL
(keras_weights_tool: pstrain reads that file and writes NAME.pstrain.weights.h5, Keras 3 only, and
NAME.pstrain.h5); loads pstrain's files into the model rebuilt from its JSON and compares every weight.

keras3: Keras 3 (KERAS_BACKEND=jax), its .weights.h5 layout. keras2: TensorFlow 2.15's tf.keras,
the legacy .h5 layout (a Cross model too when tensorflow_recommenders imports).
Every weight must equal Keras's saved value + 0.5 * (1 + the rank of its name among the model's
variable names in sorted order) exactly (float32), the shift keras_weights_tool applies, so a value
read into or written from another variable fails. Exits non-zero otherwise.
"""
import os
import subprocess
import sys

import numpy as np

FLAVOR, OUT, TOOL = sys.argv[1], sys.argv[2], sys.argv[3]
if FLAVOR == "keras2":
    import tensorflow as tf
    keras = tf.keras
else:
    import keras
L = keras.layers


def models():
    out = {}
    # A Sequential MLP: two Dense layers (Keras 3 names their groups dense, dense_1), a Dropout.
    out["mlp"] = keras.Sequential([keras.Input(shape=(6,)), L.Dense(8, activation="relu"), L.Dropout(0.25),
                                   L.Dense(5), L.Dense(3, activation="softmax")], name="mlp")
    # A CNN.
    img = keras.Input(shape=(9, 8, 3), name="image")
    c = L.Conv2D(4, 3, strides=2, padding="same", activation="relu", name="conv_a")(img)
    c = L.Conv2D(5, (2, 3), use_bias=False, name="conv_b")(c)
    c = L.MaxPooling2D(name="pool")(c)
    out["cnn"] = keras.Model(img, L.Dense(3, name="classes")(L.Flatten(name="flat")(c)))
    # Normalizations: BatchNormalization's four (two not trainable), LayerNormalization's two.
    x_in = keras.Input(shape=(7,), name="x")
    x = L.BatchNormalization(name="bn")(x_in)
    x = L.Dense(6, name="hidden")(x)
    x = L.LayerNormalization(name="ln")(x)
    x = L.BatchNormalization(name="bn2", center=False)(x)
    out["norms"] = keras.Model(x_in, L.Dense(2, name="head")(x))
    # Embedding with two inputs (two InputLayer groups in Keras 3).
    ids = keras.Input(shape=(5,), dtype="int32", name="ids")
    dense = keras.Input(shape=(3,), name="dense_in")
    e = L.Flatten(name="flat")(L.Embedding(11, 4, name="emb")(ids))
    merged = L.Concatenate(name="cat")([e, L.Dense(4, name="proj")(dense)])
    out["emb"] = keras.Model([ids, dense], L.Dense(1, name="score")(merged))
    if FLAVOR == "keras2":
        try:
            import tensorflow_recommenders as tfrs
        except ImportError:
            print("note: tensorflow_recommenders does not import; the Cross model is left out")
        else:
            f = keras.Input(shape=(6,), name="features")
            c1 = tfrs.layers.dcn.Cross(name="cross_full")(f)
            c2 = tfrs.layers.dcn.Cross(projection_dim=2, name="cross_low")(f, c1)
            out["cross"] = keras.Model(f, L.Dense(1, name="out")(c2))
    return out


def weight_file(name, who):
    if who == "keras":
        return os.path.join(OUT, name + (".weights.h5" if FLAVOR == "keras3" else ".h5"))
    return os.path.join(OUT, name + ".pstrain" + (".weights.h5" if who == "pstrain3" else ".h5"))


def var_name(w, model):
    # pstrain's names: Keras 3's path without a Sequential model's own name in front; Keras 2's
    # name without ":0".
    name = w.path if FLAVOR == "keras3" else w.name
    if name.startswith(model.name + "/"):
        name = name[len(model.name) + 1:]
    return name.split(":")[0]


def make(built):
    rng = np.random.default_rng(11)
    for name, model in built.items():
        saved = {}
        for w in model.weights:
            value = rng.uniform(-1, 1, size=tuple(w.shape)).astype("float32")
            w.assign(value)
            saved[var_name(w, model)] = value
        assert len(saved) == len(model.weights), "two weights with one name"
        with open(os.path.join(OUT, name + ".json"), "w") as f:
            f.write(model.to_json())
        model.save_weights(weight_file(name, "keras"))
        np.savez(os.path.join(OUT, name + ".saved.npz"), **saved)
        with open(os.path.join(OUT, name + ".names"), "w") as f:
            f.write("\n".join(saved))
    print("made", FLAVOR, "models in", OUT)


def run_pstrain(names):
    for name in names:
        # A Keras 2 model's JSON does not load in Keras 3: only the legacy layout for it.
        out3 = os.path.join(OUT, name + ".pstrain.weights.h5") if FLAVOR == "keras3" else "-"
        subprocess.run([TOOL, os.path.join(OUT, name + ".json"), weight_file(name, "keras"), out3,
                        os.path.join(OUT, name + ".pstrain.h5")], check=True, timeout=60)


def check(names):
    failures = 0
    checked = 0
    for name in names:
        with open(os.path.join(OUT, name + ".json")) as f:
            text = f.read()
        saved = np.load(os.path.join(OUT, name + ".saved.npz"))
        shift = {n: np.float32(0.5 * (1 + rank)) for rank, n in enumerate(sorted(saved.files))}
        whos = ["pstrain3", "pstrain2"] if FLAVOR == "keras3" else ["pstrain2"]
        for who in whos:
            custom = {}
            if name == "cross":
                import tensorflow_recommenders as tfrs
                custom = {"Cross": tfrs.layers.dcn.Cross}
            model = keras.models.model_from_json(text, custom_objects=custom)
            for w in model.weights:  # not the expected values, so a weight left unloaded shows
                w.assign(np.zeros(tuple(w.shape), "float32"))
            path = weight_file(name, who)
            model.load_weights(path)
            # By position: Keras 2 names a nested layer's weights (Cross's inner Dense) from a
            # process-wide counter, so the model rebuilt here may name them otherwise.
            with open(os.path.join(OUT, name + ".names")) as f:
                order = f.read().split("\n")
            loaded = []
            for i, w in enumerate(model.weights):
                n = order[i] if i < len(order) else var_name(w, model)
                loaded.append(n)
                got = np.asarray(w.numpy() if hasattr(w, "numpy") else w)
                want = saved[n] + shift[n] if n in saved.files else None
                if want is None or got.shape != want.shape or not np.array_equal(got, want):
                    print(f"FAIL {path}: weight {n}: not the expected values", file=sys.stderr)
                    failures += 1
                checked += 1
            if sorted(loaded) != sorted(saved.files):
                print(f"FAIL {path}: weights {sorted(loaded)}, expected {sorted(saved.files)}", file=sys.stderr)
                failures += 1
    print(f"{FLAVOR}: checked {checked} weights, {failures} failures")
    sys.exit(1 if failures or checked == 0 else 0)


built = models()
if len(built) < 4:
    sys.exit(f"FAIL: only {len(built)} models built")
make(built)
run_pstrain(sorted(built))
check(sorted(built))
