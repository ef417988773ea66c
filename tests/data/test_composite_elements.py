"""Ragged and sparse components in tf.data: slices, batches, ragged_batch, maps."""

import numpy as np

import tapeflow as tf


def test_ragged_batch_of_variable_length_elements():
    ds = tf.data.Dataset.range(5).map(lambda n: tf.range(n)).ragged_batch(2)
    assert ds.element_spec.ragged_rank == 1
    batches = [b.to_list() for b in ds]
    assert batches == [[[], [0]], [[0, 1], [0, 1, 2]], [[0, 1, 2, 3]]]
    dropped = tf.data.Dataset.range(5).map(lambda n: tf.range(n)).ragged_batch(
        2, drop_remainder=True)
    assert len(list(dropped)) == 2


def test_from_tensor_slices_of_sparse_and_batching_back():
    dense = np.array([[0, 7.0, 0], [0, 0, 0], [1.0, 2.0, 0]], np.float32)
    ds = tf.data.Dataset.from_tensor_slices(tf.sparse.from_dense(dense))
    assert ds.element_spec == tf.SparseTensorSpec([3], tf.float32)
    rows = [tf.sparse.to_dense(e).numpy() for e in ds]
    np.testing.assert_array_equal(np.stack(rows), dense)
    batched = [tf.sparse.to_dense(b).numpy() for b in ds.batch(2)]
    np.testing.assert_array_equal(np.concatenate(batched), dense)


def test_from_tensor_slices_of_ragged_and_map_returning_ragged():
    rt = tf.ragged.constant([[1, 2], [3], [4, 5, 6]])
    got = list(tf.data.Dataset.from_tensor_slices(rt).as_numpy_iterator())
    assert [g.tolist() for g in got] == [[1, 2], [3], [4, 5, 6]]
    ds = tf.data.Dataset.range(3).map(lambda n: tf.ragged.range(tf.fill([2], n)))
    assert [b.to_list() for b in ds.batch(3)] == [[[[], []], [[0], [0]], [[0, 1], [0, 1]]]]
