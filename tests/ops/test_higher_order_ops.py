"""map_fn, scan, foldl/foldr, vectorized_map, switch_case, case: eager vs NumPy, traced
(while_loop / cond) vs eager, gradients through the loops vs finite differences."""

import warnings

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.testing import check_grads

X = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], np.float32)
DYN = tf.TensorSpec([None, 2], tf.float32)
VEC = tf.TensorSpec([None], tf.float32)


def test_map_fn_forms():
    x = tf.constant(X)
    np.testing.assert_allclose(tf.map_fn(lambda r: r * 2, x).numpy(), X * 2)
    np.testing.assert_allclose(tf.map_fn(tf.reduce_sum, x).numpy(), X.sum(1))
    a, b = tf.map_fn(lambda t: (t[0] + t[1], t[0]), (x, x * 10))
    np.testing.assert_allclose(a.numpy(), X * 11)
    ints = tf.map_fn(lambda r: tf.cast(r[0], tf.int32), x, fn_output_signature=tf.int32)
    assert ints.dtype == tf.int32 and ints.numpy().tolist() == [1, 3, 5]
    rag = tf.map_fn(lambda r: tf.range(tf.cast(r[0], tf.int32)), x,
                    fn_output_signature=tf.RaggedTensorSpec([None], tf.int32))
    assert rag.to_list() == [[0], [0, 1, 2], [0, 1, 2, 3, 4]]
    sums = tf.map_fn(tf.reduce_sum, tf.ragged.constant([[1, 2], [3]]),
                     fn_output_signature=tf.int32)
    assert sums.numpy().tolist() == [3, 3]
    with pytest.raises(TypeError, match="fn_output_signature"):
        tf.map_fn(lambda r: r, x, fn_output_signature=tf.int32)


@pytest.mark.parametrize("fn,sig", [
    (lambda x: tf.map_fn(lambda r: r * r + 1.0, x), DYN),
    (lambda x: tf.map_fn(lambda r: (r[0], r * 2), x), DYN),
    (lambda v: tf.scan(lambda a, e: a * e, v), VEC),
    (lambda v: tf.scan(lambda a, e: a + e, v, initializer=10.0, reverse=True), VEC),
    (lambda v: tf.foldl(lambda a, e: a - e, v), VEC),
    (lambda v: tf.foldr(lambda a, e: a - e, v, initializer=1.0), VEC),
])
def test_traced_loops_match_eager_with_unknown_length(fn, sig):
    value = X if sig is DYN else X[:, 0]
    eager = fn(tf.constant(value))
    traced = tf.function(fn, input_signature=[sig])(tf.constant(value))
    for e, t in zip(tf.nest.flatten(eager), tf.nest.flatten(traced)):
        np.testing.assert_allclose(t.numpy(), e.numpy())


def test_scan_fold_match_python():
    v = [1.0, 2.0, 3.0, 4.0]
    np.testing.assert_allclose(tf.scan(lambda a, e: a + e, tf.constant(v)).numpy(),
                               np.cumsum(v))
    np.testing.assert_allclose(
        tf.scan(lambda a, e: a + e, tf.constant(v), initializer=10.0, reverse=True).numpy(),
        10 + np.cumsum(v[::-1])[::-1])
    assert float(tf.foldl(lambda a, e: a - e, tf.constant(v))) == 1 - 2 - 3 - 4
    assert float(tf.foldr(lambda a, e: a - e, tf.constant(v))) == 4 - 3 - 2 - 1


@pytest.mark.parametrize("fn", [
    lambda x, w: tf.function(lambda a, v: tf.map_fn(lambda r: tf.sin(r) * v, a),
                             input_signature=[tf.TensorSpec([None, 2], tf.float64),
                                              tf.TensorSpec([2], tf.float64)])(x, w),
    lambda x, w: tf.scan(lambda a, e: a * e + w[0], x[:, 0]),
    lambda x, w: tf.function(lambda a, v: tf.scan(lambda acc, e: acc * e + v[1], a),
                             input_signature=[tf.TensorSpec([None], tf.float64),
                                              tf.TensorSpec([2], tf.float64)])(x[:, 1], w),
    lambda x, w: tf.foldl(lambda a, e: a * w[0] + e, x),
])
def test_gradients_through_loops(fn):
    check_grads(fn, [X.astype(np.float64) / 4, np.array([0.7, -1.2])])


def test_vectorized_map_batches_when_equal_and_falls_back_with_warning():
    x = tf.constant(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_allclose(tf.vectorized_map(lambda r: r * 2 + 1, x).numpy(), X * 2 + 1)
    with pytest.warns(UserWarning, match="falling back"):
        out = tf.vectorized_map(tf.reduce_sum, x)
    np.testing.assert_allclose(out.numpy(), X.sum(1))


def test_switch_case_and_case():
    branches = [lambda: tf.constant(1), lambda: tf.constant(2), lambda: tf.constant(3)]
    assert int(tf.switch_case(1, branches)) == 2
    f = tf.function(lambda i: tf.switch_case(i, branches))
    assert [int(f(tf.constant(i))) for i in (0, 1, 2, 7)] == [1, 2, 3, 3]
    g = tf.function(lambda a: tf.case([(a > 2, lambda: a * 2), (a > 0, lambda: a)],
                                      default=lambda: -a))
    assert [float(g(tf.constant(v))) for v in (3.0, 1.0, -1.0)] == [6.0, 1.0, 1.0]
    with pytest.raises(tf.errors.InvalidArgumentError, match="exclusive"):
        tf.case([(tf.constant(True), lambda: 1), (tf.constant(True), lambda: 2)],
                exclusive=True)
    w = tf.constant(2.0)
    with tf.GradientTape() as tape:
        tape.watch(w)
        y = tf.function(lambda i, v: tf.switch_case(i, [lambda: v * v, lambda: 3 * v]))(
            tf.constant(0), w)
    assert float(tape.gradient(y, w)) == 4.0
