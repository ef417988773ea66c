"""cache semantics, and seed 004's ArtificialDataset snippets run unchanged."""

import time

import numpy as np
import pytest

import tapeflow as tf
import tapeflow.data as tfdata
from tapeflow.data import Dataset
from tapeflow.framework import dtypes


def test_memory_cache_runs_map_once_across_epochs():
    calls = []

    def counted(x):
        calls.append(int(x))
        return x * 2
    ds = Dataset.range(5).map(counted).cache()
    assert list(ds.as_numpy_iterator()) == [0, 2, 4, 6, 8]
    assert list(ds.as_numpy_iterator()) == [0, 2, 4, 6, 8]
    assert calls == [0, 1, 2, 3, 4]
    repeated = Dataset.range(3).map(counted).cache().repeat(2)
    calls.clear()
    assert list(repeated.as_numpy_iterator()) == [0, 2, 4, 0, 2, 4]
    assert calls == [0, 1, 2]


def test_partial_pass_leaves_no_cache():
    calls = []
    ds = Dataset.range(4).map(lambda x: calls.append(1) or x).cache()
    next(iter(ds))
    assert list(ds.as_numpy_iterator()) == [0, 1, 2, 3]
    assert len(calls) == 5


def test_file_cache_round_trip(tmp_path):
    calls = []

    def build(x):
        calls.append(1)
        return {"x": x, "name": "n", "v": [x, x]}
    path = str(tmp_path / "cache")
    ds = Dataset.range(3).map(build).cache(path)
    first = list(ds.as_numpy_iterator())
    again = Dataset.range(3).map(build).cache(path)   # a new pipeline reads the file
    second = list(again.as_numpy_iterator())
    assert len(calls) == 3
    assert [(e["x"], e["name"], e["v"].tolist()) for e in second] == \
        [(e["x"], e["name"], e["v"].tolist()) for e in first] == \
        [(0, b"n", [0, 0]), (1, b"n", [1, 1]), (2, b"n", [2, 2])]


class ArtificialDataset(tfdata.Dataset):
    """Seed 004's class with shorter sleeps."""

    def _generator(num_samples):
        time.sleep(0.003)
        for sample_idx in range(num_samples):
            time.sleep(0.0015)
            yield (sample_idx,)

    def __new__(cls, num_samples=3):
        return tfdata.Dataset.from_generator(
            cls._generator,
            output_types=dtypes.int64,
            output_shapes=(1,),
            args=(num_samples,)
        )


def test_artificial_dataset_subclass():
    ds = ArtificialDataset()
    assert isinstance(ds, tfdata.Dataset)
    assert [x.numpy().tolist() for x in ds] == [[0], [1], [2]]
    assert ds.element_spec.shape.as_list() == [1]


ONE_FILE = [0, 1, 2]
FIVE_FILES = [i for n in range(5) for i in range(n)]


@pytest.mark.parametrize("make, per_epoch", [
    (lambda: ArtificialDataset().prefetch(tfdata.experimental.AUTOTUNE), ONE_FILE),
    (lambda: tfdata.Dataset.range(5).interleave(ArtificialDataset), FIVE_FILES),
    (lambda: tfdata.Dataset.range(5).interleave(
        ArtificialDataset, num_parallel_calls=tfdata.experimental.AUTOTUNE), FIVE_FILES),
])
def test_seed_pipelines_give_all_elements_each_epoch(make, per_epoch):
    ds = make()
    for _epoch in range(2):
        assert sorted(int(x.numpy()[0]) for x in ds) == sorted(per_epoch)


def test_interleave_artificial_order_matches_sequential():
    seq = [x.numpy().tolist() for x in tfdata.Dataset.range(5).interleave(
        ArtificialDataset, cycle_length=2)]
    par = [x.numpy().tolist() for x in tfdata.Dataset.range(5).interleave(
        ArtificialDataset, cycle_length=2, num_parallel_calls=tfdata.AUTOTUNE)]
    assert seq == par == [[0], [0], [1], [0], [1], [0], [2], [1], [2], [3]]


def test_numpy_iterator_and_threading_options_are_tf_data_names():
    it = tf.data.Dataset.range(4).map(lambda x: x * 3).as_numpy_iterator()
    assert isinstance(it, tf.data.NumpyIterator) and isinstance(it, tf.data.Iterator)
    assert next(it) == 0 and isinstance(next(it), np.integer) and list(it) == [6, 9]
    options = tf.data.Options()
    assert isinstance(options.threading, tf.data.ThreadingOptions)
    threading = tf.data.ThreadingOptions()
    threading.private_threadpool_size = 2
    options.threading = threading
    ds = tf.data.Dataset.range(5).map(lambda x: x + 1, num_parallel_calls=2).with_options(options)
    assert list(ds.as_numpy_iterator()) == [1, 2, 3, 4, 5]
