#!/usr/bin/env python3
"""TensorFlow peer: the migration guide's linear model (Dense(1), MSE, Adagrad 0.05).

    isolated.sh python tf_linear.py --run ps-fit|ps-custom [--workers 3] [--ps 2]
    python tf_linear.py --run curve --train_csv F --test_csv F --steps N [--kernel 0.1] [--batch 64]

ps-fit: the guide's TF2 program: ParameterServerStrategy over the in-process cluster, the guide's
  three examples shuffled, repeated and batched by 64, Model.fit for 5 epochs of 10 steps (tf_keras),
  then Model.evaluate of the guide's three eval examples for 10 steps.
ps-custom: the same training as a custom loop, each step sent to a worker by
  ClusterCoordinator.schedule.
curve: one worker, no strategy: the loss curve to compare with pstrain's sync mode. The kernel starts
  at the constant --kernel, the bias at 0 (pstrain's job says the same), every step is one batch of
  the whole training CSV (so the order of examples cannot matter), and after each step the test
  MSE is computed. Prints the curve as RESULT {"train_loss": [...], "test_loss": [...]}: train_loss[i]
  is step i+1's batch loss before its update, test_loss[i] the test loss after it.
Adagrad as Keras 2 (tf_keras) has it: initial accumulator 0.1, epsilon 1e-7.
"""
import argparse
import os

import numpy as np

from tf_common import Timer, in_process_cluster, log, result

FEATURES = [[1., 1.5], [2., 2.5], [3., 3.5]]
LABELS = [[0.3], [0.5], [0.7]]
EVAL_FEATURES = [[4., 4.5], [5., 5.5], [6., 6.5]]
EVAL_LABELS = [[0.8], [0.9], [1.]]


def read_csv(path):
    a = np.loadtxt(path, delimiter=",", dtype=np.float64, ndmin=2)
    return a[:, :-1].astype(np.float32), a[:, -1:].astype(np.float32)


def curve(tf, keras, args):
    xtr, ytr = read_csv(args.train_csv)
    xte, yte = read_csv(args.test_csv)
    model = keras.Sequential([keras.layers.Dense(1, kernel_initializer=keras.initializers.Constant(args.kernel),
                                                 bias_initializer="zeros", input_shape=(xtr.shape[1],))])
    optimizer = keras.optimizers.Adagrad(learning_rate=0.05)
    mse = keras.losses.MeanSquaredError()

    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = mse(y, model(x, training=True))
        optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
        return loss

    train_loss, test_loss = [], []
    for _ in range(args.steps):
        train_loss.append(float(step(xtr, ytr)))
        test_loss.append(float(mse(yte, model(xte, training=False))))
    result(peer="tf_linear", run="curve", tensorflow=tf.__version__, steps=args.steps, train_loss=train_loss,
           test_loss=test_loss, kernel=model.layers[0].kernel.numpy().ravel().tolist(),
           bias=model.layers[0].bias.numpy().ravel().tolist())


def on_cluster(tf, keras, args):
    resolver = in_process_cluster(tf, args.workers, args.ps)
    strategy = tf.distribute.ParameterServerStrategy(resolver)

    def dataset_fn(input_context):
        ds = tf.data.Dataset.from_tensor_slices((FEATURES, LABELS)).shuffle(10).repeat()
        return ds.batch(input_context.get_per_replica_batch_size(64))

    with strategy.scope():
        model = keras.Sequential([keras.layers.Dense(1)])
        optimizer = keras.optimizers.Adagrad(learning_rate=0.05)
    t = Timer()
    if args.run == "ps-fit":
        with strategy.scope():
            model.compile(optimizer, loss="mse", steps_per_execution=10)
        model.fit(keras.utils.experimental.DatasetCreator(dataset_fn), epochs=5, steps_per_epoch=10, verbose=0)
    else:
        coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
        iterator = iter(coordinator.create_per_worker_dataset(
            tf.function(lambda: strategy.distribute_datasets_from_function(dataset_fn))))

        @tf.function
        def step(it):
            def replica_fn(x, y):
                with tf.GradientTape() as tape:
                    loss = tf.reduce_mean(tf.square(model(x, training=True) - y))
                optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables),
                                              model.trainable_variables))
                return loss
            x, y = next(it)
            return strategy.run(replica_fn, args=(x, y))

        for _ in range(50):
            coordinator.schedule(step, args=(iterator,))
        coordinator.join()
    train_s = t.seconds()
    w = [tf.convert_to_tensor(v).numpy() for v in model.trainable_variables]
    pred = np.asarray(EVAL_FEATURES, np.float32) @ w[0] + w[1]
    eval_loss = float(np.mean((pred - np.asarray(EVAL_LABELS, np.float32)) ** 2))
    log("%s: 50 steps in %.2f s; eval MSE %.6f" % (args.run, train_s, eval_loss))
    result(peer="tf_linear", run=args.run, tensorflow=tf.__version__, workers=args.workers, ps=args.ps, steps=50,
           train_seconds=train_s, eval_loss=eval_loss)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--run", choices=["ps-fit", "ps-custom", "curve"], default="ps-fit")
    ap.add_argument("--workers", type=int, default=3)
    ap.add_argument("--ps", type=int, default=2)
    ap.add_argument("--train_csv")
    ap.add_argument("--test_csv")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--kernel", type=float, default=0.1)
    args = ap.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf
    import tf_keras as keras
    tf.keras.utils.set_random_seed(42)
    if args.run == "curve":
        curve(tf, keras, args)
    else:
        on_cluster(tf, keras, args)


if __name__ == "__main__":
    main()
