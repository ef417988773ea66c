"""tf.keras.datasets loaders on tiny files in Keras's cache formats
(reference/keras_home/datasets), against what tf-keras 2.21's loaders returned for the same
files (reference/make_dataset_fixtures.py): shuffling, index shifting, vocabulary cuts, splits,
dtypes and shapes. Nothing is downloaded; a missing file names the URL and the place to put it.
"""

import json
import os
import pickle

import numpy as np
import pytest

from tapeflow.keras import datasets

HERE = os.path.join(os.path.dirname(__file__), "reference")
HOME = os.path.join(HERE, "keras_home")
REF = json.load(open(os.path.join(HERE, "dataset_loader_values.json")))


def _same(result, ref):
    (a, b), (c, d) = result
    for got, key in ((a, "x_train"), (b, "y_train"), (c, "x_test"), (d, "y_test")):
        if got.dtype == object:
            assert [list(map(int, s)) for s in got] == ref[key], key
        else:
            np.testing.assert_array_equal(got, np.array(ref[key]), err_msg=key)
    assert [str(v.dtype) for v in (a, b, c, d)] == ref["dtypes"]
    assert [list(v.shape) for v in (a, b, c, d)] == ref["shapes"]


@pytest.mark.parametrize("key, load", [
    ("imdb", lambda: datasets.imdb.load_data(cache_dir=HOME)),
    ("imdb_cut", lambda: datasets.imdb.load_data(num_words=20, skip_top=2, maxlen=9, seed=3,
                                                 cache_dir=HOME)),
    ("imdb_no_oov", lambda: datasets.imdb.load_data(num_words=15, oov_char=None,
                                                    start_char=None, index_from=1,
                                                    cache_dir=HOME)),
    ("reuters", lambda: datasets.reuters.load_data(cache_dir=HOME)),
    ("reuters_cut", lambda: datasets.reuters.load_data(num_words=30, test_split=0.4, maxlen=8,
                                                       cache_dir=HOME)),
    ("boston", lambda: datasets.boston_housing.load_data(cache_dir=HOME)),
    ("boston_split", lambda: datasets.boston_housing.load_data(test_split=0.5, seed=1,
                                                               cache_dir=HOME)),
    ("fashion_mnist", lambda: datasets.fashion_mnist.load_data(cache_dir=HOME)),
    ("cifar100_fine", lambda: datasets.cifar100.load_data(cache_dir=HOME)),
    ("cifar100_coarse", lambda: datasets.cifar100.load_data("coarse", cache_dir=HOME)),
])
def test_loader_matches_keras(key, load):
    _same(load(), REF[key])


def test_keras_home_and_word_indices(monkeypatch):
    monkeypatch.setenv("KERAS_HOME", HOME)
    _same(datasets.imdb.load_data(), REF["imdb"])
    assert datasets.imdb.get_word_index() == REF["imdb_word_index"]
    assert list(datasets.reuters.get_label_names()) == REF["reuters_label_names"]


def test_missing_file_says_what_to_download(tmp_path):
    with pytest.raises(FileNotFoundError) as e:
        datasets.imdb.load_data(cache_dir=str(tmp_path))
    message = str(e.value)
    assert "https://storage.googleapis.com/tensorflow/tf-keras-datasets/imdb.npz" in message
    assert os.path.join(str(tmp_path), "datasets", "imdb.npz") in message
    with pytest.raises(FileNotFoundError, match="fashion-mnist"):
        datasets.fashion_mnist.load_data(cache_dir=str(tmp_path))
    with pytest.raises(FileNotFoundError, match="cifar-100-python.tar.gz"):
        datasets.cifar100.load_data(cache_dir=str(tmp_path))
    with pytest.raises(ValueError, match="label_mode"):
        datasets.cifar100.load_data("medium", cache_dir=HOME)


class _Boom:
    def __reduce__(self):
        return (os.system, ("echo should-not-run",))


def test_object_arrays_never_run_code(tmp_path):
    root = tmp_path / "datasets"
    root.mkdir()
    bad = np.empty(1, dtype=object)
    bad[0] = _Boom()
    np.savez(root / "imdb.npz", x_train=bad, y_train=np.zeros(1), x_test=bad,
             y_test=np.zeros(1))
    with pytest.raises(pickle.UnpicklingError, match="refusing"):
        datasets.imdb.load_data(cache_dir=str(tmp_path))


def test_mnist_and_cifar10_are_the_keras_modules():
    assert callable(datasets.mnist.load_data) and callable(datasets.cifar10.load_data)
