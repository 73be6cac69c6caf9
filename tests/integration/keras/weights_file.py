"""Keras 3 .weights.h5 files compared and altered with h5py (keras_init_from_test.sh).

  python weights_file.py shift IN OUT          OUT = IN with 0.5 * (1 + i) added to its i-th dataset (sorted
                                               paths): no value is its initializer's any more (zeros, ones)
  python weights_file.py drop IN OUT PATH      OUT = IN without the dataset PATH
  python weights_file.py same A B              exit 0 when A and B hold the same datasets, bit for bit
  python weights_file.py differ A B            exit 0 when some dataset of A differs from B's
"""
import shutil
import sys

import h5py
import numpy as np


def datasets(path):
    out = {}
    with h5py.File(path, "r") as f:
        f.visititems(lambda name, obj: out.__setitem__(name, np.array(obj)) if isinstance(obj, h5py.Dataset) else None)
    return out


def shift(src, dst):
    shutil.copyfile(src, dst)
    with h5py.File(dst, "r+") as f:
        names = []
        f.visititems(lambda name, obj: names.append(name) if isinstance(obj, h5py.Dataset) else None)
        for i, name in enumerate(sorted(names)):
            f[name][...] = np.array(f[name]) + np.float32(0.5 * (1 + i))
    print(len(names), "datasets shifted")


def drop(src, dst, path):
    shutil.copyfile(src, dst)
    with h5py.File(dst, "r+") as f:
        del f[path]


def same(a, b):
    x, y = datasets(a), datasets(b)
    assert sorted(x) == sorted(y), ("the files hold different datasets", sorted(x), sorted(y))
    for name in sorted(x):
        assert x[name].dtype == y[name].dtype and x[name].shape == y[name].shape, (name, x[name].shape, y[name].shape)
        assert np.array_equal(x[name], y[name]), (name, "differs", np.max(np.abs(x[name] - y[name])))
    print(len(x), "datasets equal")


def differ(a, b):
    x, y = datasets(a), datasets(b)
    assert any(n not in y or not np.array_equal(x[n], y[n]) for n in x), "the files hold the same values"


if __name__ == "__main__":
    {"shift": shift, "drop": drop, "same": same, "differ": differ}[sys.argv[1]](*sys.argv[2:])
