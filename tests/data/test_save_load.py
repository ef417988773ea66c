"""Dataset.save / Dataset.load and tf.data.experimental.snapshot: round trips of nested,
string and variable-shape elements, atomic writes, clear errors on damaged files."""

import json
import os

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.data import save_load
from tapeflow.framework import errors


def elements(ds):
    return [tf.nest.map_structure(lambda t: np.asarray(t).tolist(), e)
            for e in ds.as_numpy_iterator()]


def nested():
    return tf.data.Dataset.from_tensor_slices(
        {"x": np.arange(12.0, dtype=np.float32).reshape(6, 2),
         "name": np.array([b"a", b"", b"c\0d", b"e", b"f", b"g"], dtype=object),
         "pair": (np.arange(6), np.arange(6) > 2)})


@pytest.mark.parametrize("compression", [None, "GZIP"])
def test_round_trip_keeps_values_dtypes_and_structure(tmp_path, compression):
    ds = nested()
    path = str(tmp_path / "saved")
    ds.save(path, compression=compression)
    loaded = tf.data.Dataset.load(path)
    assert loaded.element_spec == ds.element_spec
    assert elements(loaded) == elements(ds)
    assert int(loaded.cardinality()) == 6
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".")]   # no leftovers


def test_variable_shapes_shards_and_reader_func(tmp_path):
    ds = tf.data.Dataset.range(7).map(lambda i: tf.fill([i % 3, 2], i))
    path = str(tmp_path / "s")
    ds.save(path, shard_func=lambda x: tf.shape(x, out_type=tf.int64)[0])
    meta = json.load(open(os.path.join(path, "dataset_spec.json")))
    assert [s["elements"] for s in meta["shards"]] == [3, 2, 2]
    got = sorted(int(e[0, 0]) if e.size else -1 for e in tf.data.Dataset.load(path)
                 .as_numpy_iterator())
    assert len(got) == 7
    reversed_shards = tf.data.Dataset.load(
        path, reader_func=lambda shards: tf.data.Dataset.from_tensor_slices([2, 1, 0])
        .flat_map(lambda i: list(shards)[int(i)]))
    assert [e.shape[0] for e in reversed_shards.as_numpy_iterator()] == [2, 2, 1, 1, 0, 0, 0]
    assert tf.data.experimental.load(path).element_spec.shape.as_list() == [None, 2]


def test_one_shard_loads_in_the_order_saved(tmp_path):
    """The order is the one `save` wrote, even for a pipeline whose order changes per pass
    (a reshuffling shuffle, a parallel map): the last stage logs what went to the file."""
    written = []

    def log(batch):
        written.append(batch.numpy().tolist())
        return batch

    ds = (tf.data.Dataset.range(300).shuffle(100).map(lambda x: x * 2, num_parallel_calls=2)
          .batch(7).map(lambda b: tf.py_function(log, [b], tf.int64)))
    path = str(tmp_path / "d")
    assert ds.element_spec.dtype == tf.int64   # (learning the spec calls `log` once)
    written.clear()
    ds.save(path)
    assert len(written) == 43
    for _ in range(2):
        assert [b.tolist() for b in tf.data.Dataset.load(path).as_numpy_iterator()] == written


def test_several_shards_load_in_tensorflows_default_order(tmp_path, monkeypatch):
    """TF's default reader_func interleaves the shards one element at a time, as many at once
    as the machine has cores. Recorded with TensorFlow 2.21 on 2 cores (range(10), shard_func
    x % 3 and x % 4)."""
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    for shards, want in ((3, [0, 1, 3, 4, 6, 7, 9, 2, 5, 8]), (4, [0, 1, 4, 5, 8, 9, 2, 3, 6, 7])):
        path = str(tmp_path / f"s{shards}")
        tf.data.Dataset.range(10).save(path, shard_func=lambda x, k=shards: x % k)
        loaded = tf.data.Dataset.load(path)
        assert [int(x) for x in loaded] == want
        assert int(loaded.cardinality()) == 10


