#!/usr/bin/env python3
"""TensorFlow peer: the Core API + DTensor guide. A data-parallel MLP written with low-level ops
(tf.Module dense layers whose weights are dtensor.DVariables replicated over a one-axis "batch"
mesh, a hand-written Adam, the batch split over the mesh by dtensor.pack) on 8 virtual CPU devices.

    python tf_dtensor_mlp.py [--devices 8] [--epochs 3] [--train 5000] [--test 5000]

The guide loads MNIST through tensorflow_datasets (a download); this peer reads Debian's
Fashion-MNIST, the first --train training and --test test images as the guide slices them, batch
128, 3 epochs, Adam 1e-3. Layers 784 -> 700 -> 500 -> 10 (pstrain's `mlp` preset; the guide's code
reassigns its second hidden size to 10 by a typo, giving 784 -> 700 -> 10 -> 10). Prints per-epoch
train/test loss and accuracy and a RESULT line with training examples/s.
"""
import argparse
import os

from tf_common import Timer, load_fashion_mnist, log, result


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--devices", type=int, default=8)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--train", type=int, default=5000)
    ap.add_argument("--test", type=int, default=5000)
    ap.add_argument("--batch", type=int, default=128)
    args = ap.parse_args()
    wall = Timer()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf
    from tensorflow.experimental import dtensor

    tf.random.set_seed(22)
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * args.devices)
    mesh = dtensor.create_mesh([("batch", args.devices)], devices=["CPU:%d" % i for i in range(args.devices)])
    replicated = dtensor.Layout([dtensor.UNSHARDED, dtensor.UNSHARDED], mesh)

    class DenseLayer(tf.Module):
        def __init__(self, in_dim, out_dim, layout, activation=tf.identity):
            super().__init__()
            self.activation = activation
            lim = tf.sqrt(6.0) / tf.sqrt(float(in_dim + out_dim))
            self.w = dtensor.DVariable(dtensor.call_with_layout(
                tf.function(tf.random.stateless_uniform), layout, shape=(in_dim, out_dim), seed=(22, 23),
                minval=-lim, maxval=lim))
            self.b = dtensor.DVariable(dtensor.call_with_layout(tf.zeros, layout.delete([0]), shape=[out_dim]))

        def __call__(self, x):
            return self.activation(tf.add(tf.matmul(x, self.w), self.b))

    class MLP(tf.Module):
        def __init__(self, layers):
            self.layers = layers

        def __call__(self, x):
            for layer in self.layers:
                x = layer(x)
            return x

    class Adam(tf.Module):
        def __init__(self, model_vars, learning_rate=1e-3, beta_1=0.9, beta_2=0.999, ep=1e-7):
            self.model_vars, self.lr, self.b1, self.b2, self.ep = model_vars, learning_rate, beta_1, beta_2, ep
            # The step count as a replicated scalar DVariable: the bias correction inside the tf.function.
            self.t = dtensor.DVariable(dtensor.call_with_layout(tf.ones, dtensor.Layout.replicated(mesh, rank=0),
                                                                shape=[]))
            self.v = [dtensor.DVariable(dtensor.call_with_layout(tf.zeros, v.layout, shape=v.shape)) for v in model_vars]
            self.s = [dtensor.DVariable(dtensor.call_with_layout(tf.zeros, v.layout, shape=v.shape)) for v in model_vars]

        def apply_gradients(self, grads):
            t = self.t.read_value()
            for g, var, v, s in zip(grads, self.model_vars, self.v, self.s):
                v.assign(self.b1 * v + (1 - self.b1) * g)
                s.assign(self.b2 * s + (1 - self.b2) * tf.square(g))
                var.assign_sub(self.lr * ((v / (1 - self.b1 ** t)) / (tf.sqrt(s / (1 - self.b2 ** t)) + self.ep)))
            self.t.assign_add(1.0)

    model = MLP([DenseLayer(784, 700, replicated, tf.nn.relu), DenseLayer(700, 500, replicated, tf.nn.relu),
                 DenseLayer(500, 10, replicated)])
    optimizer = Adam(model.trainable_variables)

    def loss_fn(y_pred, y):
        return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=y_pred))

    def accuracy(y_pred, y):
        return tf.reduce_mean(tf.cast(tf.equal(y, tf.argmax(y_pred, axis=1)), tf.float32))

    def repack(x, layout):  # single client: split along the sharded axis, one piece per device
        x = tf.convert_to_tensor(x)
        return dtensor.pack(tf.split(x, args.devices, axis=0), layout)

    x_layout = dtensor.Layout(["batch", dtensor.UNSHARDED], mesh)
    y_layout = dtensor.Layout(["batch"], mesh)

    @tf.function
    def train_step(x, y):
        with tf.GradientTape() as tape:
            y_pred = model(x)
            loss = loss_fn(y_pred, y)
        optimizer.apply_gradients(tape.gradient(loss, model.trainable_variables))
        return loss, accuracy(y_pred, y)

    @tf.function
    def test_step(x, y):
        y_pred = model(x)
        return loss_fn(y_pred, y), accuracy(y_pred, y)

    xtr, ytr, xte, yte = load_fashion_mnist()
    xtr, ytr = xtr[:args.train].reshape(-1, 784), ytr[:args.train]
    xte, yte = xte[:args.test].reshape(-1, 784), yte[:args.test]
    b = args.batch // args.devices * args.devices  # the mesh splits every batch evenly
    train_s, examples = 0.0, 0
    for epoch in range(args.epochs):
        t = Timer()
        tr = [train_step(repack(xtr[i:i + b], x_layout), repack(ytr[i:i + b], y_layout))
              for i in range(0, len(ytr) - b + 1, b)]
        secs = t.seconds()
        train_s += secs
        examples += len(tr) * b
        te = [test_step(repack(xte[i:i + b], x_layout), repack(yte[i:i + b], y_layout))
              for i in range(0, len(yte) - b + 1, b)]
        mean = lambda rows, j: float(sum(float(r[j]) for r in rows) / len(rows))
        log("epoch %d: train loss %.3f accuracy %.3f, test loss %.3f accuracy %.3f, %.1f s" %
            (epoch, mean(tr, 0), mean(tr, 1), mean(te, 0), mean(te, 1), secs))
    result(peer="tf_dtensor_mlp", tensorflow=tf.__version__, devices=args.devices, epochs=args.epochs,
           train_seconds=train_s, train_examples_per_sec=examples / train_s, test_accuracy=mean(te, 1),
           wall_seconds=wall.seconds())


if __name__ == "__main__":
    main()
