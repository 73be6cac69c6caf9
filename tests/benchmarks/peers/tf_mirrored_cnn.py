#!/usr/bin/env python3
"""TensorFlow peer: the custom-training guide. The seeds' Fashion-MNIST CNN in a custom loop under
MirroredStrategy: per-example losses summed and divided by the GLOBAL batch
(tf.nn.compute_average_loss), Adam, 64 examples per replica, the data iterated inside a
tf.function, test loss and accuracy after every epoch.

    python tf_mirrored_cnn.py [--epochs 10] [--steps N] [--cpus 1]

--cpus N splits the CPU into N logical devices (one replica each); the default, 1, is what the
guide gets on a machine without a GPU. --steps limits the steps of each epoch (for a short
measurement). Prints one line per epoch and a RESULT line: training examples/s over the training
loops only, wall time, final test accuracy.
"""
import argparse
import os

from tf_common import Timer, cnn, fmnist_dataset, log, result


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--steps", type=int, default=0, help="steps per epoch (0: the whole training set)")
    ap.add_argument("--cpus", type=int, default=1)
    ap.add_argument("--seed", type=int, default=42)
    args = ap.parse_args()
    wall = Timer()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf
    import tf_keras as keras

    if args.cpus > 1:
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * args.cpus)
    tf.keras.utils.set_random_seed(args.seed)
    strategy = tf.distribute.MirroredStrategy()
    global_batch = 64 * strategy.num_replicas_in_sync
    train = fmnist_dataset(tf, "train").shuffle(60000, seed=args.seed).batch(global_batch)
    test = fmnist_dataset(tf, "test").batch(global_batch)
    if args.steps:
        train = train.take(args.steps)
    train_dist = strategy.experimental_distribute_dataset(train)
    test_dist = strategy.experimental_distribute_dataset(test)

    with strategy.scope():
        loss_object = keras.losses.SparseCategoricalCrossentropy(from_logits=True,
                                                                 reduction=keras.losses.Reduction.NONE)
        model = cnn(keras)
        optimizer = keras.optimizers.Adam()
        test_loss = keras.metrics.Mean()
        train_acc = keras.metrics.SparseCategoricalAccuracy()
        test_acc = keras.metrics.SparseCategoricalAccuracy()

    def train_step(x, y):
        with tf.GradientTape() as tape:
            logits = model(x, training=True)
            loss = tf.nn.compute_average_loss(loss_object(y, logits), global_batch_size=global_batch)
        optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
        train_acc.update_state(y, logits)
        return loss

    def test_step(x, y):
        logits = model(x, training=False)
        test_loss.update_state(loss_object(y, logits))
        test_acc.update_state(y, logits)

    @tf.function
    def train_epoch(ds):  # the dataset iterated inside the tf.function
        total, batches, examples = 0.0, 0.0, 0
        for x, y in ds:
            total += strategy.reduce(tf.distribute.ReduceOp.SUM, strategy.run(train_step, args=(x, y)), axis=None)
            batches += 1.0
            examples += tf.shape(y.values[0] if hasattr(y, "values") else y)[0] * strategy.num_replicas_in_sync
        return total / batches, examples

    @tf.function
    def test_epoch(ds):
        for x, y in ds:
            strategy.run(test_step, args=(x, y))

    train_seconds, examples, acc = 0.0, 0, 0.0
    for epoch in range(1, args.epochs + 1):
        t = Timer()
        loss, n = train_epoch(train_dist)
        secs = t.seconds()
        train_seconds += secs
        examples += int(n)
        test_epoch(test_dist)
        acc = float(test_acc.result())
        log("epoch %d: loss %.4f, train accuracy %.4f, test loss %.4f, test accuracy %.4f, %.1f s, %.0f examples/s"
            % (epoch, float(loss), float(train_acc.result()), float(test_loss.result()), acc, secs, int(n) / secs))
        for m in (test_loss, train_acc, test_acc):
            m.reset_states()
    result(peer="tf_mirrored_cnn", tensorflow=tf.__version__, replicas=strategy.num_replicas_in_sync,
           epochs=args.epochs, examples=examples, train_seconds=train_seconds,
           train_examples_per_sec=examples / train_seconds, test_accuracy=acc, wall_seconds=wall.seconds())


if __name__ == "__main__":
    main()
