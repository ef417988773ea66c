"""tf.function results that are composites (IndexedSlices, RaggedTensor, SparseTensor) come
back as eager values of the same type, equal to the eager run."""

import numpy as np

import tapeflow as tf
from tapeflow.framework.tensor import EagerTensor
from tapeflow.testing import numeric_gradient


def _table_gradient(table):
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.sin(tf.gather(table, [0, 2, 0])) ** 2)
    return tape.gradient(loss, table)


def test_a_returned_gather_gradient_is_an_eager_indexed_slices():
    start = np.arange(12.0).reshape(4, 3) / 7.0
    table = tf.Variable(start)  # float64
    eager = _table_gradient(table)
    traced = tf.function(lambda: _table_gradient(table))()
    assert isinstance(traced, tf.IndexedSlices)
    for part in (traced.values, traced.indices, traced.dense_shape):
        assert isinstance(part, EagerTensor)
    np.testing.assert_array_equal(traced.indices.numpy(), eager.indices.numpy())
    np.testing.assert_array_equal(traced.dense_shape.numpy(), eager.dense_shape.numpy())
    np.testing.assert_allclose(traced.values.numpy(), eager.values.numpy(), rtol=1e-12)
    expected = numeric_gradient(lambda x: float(np.sum(np.sin(x[[0, 2, 0]]) ** 2)), start)
    np.testing.assert_allclose(tf.convert_to_tensor(traced).numpy(), expected, rtol=1e-6)


def test_indexed_slices_cross_function_boundaries():
    table = tf.Variable(np.ones((5, 2)))
    inner = tf.function(lambda: _table_gradient(table))

    @tf.function
    def outer():
        g = inner()  # a traced call returning a composite
        return tf.IndexedSlices(g.values * 2.0, g.indices, g.dense_shape)

    @tf.function
    def scale(slices, k):
        return tf.IndexedSlices(slices.values * k, slices.indices, slices.dense_shape)

    doubled = outer()
    np.testing.assert_allclose(doubled.values.numpy(),
                               2.0 * _table_gradient(table).values.numpy())
    tripled = scale(_table_gradient(table), tf.constant(3.0, tf.float64))
    assert isinstance(tripled, tf.IndexedSlices)
    np.testing.assert_allclose(tripled.values.numpy(),
                               3.0 * _table_gradient(table).values.numpy())
    spec = tf.IndexedSlicesSpec([5, 2], tf.float64, tf.int32, tf.int32)
    assert spec.is_compatible_with(_table_gradient(table))


def test_ragged_and_sparse_results_are_eager():
    def f():
        rt = tf.ragged.constant([[1.0, 2.0], [3.0]]) * 2.0
        sp = tf.sparse.from_dense(tf.constant([[0.0, 1.5], [2.5, 0.0]]))
        return rt, sp

    (rt_e, sp_e), (rt_t, sp_t) = f(), tf.function(f)()
    assert isinstance(rt_t, tf.RaggedTensor) and isinstance(sp_t, tf.SparseTensor)
    assert isinstance(rt_t.flat_values, EagerTensor) and isinstance(sp_t.values, EagerTensor)
    assert rt_t.to_list() == rt_e.to_list()
    np.testing.assert_array_equal(tf.sparse.to_dense(sp_t).numpy(),
                                  tf.sparse.to_dense(sp_e).numpy())
