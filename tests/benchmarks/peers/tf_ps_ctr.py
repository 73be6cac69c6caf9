#!/usr/bin/env python3
"""TensorFlow peer: pstrain's `ctr` preset written in Keras 2 (tf_keras) under
ParameterServerStrategy, the in-process cluster of the migration guide (this process the chief,
--workers workers, --ps ps), trained by a custom loop of ClusterCoordinator.schedule or Model.fit.

    isolated.sh python tf_ps_ctr.py --train F --test F [--loop custom|fit] [--epochs 1] [--workers 2] [--ps 1]

The model of common/config/job_presets.cc "ctr": 26 Embedding tables of 100,000 x 16 (Keras
'uniform' init), concatenated with the 13 numeric inputs, Dense 512 relu, Dense 256 relu, Dense 1
(glorot kernels, zero biases), sigmoid cross-entropy from the logit (mean over the batch); Adagrad lr
0.02, initial accumulator 1e-6, epsilon 1e-7 on every variable (the tables' gradients are sparse:
IndexedSlices, applied to the rows touched); batch 1024; variables partitioned with the preset's
partitioner, MinSizePartitioner(256 KiB, at most 2 shards) (TensorFlow's shards are contiguous row
ranges; pstrain's preset places rows by id mod shards). The files are parsed on the chief (not
timed) into one fixed-length binary record per example, which each worker's dataset reads itself.
Prints a RESULT line: training examples/s (after a warm-up closure), wall time, test AUC and log loss
(computed on the chief from the trained variables).
"""
import argparse
import os
import tempfile

import numpy as np

import ctr_data
from tf_common import Timer, add_ps_cluster_args, epoch_clock, import_tf_keras, k_step_closure, log, ps_strategy, result

TABLE, DIM = 100000, 16


def build(keras, ids_dtype="int64"):
    L = keras.layers
    numeric = keras.Input((ctr_data.NUM_DENSE,), name="numeric")
    ids = keras.Input((ctr_data.NUM_CAT,), dtype=ids_dtype, name="ids")
    embedded = [L.Flatten()(L.Embedding(TABLE, DIM, embeddings_initializer="uniform")(ids[:, f:f + 1]))
                for f in range(ctr_data.NUM_CAT)]
    x = L.Concatenate()(embedded + [numeric])
    x = L.Dense(512, activation="relu")(x)
    x = L.Dense(256, activation="relu")(x)
    return keras.Model([numeric, ids], L.Dense(1)(x))


def write_records(path, numeric, ids, labels):
    rec = np.concatenate([labels[:, None], numeric, ids.astype(np.float32)], axis=1).astype(np.float32)
    rec.tofile(path)  # ids < 2^24: exact in float32
    return rec.shape[1] * 4


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--train", required=True)
    ap.add_argument("--test", required=True)
    add_ps_cluster_args(ap, loop="custom", ps=1, batch=1024)
    args = ap.parse_args()
    wall = Timer()
    tf, keras = import_tf_keras()
    tf.keras.utils.set_random_seed(42)

    t = Timer()
    xtr, ctr, ytr = ctr_data.load(args.train)
    xte, cte, yte = ctr_data.load(args.test)
    tmp = tempfile.mkdtemp(prefix="pstrain-tf-ctr-")
    width = write_records(os.path.join(tmp, "train.bin"), xtr, ctr, ytr)
    log("parsed %d train / %d test examples in %.1f s" % (len(ytr), len(yte), t.seconds()))
    k = args.steps_per_closure
    steps = args.epochs * (len(ytr) // args.batch) // k * k  # whole closures of full batches

    strategy = ps_strategy(tf, args, max_shards=2)
    train_file = os.path.join(tmp, "train.bin")

    def dataset_fn(input_context):
        ds = tf.data.FixedLengthRecordDataset(train_file, width).cache().shuffle(len(ytr)).repeat()
        ds = ds.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
        ds = ds.batch(input_context.get_per_replica_batch_size(args.batch), drop_remainder=True)

        def split(raw):
            v = tf.reshape(tf.io.decode_raw(raw, tf.float32), [-1, width // 4])
            return ((v[:, 1:1 + ctr_data.NUM_DENSE], tf.cast(v[:, 1 + ctr_data.NUM_DENSE:], tf.int64)), v[:, :1])
        return ds.map(split).prefetch(2)

    with strategy.scope():
        model = build(keras)
        optimizer = keras.optimizers.Adagrad(0.02, initial_accumulator_value=1e-6, epsilon=1e-7)
    bce = keras.losses.BinaryCrossentropy(from_logits=True, reduction=keras.losses.Reduction.NONE)

    if args.loop == "fit":
        with strategy.scope():
            model.compile(optimizer, loss=keras.losses.BinaryCrossentropy(from_logits=True), steps_per_execution=k)
        times, clock = epoch_clock(keras)
        model.fit(keras.utils.experimental.DatasetCreator(dataset_fn), epochs=2, steps_per_epoch=k, verbose=0)  # warm-up
        model.fit(keras.utils.experimental.DatasetCreator(dataset_fn), epochs=1, steps_per_epoch=steps, verbose=0,
                  callbacks=[clock])
        train_s = times[-1][1]
    else:
        coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
        iterator = iter(coordinator.create_per_worker_dataset(
            tf.function(lambda: strategy.distribute_datasets_from_function(dataset_fn))))

        def replica_fn(x, y):
            with tf.GradientTape() as tape:
                loss = tf.nn.compute_average_loss(bce(y, model(x, training=True)), global_batch_size=args.batch)
            optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
            return loss

        closure = k_step_closure(tf, strategy, k, replica_fn)

        coordinator.schedule(closure, args=(iterator,))  # warm-up: tracing, the workers' datasets
        coordinator.join()
        log("warm-up closure done (%.1f s)" % wall.seconds())
        t = Timer()
        for _ in range(steps // k):
            coordinator.schedule(closure, args=(iterator,))
        coordinator.join()
        train_s = t.seconds()

    # Test AUC on the chief from the trained variables (a partitioned table reads back whole).
    plain = build(keras)
    src = [l for l in model.layers if l.weights]
    dst = [l for l in plain.layers if l.weights]
    for a, b in zip(src, dst):
        b.set_weights([tf.convert_to_tensor(w).numpy() for w in
                       ((a.embeddings,) if hasattr(a, "embeddings") else (a.kernel, a.bias))])
    logits = plain.predict([xte, cte], batch_size=8192, verbose=0).ravel()
    p = 1.0 / (1.0 + np.exp(-logits))
    ex_s = steps * args.batch / train_s
    test_auc, test_ll = ctr_data.auc(p, yte), ctr_data.logloss(p, yte)
    log("%s: %d steps of %d in %.1f s: %.0f examples/s; test AUC %.4f, log loss %.4f" %
        (args.loop, steps, args.batch, train_s, ex_s, test_auc, test_ll))
    result(peer="tf_ps_ctr", loop=args.loop, tensorflow=tf.__version__, workers=args.workers, ps=args.ps, steps=steps,
           batch=args.batch, train_seconds=train_s, train_examples_per_sec=ex_s, test_auc=test_auc,
           test_logloss=test_ll, wall_seconds=wall.seconds())


if __name__ == "__main__":
    main()
