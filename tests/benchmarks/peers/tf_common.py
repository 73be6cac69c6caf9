"""Shared by the TensorFlow peers: the Fashion-MNIST files, the seeds' CNN, the guide's in-process
parameter-server cluster, and the RESULT line every peer ends with.

The in-process cluster's servers are TensorFlow's gRPC servers, which bind every interface
(0.0.0.0); the peers that start one refuse to run outside a network namespace of their own whose
only interface is loopback (run them through peers/isolated.sh, as the benchmark scripts do).
"""
import gzip
import json
import os
import socket
import sys
import time

import numpy as np

FMNIST_DIR = "/usr/share/datasets/fashion-mnist"  # Debian's dataset-fashion-mnist


def log(*args):
    print(*args, file=sys.stderr, flush=True)


def load_fashion_mnist(data_dir=FMNIST_DIR):
    """(x_train [60000,28,28,1] float32 in [0,1], y_train int64, x_test, y_test), as Keras's loader
    gives them scaled the way the guide does (/ 255)."""
    def idx(name, offset):
        with gzip.open(os.path.join(data_dir, name), "rb") as f:
            return np.frombuffer(f.read(), np.uint8, offset=offset)
    xtr = idx("train-images-idx3-ubyte.gz", 16).reshape(-1, 28, 28, 1).astype(np.float32) / 255.0
    ytr = idx("train-labels-idx1-ubyte.gz", 8).astype(np.int64)
    xte = idx("t10k-images-idx3-ubyte.gz", 16).reshape(-1, 28, 28, 1).astype(np.float32) / 255.0
    yte = idx("t10k-labels-idx1-ubyte.gz", 8).astype(np.int64)
    return xtr, ytr, xte, yte


def fmnist_dataset(tf, split="train", data_dir=FMNIST_DIR):
    """The split as a tf.data pipeline reading the IDX files itself (FixedLengthRecordDataset over
    the gzip files), cached after the first pass: what a worker builds in its own dataset_fn,
    instead of the arrays captured as constants in every worker's graph."""
    prefix = "train" if split == "train" else "t10k"
    images = tf.data.FixedLengthRecordDataset(os.path.join(data_dir, prefix + "-images-idx3-ubyte.gz"), 784,
                                              header_bytes=16, compression_type="GZIP")
    labels = tf.data.FixedLengthRecordDataset(os.path.join(data_dir, prefix + "-labels-idx1-ubyte.gz"), 1,
                                              header_bytes=8, compression_type="GZIP")
    images = images.map(lambda r: tf.reshape(tf.cast(tf.io.decode_raw(r, tf.uint8), tf.float32) / 255.0, [28, 28, 1]))
    labels = labels.map(lambda r: tf.cast(tf.io.decode_raw(r, tf.uint8)[0], tf.int64))
    return tf.data.Dataset.zip((images, labels)).cache()


def cnn(keras):
    """The seeds' CNN (the same layers as pstrain's `cnn` preset); logits out."""
    L = keras.layers
    return keras.Sequential([
        L.Conv2D(32, 3, activation="relu", input_shape=(28, 28, 1)),
        L.MaxPooling2D(),
        L.Conv2D(64, 3, activation="relu"),
        L.MaxPooling2D(),
        L.Flatten(),
        L.Dense(64, activation="relu"),
        L.Dense(10),
    ])


def only_loopback():
    """True when this process's network namespace has no interface but loopback."""
    names = [n for _, n in socket.if_nameindex()]
    return names == ["lo"]


