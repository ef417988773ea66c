"""Indexed writes to Variables: sliced assign, scatter methods, tf.compat.v1.scatter_*,
IndexedSlices conversion. Expected values are NumPy's in-place indexing on a copy."""

import warnings

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.framework.dispatch import apply
from tapeflow.ops import indexed_slices
from tapeflow.ops.indexing_ops import _expand_ellipsis
from tapeflow.ops.variable_updates import _slice_update
from tapeflow.testing import OpCase, op_table_tests

SPEC = _expand_ellipsis((("s", 0, 3, 2), ("i", 1)), 2)

CASES = [
    OpCase("slice_update", lambda x, u: apply(_slice_update, x, u, spec=SPEC),
           lambda x, u: np.concatenate([x[:, :1], np.array([u[0], x[1, 1], u[1]])[:, None],
                                        x[:, 2:]], axis=1),
           lambda rng: [rng.standard_normal((3, 3)), rng.standard_normal(2)]),
    OpCase("slice_update_broadcast", lambda x, u: apply(_slice_update, x, u, spec=SPEC),
           lambda x, u: np.concatenate([x[:, :1], np.array([u, x[1, 1], u])[:, None],
                                        x[:, 2:]], axis=1),
           lambda rng: [rng.standard_normal((3, 3)), rng.standard_normal(())]),
]

test_forward, test_gradient, test_vs_torch, test_graph_matches_eager = op_table_tests(CASES)

START = np.arange(12, dtype=np.float32).reshape(3, 4)


def _writes(v):
    v[0, 1].assign(-1.0)
    v[:, 2].assign(tf.constant([7.0, 8.0, 9.0]))
    v[1:3].assign_add(tf.ones([2, 4]))
    v[..., -1].assign_sub(0.5)
    return v.read_value()


def _expected():
    e = START.copy()
    e[0, 1] = -1
    e[:, 2] = [7, 8, 9]
    e[1:3] += 1
    e[..., -1] -= 0.5
    return e


def test_sliced_assign_eager_and_traced():
    v = tf.Variable(START)
    np.testing.assert_array_equal(_writes(v).numpy(), _expected())
    w = tf.Variable(START)
    out = tf.function(_writes)(w)
    np.testing.assert_array_equal(out.numpy(), _expected())
    np.testing.assert_array_equal(w.numpy(), _expected())


def test_sliced_assign_returns_variable_and_checks_dtype():
    v = tf.Variable(START)
    assert v[0].assign(tf.zeros([4])) is v
    with pytest.raises(TypeError, match="dtype"):
        v[0].assign(tf.zeros([4], tf.float64))
    assert not hasattr(tf.constant(1.0), "assign")
    assert not hasattr(v[tf.constant([0, 1])], "assign")  # gathers cannot be assigned


def test_scatter_methods_with_indexed_slices():
    v = tf.Variable(START)
    rows = tf.constant([[1.0, 1.0, 1.0, 1.0], [2.0, 2.0, 2.0, 2.0]])
    e = START.copy()
    v.scatter_update(tf.IndexedSlices(rows, tf.constant([2, 0])))
    e[[2, 0]] = [[1] * 4, [2] * 4]
    v.scatter_add(tf.IndexedSlices(rows, tf.constant([1, 1])))  # duplicates add up
    e[1] += 3
    v.scatter_sub(tf.IndexedSlices(rows[:1], tf.constant([0])))
    e[0] -= 1
    v.scatter_mul(tf.IndexedSlices(rows[1:], tf.constant([1])))
    e[1] *= 2
    v.scatter_max(tf.IndexedSlices(rows[1:] * 5, tf.constant([2])))
    e[2] = np.maximum(e[2], 10)
    np.testing.assert_array_equal(v.numpy(), e)
    with pytest.raises(TypeError, match="IndexedSlices"):
        v.scatter_update(rows)


def test_scatter_nd_methods_and_compat_v1():
    v = tf.Variable(START)
    e = START.copy()
    v.scatter_nd_update([[0, 0], [2, 3]], [10.0, 20.0])
    e[0, 0], e[2, 3] = 10, 20
    v.scatter_nd_add([[1, 1], [1, 1]], [1.0, 2.0])
    e[1, 1] += 3
    tf.compat.v1.scatter_nd_sub(v, [[0]], [np.ones(4, np.float32)])
    e[0] -= 1
    tf.compat.v1.scatter_update(v, [1], [np.zeros(4, np.float32)])
    e[1] = 0
    np.testing.assert_array_equal(v.numpy(), e)

    @tf.function
    def f(i, u):
        return tf.compat.v1.scatter_nd_add(v, i, u)

    f(tf.constant([[2, 0]]), tf.constant([5.0]))
    e[2, 0] += 5
    np.testing.assert_array_equal(v.numpy(), e)
    np.testing.assert_array_equal(v.sparse_read([2, 0]).numpy(), e[[2, 0]])


def test_indexed_slices_densify():
    s = tf.IndexedSlices(tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]),
                         tf.constant([2, 0, 2]), tf.constant([4, 2]))
    assert s.shape.as_list() == [4, 2] and s.dtype == tf.float32
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        dense = tf.convert_to_tensor(s)
    np.testing.assert_array_equal(dense.numpy(), [[3, 4], [0, 0], [6, 8], [0, 0]])
    np.testing.assert_array_equal(tf.reduce_sum(s).numpy(), 21)
    with pytest.warns(UserWarning, match="unknown shape"):
        tf.convert_to_tensor(tf.IndexedSlices(s.values, s.indices))


def test_indexed_slices_large_warns(monkeypatch):
    monkeypatch.setattr(indexed_slices, "LARGE_SPARSE_NUM_ELEMENTS", 5)
    with pytest.warns(UserWarning, match="with 8 elements"):
        tf.convert_to_tensor(tf.IndexedSlices(tf.ones([1, 2]), tf.constant([0]),
                                              tf.constant([4, 2])))
