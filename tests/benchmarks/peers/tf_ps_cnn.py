#!/usr/bin/env python3
"""TensorFlow peer: the seeds' Fashion-MNIST CNN under ParameterServerStrategy with the migration
guide's in-process cluster (this process the chief/coordinator, --workers workers, --ps ps), trained
either with tf_keras Model.fit (Keras 2; Keras 3 has no parameter-server training) or with a custom
loop whose steps ClusterCoordinator.schedule sends to the workers.

    isolated.sh python tf_ps_cnn.py --loop fit|custom [--epochs 1] [--steps N] [--workers 2] [--ps 2]

As pstrain's `cnn` preset: Adam 1e-3, global batch 64 (each worker's steps take whole batches: a
parameter-server step is one worker's), softmax cross-entropy from logits, variables partitioned by
MinSizePartitioner(256 KiB, at most --ps shards), --steps_per_closure steps per scheduled function
(Model.fit: steps_per_execution). Prints progress to stderr and a RESULT line: training examples/s
(training loop: from the first step scheduled to the last one done), wall time, test accuracy
(evaluated on the chief from the trained variables).
"""
import argparse

from tf_common import (Timer, add_ps_cluster_args, cnn, epoch_clock, fmnist_dataset, import_tf_keras, k_step_closure,
                       load_fashion_mnist, log, ps_strategy, result)


def main():
    ap = argparse.ArgumentParser()
    add_ps_cluster_args(ap, loop="fit", ps=2, batch=64)
    ap.add_argument("--steps", type=int, default=0, help="total steps (overrides --epochs)")
    ap.add_argument("--seed", type=int, default=42)
    args = ap.parse_args()
    wall = Timer()
    tf, keras = import_tf_keras()

    tf.keras.utils.set_random_seed(args.seed)
    xtr, ytr, xte, yte = load_fashion_mnist()
    steps_per_epoch = -(-len(xtr) // args.batch)
    total = args.steps or args.epochs * steps_per_epoch
    k = args.steps_per_closure
    total = -(-total // k) * k

    strategy = ps_strategy(tf, args, max_shards=args.ps)
    log("cluster up: %d workers, %d ps (%.1f s)" % (args.workers, args.ps, wall.seconds()))

    def dataset_fn(input_context):
        ds = fmnist_dataset(tf, "train").shuffle(len(xtr), seed=args.seed).repeat()
        ds = ds.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
        return ds.batch(input_context.get_per_replica_batch_size(args.batch)).prefetch(2)

    with strategy.scope():
        model = cnn(keras)
        optimizer = keras.optimizers.Adam(1e-3)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=keras.losses.Reduction.NONE)

    if args.loop == "fit":
        with strategy.scope():
            model.compile(optimizer=optimizer, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                          metrics=["accuracy"], steps_per_execution=k)
        # With --steps: two epochs of half the steps each, the first one warm-up (tracing, the
        # workers' datasets), timed apart as the custom loop's first closure is.
        epochs = max(1, -(-total // steps_per_epoch)) if not args.steps else 2
        per_epoch = total // epochs
        times, clock = epoch_clock(keras)
        t = Timer()
        model.fit(keras.utils.experimental.DatasetCreator(dataset_fn), epochs=epochs, steps_per_epoch=per_epoch,
                  verbose=0, callbacks=[clock])
        fit_s = t.seconds()
        log("fit: epochs of %d steps took %s s" % (per_epoch, ", ".join("%.1f" % x for _, x in times)))
        if args.steps:  # the second epoch only
            train_s, steps = times[-1][1], per_epoch
        else:
            train_s, steps = fit_s, epochs * per_epoch
    else:
        coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
        with strategy.scope():
            train_acc = keras.metrics.SparseCategoricalAccuracy()

        @tf.function
        def per_worker_dataset_fn():
            return strategy.distribute_datasets_from_function(dataset_fn)

        iterator = iter(coordinator.create_per_worker_dataset(per_worker_dataset_fn))

        def replica_fn(x, y):
            with tf.GradientTape() as tape:
                logits = model(x, training=True)
                loss = tf.nn.compute_average_loss(loss_fn(y, logits), global_batch_size=args.batch)
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
            train_acc.update_state(y, logits)
            return loss

        closure = k_step_closure(tf, strategy, k, replica_fn)
        coordinator.schedule(closure, args=(iterator,))  # trace, build the workers' datasets
        coordinator.join()
        log("first closure done (%.1f s)" % wall.seconds())
        t = Timer()
        done = 0
        while done < total:
            chunk = min(steps_per_epoch, total - done)
            for _ in range(chunk // k):
                coordinator.schedule(closure, args=(iterator,))
            coordinator.join()
            done += chunk
            log("custom loop: %d/%d steps, %.1f s, train accuracy %.4f" % (done, total, t.seconds(),
                                                                              train_acc.result().numpy()))
        train_s = t.seconds()
        steps = total

    # Test accuracy on the chief, from the trained (partitioned) variables.
    plain = cnn(keras)
    # A partitioned kernel is one ShardedVariable on its layer (its shards are separate entries
    # of model.trainable_variables); converting it to a tensor concatenates the shards.
    plain.set_weights([tf.convert_to_tensor(w).numpy() for layer in model.layers if hasattr(layer, "kernel")
                       for w in (layer.kernel, layer.bias)])
    logits = plain.predict(xte, batch_size=1000, verbose=0)
    acc = float((logits.argmax(1) == yte).mean())
    ex_s = steps * args.batch / train_s
    log("%s: %d steps of %d in %.1f s: %.0f examples/s; test accuracy %.4f" % (args.loop, steps, args.batch, train_s,
                                                                            ex_s, acc))
    result(peer="tf_ps_cnn", loop=args.loop, tensorflow=tf.__version__, workers=args.workers, ps=args.ps,
           steps=steps, batch=args.batch, train_seconds=train_s, train_examples_per_sec=ex_s, test_accuracy=acc,
           wall_seconds=wall.seconds())


if __name__ == "__main__":
    main()
