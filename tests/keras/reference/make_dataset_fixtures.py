"""Tiny files in the Keras cache's formats (keras_home/datasets/...), and what tf-keras 2.21's
loaders return for them (their get_file pointed at these files), for
tests/keras/test_keras_datasets.py.

/work/tfenv/bin/python make_dataset_fixtures.py
(writes keras_home/ and dataset_loader_values.json; run from any directory)
"""

import gzip
import json
import os
import pickle
import struct

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
HERE = os.path.dirname(os.path.abspath(__file__))
HOME = os.path.join(HERE, "keras_home")

import numpy as np  # noqa: E402

rng = np.random.default_rng(7)
data = os.path.join(HOME, "datasets")
os.makedirs(os.path.join(data, "fashion-mnist"), exist_ok=True)
os.makedirs(os.path.join(data, "cifar-100-python"), exist_ok=True)


def seqs(n, vocab, lo=2, hi=12):
    out = np.empty(n, dtype=object)
    out[:] = [list(map(int, rng.integers(1, vocab, rng.integers(lo, hi)))) for _ in range(n)]
    return out


np.savez(os.path.join(data, "imdb.npz"), x_train=seqs(12, 40), y_train=rng.integers(0, 2, 12),
         x_test=seqs(9, 40), y_test=rng.integers(0, 2, 9))
np.savez(os.path.join(data, "reuters.npz"), x=seqs(15, 50), y=rng.integers(0, 46, 15))
np.savez(os.path.join(data, "boston_housing.npz"), x=rng.normal(size=(11, 13)),
         y=rng.normal(20, 5, size=11))
with open(os.path.join(data, "imdb_word_index.json"), "w") as f:
    json.dump({"the": 1, "movie": 17}, f)


def idx(path, array):
    with gzip.open(path, "wb") as f:
        f.write(struct.pack(">HBB", 0, 8, array.ndim))
        f.write(struct.pack(f">{array.ndim}I", *array.shape))
        f.write(array.astype(np.uint8).tobytes())


for split, n in (("train", 5), ("t10k", 3)):
    idx(os.path.join(data, "fashion-mnist", f"{split}-images-idx3-ubyte.gz"),
        rng.integers(0, 256, (n, 28, 28)))
    idx(os.path.join(data, "fashion-mnist", f"{split}-labels-idx1-ubyte.gz"),
        rng.integers(0, 10, n))
for split, n in (("train", 4), ("test", 2)):
    batch = {b"data": rng.integers(0, 256, (n, 3072)).astype(np.uint8),
             b"fine_labels": [int(v) for v in rng.integers(0, 100, n)],
             b"coarse_labels": [int(v) for v in rng.integers(0, 20, n)]}
    with open(os.path.join(data, "cifar-100-python", split), "wb") as f:
        pickle.dump(batch, f, protocol=2)

import tf_keras as keras  # noqa: E402
from tf_keras.src.datasets import (  # noqa: E402
    boston_housing,
    cifar100,
    fashion_mnist,
    imdb,
    reuters,
)

ds = keras.datasets


def cached(fname, origin=None, cache_dir=None, cache_subdir="datasets", **kwargs):
    """tf-keras's get_file on our tiny files (theirs would check the real files' hashes)."""
    return os.path.join(HOME, cache_subdir, fname)


for module in (boston_housing, cifar100, fashion_mnist, imdb, reuters):
    module.get_file = cached


def listed(x):
    if isinstance(x, np.ndarray) and x.dtype == object:
        return [list(map(int, s)) for s in x]
    return np.asarray(x).tolist()


def record(result):
    (a, b), (c, d) = result
    return {"x_train": listed(a), "y_train": listed(b), "x_test": listed(c), "y_test": listed(d),
            "dtypes": [str(np.asarray(v).dtype) for v in (a, b, c, d)],
            "shapes": [list(np.shape(v)) for v in (a, b, c, d)]}


out = {
    "imdb": record(ds.imdb.load_data()),
    "imdb_cut": record(ds.imdb.load_data(num_words=20, skip_top=2, maxlen=9, seed=3)),
    "imdb_no_oov": record(ds.imdb.load_data(num_words=15, oov_char=None, start_char=None,
                                            index_from=1)),
    "reuters": record(ds.reuters.load_data()),
    "reuters_cut": record(ds.reuters.load_data(num_words=30, test_split=0.4, maxlen=8)),
    "boston": record(ds.boston_housing.load_data()),
    "boston_split": record(ds.boston_housing.load_data(test_split=0.5, seed=1)),
    "fashion_mnist": record(ds.fashion_mnist.load_data()),
    "cifar100_fine": record(ds.cifar100.load_data()),
    "cifar100_coarse": record(ds.cifar100.load_data("coarse")),
    "imdb_word_index": ds.imdb.get_word_index(),
    "reuters_label_names": list(ds.reuters.get_label_names()),
}
with open(os.path.join(HERE, "dataset_loader_values.json"), "w") as f:
    json.dump(out, f)
