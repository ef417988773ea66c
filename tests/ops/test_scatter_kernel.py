"""kernels/scatter.add_rows (the gather gradient's row adds) is np.add.at bit for bit, and
keeps NumPy's error for an out-of-range index."""

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.kernels import scatter


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_add_rows_matches_numpy_add_at(dtype):
    rng = np.random.default_rng(0)
    idx = rng.integers(0, 7, 40)
    rows = rng.standard_normal((40, 3, 2)).astype(dtype)
    ours, ref = np.zeros((7, 3, 2), dtype), np.zeros((7, 3, 2), dtype)
    scatter.add_rows(ours, idx, rows)
    np.add.at(ref, idx, rows)
    np.testing.assert_array_equal(ours, ref)


def test_out_of_range_index_still_raises():
    with pytest.raises(IndexError):
        scatter.add_rows(np.zeros((3, 2)), np.array([0, 3]), np.ones((2, 2)))


def test_embedding_gradient_counts_repeated_ids():
    table = tf.Variable(np.zeros((5, 2)))
    ids = tf.constant([[1, 1], [4, 1]])
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.gather(table, ids))
    g = tf.convert_to_tensor(tape.gradient(loss, table)).numpy()
    np.testing.assert_array_equal(g, [[0, 0], [3, 3], [0, 0], [0, 0], [1, 1]])