def test_malformed_spec_files_raise_data_loss(tmp_path):
    path = str(tmp_path / "d")
    tf.data.Dataset.range(3).save(path)
    spec = os.path.join(path, "dataset_spec.json")
    good = json.load(open(spec))
    for bad in ({**good, "shards": [{"file": "shard_00000.tfrecord"}]},
                {**good, "shards": [{"file": "../x", "elements": 3}]},
                {**good, "shards": "shard_00000.tfrecord"},
                {k: v for k, v in good.items() if k != "element_spec"},
                {**good, "element_spec": {"dtype": "no-such-type", "shape": []}}):
        json.dump(bad, open(spec, "w"))
        with pytest.raises(errors.DataLossError, match="dataset_spec.json"):
            tf.data.Dataset.load(path)


def test_failed_save_leaves_the_old_dataset(tmp_path):
    path = str(tmp_path / "d")
    tf.data.Dataset.range(3).save(path)

    def explode(x):
        if int(x) == 5:
            raise ValueError("boom")
        return x

    with pytest.raises(ValueError, match="boom"):
        tf.data.Dataset.range(10).map(explode).save(path)
    assert [int(x) for x in tf.data.Dataset.load(path)] == [0, 1, 2]
    tf.data.experimental.save(tf.data.Dataset.range(4), path)
    assert [int(x) for x in tf.data.Dataset.load(path)] == [0, 1, 2, 3]
    assert sorted(os.listdir(tmp_path)) == ["d"]


def test_damaged_files_raise_data_loss_naming_them(tmp_path):
    path = str(tmp_path / "d")
    nested().save(path)
    shard = os.path.join(path, "shard_00000.tfrecord")
    data = bytearray(open(shard, "rb").read())
    data[30] ^= 0xFF
    open(shard, "wb").write(bytes(data))
    with pytest.raises(errors.DataLossError, match="shard_00000.tfrecord"):
        list(tf.data.Dataset.load(path))
    open(shard, "wb").write(bytes(data[:20]))
    with pytest.raises(errors.DataLossError, match="truncated"):
        list(tf.data.Dataset.load(path))
    os.remove(shard)
    with pytest.raises(errors.DataLossError, match="shard file shard_00000.tfrecord is missing"):
        tf.data.Dataset.load(path)
    open(os.path.join(path, "dataset_spec.json"), "w").write("{not json")
    with pytest.raises(errors.DataLossError, match="not valid JSON"):
        tf.data.Dataset.load(path)
    with pytest.raises(errors.NotFoundError, match="not a saved dataset"):
        tf.data.Dataset.load(str(tmp_path / "nothing"))


def test_record_that_does_not_match_the_spec_is_data_loss(tmp_path):
    path = str(tmp_path / "d")
    tf.data.Dataset.range(2).save(path)
    with tf.io.TFRecordWriter(os.path.join(path, "shard_00000.tfrecord")) as w:
        w.write(b"\x01")
    with pytest.raises(errors.DataLossError, match="does not match the saved element spec"):
        list(tf.data.Dataset.load(path))


def test_load_checks_a_given_element_spec(tmp_path):
    path = str(tmp_path / "d")
    tf.data.Dataset.range(2).save(path)
    with pytest.raises(errors.InvalidArgumentError, match="float32.*int64"):
        tf.data.Dataset.load(path, element_spec=tf.TensorSpec([], tf.float32))


def test_snapshot_writes_once_then_reads(tmp_path):
    calls = []

    def slow(x):
        calls.append(int(x))
        return x * 2

    path = str(tmp_path / "snap")
    ds = tf.data.Dataset.range(5).map(slow).apply(tf.data.experimental.snapshot(path))
    it = iter(ds)
    next(it)
    it.close()                                  # an unfinished pass publishes nothing
    assert not os.path.exists(path)
    assert [int(x) for x in ds] == [0, 2, 4, 6, 8]
    assert os.path.isfile(os.path.join(path, "dataset_spec.json"))
    calls.clear()
    assert [int(x) for x in ds] == [0, 2, 4, 6, 8]
    assert calls == []                          # read back from the snapshot
    other = tf.data.Dataset.range(3).map(lambda x: tf.cast(x, tf.float32))
    with pytest.raises(errors.InvalidArgumentError, match="use another path"):
        list(other.apply(tf.data.experimental.snapshot(path)))


def test_saving_composite_components_is_refused(tmp_path):
    with pytest.raises(errors.InvalidArgumentError, match="cannot be saved"):
        save_load._spec_to_json(object())