def free_ports(n):
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def in_process_cluster(tf, num_workers, num_ps, worker_threads=1):
    """The migration guide's create_in_process_cluster: num_workers worker and num_ps ps servers in
    this process on localhost ports; this process is the chief (coordinator). Returns the cluster
    resolver."""
    if not only_loopback():
        raise SystemExit("TensorFlow's servers bind 0.0.0.0: run this peer in a loopback-only network "
                         "namespace (tests/benchmarks/peers/isolated.sh)")
    ports = free_ports(num_workers + num_ps)
    cluster = {"worker": ["localhost:%d" % p for p in ports[:num_workers]],
               "ps": ["localhost:%d" % p for p in ports[num_workers:]]}
    spec = tf.train.ClusterSpec(cluster)
    worker_config = tf.compat.v1.ConfigProto()
    worker_config.intra_op_parallelism_threads = worker_threads
    worker_config.inter_op_parallelism_threads = 4  # the guide: workers need some inter-op threads
    for i in range(num_workers):
        tf.distribute.Server(spec, job_name="worker", task_index=i, config=worker_config, protocol="grpc")
    for i in range(num_ps):
        tf.distribute.Server(spec, job_name="ps", task_index=i, protocol="grpc")
    return tf.distribute.cluster_resolver.SimpleClusterResolver(spec, rpc_layer="grpc")


def add_ps_cluster_args(ap, loop, ps, batch):
    """The flags every ParameterServerStrategy peer takes, with the peer's defaults."""
    ap.add_argument("--loop", choices=["fit", "custom"], default=loop)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--ps", type=int, default=ps)
    ap.add_argument("--worker_threads", type=int, default=1)
    ap.add_argument("--steps_per_closure", type=int, default=10)
    ap.add_argument("--batch", type=int, default=batch)


def import_tf_keras():
    """TensorFlow and Keras 2 (tf_keras: Keras 3 has no parameter-server training), quietly."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf
    import tf_keras as keras
    return tf, keras


def ps_strategy(tf, args, max_shards):
    """ParameterServerStrategy over in_process_cluster, variables partitioned as pstrain's presets
    are: MinSizePartitioner(256 KiB, at most max_shards shards)."""
    resolver = in_process_cluster(tf, args.workers, args.ps, args.worker_threads)
    partitioner = tf.distribute.experimental.partitioners.MinSizePartitioner(
        min_shard_bytes=256 << 10, max_shards=max_shards)
    return tf.distribute.ParameterServerStrategy(resolver, variable_partitioner=partitioner)


def k_step_closure(tf, strategy, k, replica_fn):
    """A function for ClusterCoordinator.schedule that runs k steps of replica_fn(x, y) on one
    worker's iterator and returns the last step's summed loss."""
    @tf.function
    def closure(it):
        loss = tf.constant(0.0)
        for _ in tf.range(k):
            x, y = next(it)
            loss = strategy.reduce(tf.distribute.ReduceOp.SUM, strategy.run(replica_fn, args=(x, y)), axis=None)
        return loss
    return closure


def epoch_clock(keras):
    """(times, callback): the callback appends [Timer, seconds] per Model.fit epoch."""
    times = []
    clock = keras.callbacks.LambdaCallback(
        on_epoch_begin=lambda e, logs: times.append([Timer(), 0.0]),
        on_epoch_end=lambda e, logs: times[-1].__setitem__(1, times[-1][0].seconds()))
    return times, clock


def fit_after_first_step(keras, model, ds, epochs):
    """model.fit(ds) timed from the end of its first step (which traces the train function):
    (fit seconds, timed seconds, steps before the clock started)."""
    clock = {}

    def first_done(batch, logs):
        if "t" not in clock:
            clock["t"], clock["after"] = Timer(), batch + 1

    fit_t = Timer()
    model.fit(ds, epochs=epochs, verbose=0, callbacks=[keras.callbacks.LambdaCallback(on_train_batch_end=first_done)])
    return fit_t.seconds(), clock["t"].seconds(), clock["after"]


def result(**fields):
    """The peer's last line: RESULT {json}."""
    print("RESULT " + json.dumps(fields), flush=True)


class Timer:
    def __init__(self):
        self.t0 = time.perf_counter()

    def seconds(self):
        return time.perf_counter() - self.t0
