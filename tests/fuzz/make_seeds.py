#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora into tests/fuzz/corpus/<target>/ (run from anywhere).

Each seed is a small valid input of its format, so the fuzzers start from inputs that get past
the first checks: TF_CONFIGs, job specs, IDX image/label pairs, CSV files, Criteo lines, a
checkpoint (index and a shard file whose checksum verifies) and tensor-channel conversations
(hello, dense and sparse pulls and pushes), dynamic table checkpoints. Only the standard library: protobuf messages are
encoded by hand, the checksum (XXH64, common/checkpoint/checksum.h) is computed here.
"""
import gzip
import json
import os
import struct

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
M64 = (1 << 64) - 1


def write(target, name, data):
    d = os.path.join(ROOT, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data.encode() if isinstance(data, str) else data)


# --- protobuf wire format (only what the channel's messages use) ---
def varint(n):
    n &= M64
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field_varint(number, value):
    return varint(number << 3) + varint(value)


def field_bytes(number, data):
    data = data.encode() if isinstance(data, str) else data
    return varint(number << 3 | 2) + varint(len(data)) + data


def frame(message, payload=b""):
    return b"PSTF" + struct.pack("<IQ", len(message), len(payload)) + message + payload


def call(kind_field, body, payload_sizes=()):
    msg = field_bytes(kind_field, body)
    for size in payload_sizes:
        msg += field_varint(3, size)
    return msg


HELLO = frame(call(4, field_varint(1, 5) + field_bytes(2, "worker:0")))  # protocol version 5


def channel_seeds():
    write("channel_frames_fuzz", "hello", HELLO)
    write("channel_frames_fuzz", "old_version", frame(call(4, field_varint(1, 2) + field_bytes(2, "worker:0"))))
    pull_dense = frame(call(1, field_bytes(1, "w")))
    write("channel_frames_fuzz", "pull_dense", HELLO + pull_dense + pull_dense)
    ids = struct.pack("<2q", 3, 97)
    sparse = field_bytes(1, "t") + field_varint(2, 2)
    write("channel_frames_fuzz", "pull_sparse", HELLO + frame(call(1, field_bytes(3, sparse), [16]), ids))
    tensor = field_varint(1, 1) + field_varint(2, 64)  # DT_FLOAT, shape [64]
    gradient = field_bytes(1, "w") + field_bytes(2, tensor)
    grads = struct.pack("<64f", *([0.5] * 64))
    push = frame(call(2, field_varint(1, 0) + field_bytes(3, gradient), [256]), grads)
    write("channel_frames_fuzz", "push_dense", HELLO + push + pull_dense)
    rows = struct.pack("<8f", *([0.25] * 8))
    push_sparse = frame(call(2, field_bytes(4, sparse), [16, 32]), ids + rows)
    write("channel_frames_fuzz", "push_sparse", HELLO + push_sparse)
    write("channel_frames_fuzz", "pull_waits", HELLO + frame(call(1, field_bytes(1, "w") + field_varint(2, 1 << 40))))


# --- XXH64 (seed 0), as common/checkpoint/checksum.cc ---
P1, P2, P3, P4, P5 = (11400714785074694791, 14029467366897019727, 1609587929392839161,
                      9650029242287828579, 2870177450012600261)


def rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & M64


def round_(acc, value):
    return (rotl((acc + value * P2) & M64, 31) * P1) & M64


def xxh64(data):
    n, p = len(data), 0
    if n >= 32:
        v = [(P1 + P2) & M64, P2, 0, (-P1) & M64]
        while p + 32 <= n:
            for i in range(4):
                v[i] = round_(v[i], struct.unpack_from("<Q", data, p + 8 * i)[0])
            p += 32
        h = (rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18)) & M64
        for i in range(4):
            h = ((h ^ round_(0, v[i])) * P1 + P4) & M64
    else:
        h = P5
    h = (h + n) & M64
    while p + 8 <= n:
        h = (rotl(h ^ round_(0, struct.unpack_from("<Q", data, p)[0]), 27) * P1 + P4) & M64
        p += 8
    if p + 4 <= n:
        h = (rotl(h ^ (struct.unpack_from("<I", data, p)[0] * P1 & M64), 23) * P2 + P3) & M64
        p += 4
    while p < n:
        h = (rotl(h ^ (data[p] * P5 & M64), 11) * P1) & M64
        p += 1
    h ^= h >> 33
    h = h * P2 & M64
    h ^= h >> 29
    h = h * P3 & M64
    h ^= h >> 32
    return h


def checkpoint_seeds():
    values = struct.pack("<8f", *range(8))
    slot = struct.pack("<8f", *([0.1] * 8))
    for name, shard, slots, stride in (("dense", values, [], 1), ("with_slot", values + slot, ["accumulator"], 1),
                                       ("strided", values, [], 2)):
        rows = 4
        index = {"format": "pstrain-checkpoint-1", "global_step": 10,
                 "shards": [{"shard_name": "w/part_0", "variable_name": "w", "full_shape": [rows * stride, 2],
                             "row_offset": 0, "rows": rows, "row_stride": stride, "dtype": "float32",
                             "file": "w.shard", "checksum": "%016x" % xxh64(shard), "version": 10,
                             "slot_names": slots}]}
        write("checkpoint_fuzz", name, json.dumps(index).encode() + b"\n--shard--\n" + shard)


def idx_seeds():
    images = struct.pack(">IIII", 0x803, 2, 3, 3) + bytes(range(0, 255, 14))
    labels = struct.pack(">II", 0x801, 2) + bytes([1, 9])
    write("idx_reader_fuzz", "plain", images + b"\n--labels--\n" + labels)
    write("idx_reader_fuzz", "gzipped", gzip.compress(images, mtime=0) + b"\n--labels--\n" + gzip.compress(labels, mtime=0))


def text_seeds():
    write("tf_config_fuzz", "tensorflow", json.dumps(
        {"cluster": {"chief": ["127.0.0.1:2000"], "worker": ["127.0.0.1:2001", "127.0.0.1:2002"],
                     "ps": ["127.0.0.1:2003"], "evaluator": ["127.0.0.1:2004"]},
         "task": {"type": "worker", "index": 1}}))
    write("tf_config_fuzz", "kubeflow", json.dumps(
        {"cluster": {"master": ["job-master-0:2222"], "worker": ["job-worker-0:2222"], "ps": ["job-ps-0:2222"]},
         "task": {"type": "master", "index": 0}, "environment": "cloud"}))
    write("job_spec_fuzz", "mlp", json.dumps(
        {"name": "mlp", "model": {"input_shape": [28, 28, 1], "layers": [
            {"type": "flatten"}, {"type": "dense", "units": 30, "activation": "relu"}, {"type": "dense", "units": 10}]},
         "optimizer": {"type": "adam", "learning_rate": 0.001}, "batch_size": 64, "schedule": {"steps": 10},
         "seed": 7, "partitioner": {"type": "fixed_shards", "num_shards": 3}}))
    write("job_spec_fuzz", "cnn", json.dumps(
        {"name": "cnn", "model": {"input_shape": [28, 28, 1], "layers": [
            {"type": "conv2d", "filters": 8, "kernel_size": 3, "activation": "relu"}, {"type": "max_pool2d"},
            {"type": "flatten"}, {"type": "dense", "units": 10}]},
         "optimizer": {"type": "adagrad", "learning_rate": 0.05}, "batch_size": 32,
         "schedule": {"steps": 5}, "partitioner": {"type": "min_size", "min_shard_bytes": 65536}}))
    # csv_reader_fuzz: the first byte picks label column (low 3 bits), header (8), classification (16).
    write("csv_reader_fuzz", "classes", b"\x07" + b"1.5,2,0\n3,4.25,1\n-1,0,2\n")
    write("csv_reader_fuzz", "header_regression", b"\x08" + b"y,a,b\n0.5,1,2\n1e3,3,4\n")
    # criteo_parser_fuzz: the first byte picks skip-bad-lines (bit 0) and a chunk size.
    line = "1\t5\t\t" + "\t".join(["68fd1e64", "", "a1b2"]) + "\n"
    write("criteo_parser_fuzz", "small", b"\x10" + (line + "0\t\t3\t1\t2\t3\n").encode())
    full = "0\t" + "\t".join(str(i) for i in range(13)) + "\t" + "\t".join("%08x" % (i * 7919) for i in range(26))
    write("criteo_parser_fuzz", "criteo", b"\x41" + (full + "\n" + full + "\n").encode())


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def tfrecord(data):  # one record framed as TFRecord: length, masked CRCs, little-endian
    def masked(b):
        c = crc32c(b)
        return ((((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF).to_bytes(4, "little")
    length = len(data).to_bytes(8, "little")
    return length + masked(length) + data + masked(data)


def tfrecord_seeds():
    # tfrecord_reader_fuzz: the first byte picks a chunk size; the rest is a TFRecord file of
    # tf.Example (Example.features = 1, Features.feature = 1 (map: key 1, value 2), Feature:
    # bytes_list 1, float_list 2, int64_list 3; each list's value = 1, packed for numbers).
    def feature(name, kind, payload):
        return field_bytes(1, field_bytes(1, name.encode()) + field_bytes(2, field_bytes(kind, payload)))
    def example(label, i1, i2, c1, c2):
        return field_bytes(1, feature("label", 3, field_bytes(1, varint(label))) +
                           feature("I1", 2, field_bytes(1, struct.pack("<f", i1))) +
                           feature("I2", 3, field_bytes(1, varint(i2))) +
                           feature("C1", 3, field_bytes(1, varint(c1))) +
                           feature("C2", 1, field_bytes(1, c2)))
    good = tfrecord(example(1, 2.5, 7, 12345, b"68fd1e64")) + tfrecord(example(0, 0.0, 0, 2, b""))
    write("tfrecord_reader_fuzz", "examples", b"\x05" + good)
    write("tfrecord_reader_fuzz", "empty_record", b"\x00" + tfrecord(b""))
    write("tfrecord_reader_fuzz", "truncated", b"\x03" + good[:-3])


def dynamic_table_seeds():  # ps/store/dynamic_table_state.h, version 1
    def state(name, dim, slots, filter_width, filter_depth, keys):
        out = b"PSDYNTB\0" + struct.pack("<II", 1, len(name)) + name
        out += struct.pack("<qiq", dim, slots, 7) + struct.pack("<7q", 3, 0, 0, 1, 4, 2, 5)
        out += struct.pack("<qi", filter_width, filter_depth) + bytes((i % 3 for i in range(filter_width * filter_depth)))
        out += struct.pack("<q", len(keys)) + struct.pack("<%dq" % len(keys), *keys)
        out += struct.pack("<%dq" % len(keys), *range(len(keys)))
        out += struct.pack("<%df" % (len(keys) * dim * (1 + slots)), *(0.25 * i for i in range(len(keys) * dim * (1 + slots))))
        return out + struct.pack("<Q", xxh64(out))
    write("dynamic_table_checkpoint_fuzz", "adagrad_filtered", state(b"emb", 2, 1, 8, 2, [-5, 3, 1 << 40]))
    write("dynamic_table_checkpoint_fuzz", "sgd_plain", state(b"t", 3, 0, 0, 0, [7]))
    write("dynamic_table_checkpoint_fuzz", "empty", state(b"e", 1, 2, 0, 0, []))


if __name__ == "__main__":
    channel_seeds()
    checkpoint_seeds()
    idx_seeds()
    text_seeds()
    tfrecord_seeds()
    dynamic_table_seeds()
