"""tf.TensorArray semantics as TensorFlow 2.21 shows them (outcomes recorded by hand from the
reference venv): clear_after_read, element_shape/infer_shape, dynamic_size, and the bulk forms."""

import numpy as np
import pytest

import tapeflow as tf


def test_read_clears_eagerly_by_default():
    ta = tf.TensorArray(tf.float32, size=3).write(0, [1.0, 2.0])
    np.testing.assert_array_equal(ta.read(0).numpy(), [1, 2])
    with pytest.raises(tf.errors.InvalidArgumentError, match="Could not read index 0 twice"):
        ta.read(0)
    np.testing.assert_array_equal(ta.read(1).numpy(), [0, 0])  # unwritten: zeros
    keep = tf.TensorArray(tf.float32, size=2, clear_after_read=False).write(0, 3.0)
    assert keep.read(0).numpy() == keep.read(0).numpy() == 3.0


def test_traced_reads_do_not_clear():
    @tf.function
    def f(x):
        ta = tf.TensorArray(tf.float32, size=2).write(0, x).write(1, 2.0)
        return ta.read(0) + ta.read(0)

    assert f(tf.constant(1.5)).numpy() == 3.0


def test_shapes_size_and_errors():
    ta = tf.TensorArray(tf.float32, size=2)
    with pytest.raises(tf.errors.OutOfRangeError, match="not resizeable and size is: 2"):
        ta.write(5, 1.0)
    ta = ta.write(0, 1.0)
    assert ta.element_shape.as_list() == []
    with pytest.raises(ValueError, match=r"Incompatible shape for value \(\(2,\)\)"):
        ta.write(1, [3.0, 4.0])
    loose = tf.TensorArray(tf.float32, size=2, infer_shape=False).write(0, [1.0])
    assert loose.element_shape.rank is None
    grow = tf.TensorArray(tf.float32, size=0, dynamic_size=True).write(3, [1.0, 2.0])
    assert grow.size().numpy() == 4
    np.testing.assert_array_equal(grow.stack().numpy(), [[0, 0], [0, 0], [0, 0], [1, 2]])
    fixed = tf.TensorArray(tf.float32, size=3, element_shape=[2])
    assert fixed.element_shape.as_list() == [2]
    assert fixed.stack().shape.as_list() == [3, 2]


def _bulk(x):
    ta = tf.TensorArray(tf.float32, size=3).unstack(tf.reshape(x, [3, 2]))
    sc = tf.TensorArray(tf.float32, size=4).scatter([3, 1], tf.reshape(x[:4], [2, 2]))
    sp = tf.TensorArray(tf.float32, size=2).split(x, [3, 3])
    return ta.gather([2, 0]), ta.concat(), sc.stack(), sp.read(1)


def test_bulk_forms_eager_and_traced():
    x = tf.constant([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    want = ([[5, 6], [1, 2]], [1, 2, 3, 4, 5, 6], [[0, 0], [3, 4], [0, 0], [1, 2]], [4, 5, 6])
    for fn in (_bulk, tf.function(_bulk)):
        for got, w in zip(fn(x), want):
            np.testing.assert_array_equal(got.numpy(), w)
    with pytest.raises(NotImplementedError, match="unequal lengths"):
        tf.TensorArray(tf.float32, size=2).split(x, [2, 4])


def test_gradient_through_scatter_and_gather_float64():
    w = np.arange(1.0, 7.0).reshape(3, 2)

    def fn(x):
        ta = tf.TensorArray(tf.float64, size=3).scatter([2, 0], x)
        return tf.reduce_sum(ta.gather([0, 2, 1]) * w)

    theoretical, numerical = tf.test.compute_gradient(fn, [np.array([[1.0, 2.0], [3.0, 4.0]])])
    np.testing.assert_allclose(theoretical[0], numerical[0], atol=1e-6)
    # x[0] lands at element 2 (weights row 1), x[1] at element 0 (row 0)
    np.testing.assert_allclose(theoretical[0].reshape(4), [3, 4, 1, 2])
