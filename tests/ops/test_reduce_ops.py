"""Reductions, one row each: forward vs NumPy, gradients vs finite differences, torch, graph."""

import numpy as np
import pytest

import tapeflow as tf
from tapeflow import testing
from tapeflow.testing import OpCase


def distinct(*shape):
    """Values without ties (max/min gradients are only defined away from ties)."""
    return lambda rng: [rng.permutation(np.prod(shape)).reshape(shape) * 0.37 - 2.0]


def normal(*shape):
    return lambda rng: [rng.standard_normal(shape)]


def logsumexp_ref(x, axis=None, keepdims=False):
    m = np.max(x, axis=axis, keepdims=True)
    out = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis)


def np_cumsum(x, axis, exclusive=False, reverse=False):
    if reverse:
        x = np.flip(x, axis)
    out = np.cumsum(x, axis)
    if exclusive:
        out = out - x
    return np.flip(out, axis) if reverse else out


CASES = [
    OpCase("sum_all", tf.reduce_sum, np.sum, normal(2, 3), lambda a: a.sum(), order=2),
    OpCase("sum_axis_keepdims", lambda x: tf.reduce_sum(x, [0, 2], keepdims=True),
           lambda x: np.sum(x, (0, 2), keepdims=True), normal(2, 3, 2),
           lambda a: a.sum((0, 2), keepdim=True)),
    OpCase("mean_axis", lambda x: tf.reduce_mean(x, -1), lambda x: np.mean(x, -1),
           normal(2, 3), lambda a: a.mean(-1), order=2),
    OpCase("max_axis", lambda x: tf.reduce_max(x, 1), lambda x: np.max(x, 1), distinct(3, 4),
           lambda a: a.amax(1)),
    OpCase("max_all", tf.reduce_max, np.max, distinct(2, 3), lambda a: a.amax()),
    OpCase("min_keepdims", lambda x: tf.reduce_min(x, 0, keepdims=True),
           lambda x: np.min(x, 0, keepdims=True), distinct(3, 2),
           lambda a: a.amin(0, keepdim=True)),
    OpCase("prod_axis", lambda x: tf.reduce_prod(x, 1), lambda x: np.prod(x, 1), normal(2, 4),
           lambda a: a.prod(1), order=2),
    OpCase("prod_two_axes", lambda x: tf.reduce_prod(x, [0, 2]), lambda x: np.prod(x, (0, 2)),
           normal(2, 3, 2)),
    OpCase("prod_with_zero", lambda x: tf.reduce_prod(x * tf.constant([1.0, 0.0, 1.0], x.dtype)),
           lambda x: np.prod(x * [1.0, 0.0, 1.0]), normal(3)),
    OpCase("logsumexp", lambda x: tf.reduce_logsumexp(x, 1), lambda x: logsumexp_ref(x, 1),
           normal(3, 4), lambda a: a.logsumexp(1), order=2),
    OpCase("logsumexp_keepdims", lambda x: tf.reduce_logsumexp(x, keepdims=True),
           lambda x: logsumexp_ref(x, keepdims=True), normal(2, 3)),
    OpCase("variance", lambda x: tf.math.reduce_variance(x, 0), lambda x: np.var(x, 0),
           normal(4, 2), lambda a: a.var(0, unbiased=False)),
    OpCase("std", lambda x: tf.math.reduce_std(x), np.std, normal(5)),
    OpCase("cumsum", lambda x: tf.math.cumsum(x, 1), lambda x: np.cumsum(x, 1), normal(2, 4),
           lambda a: a.cumsum(1), order=2),
    OpCase("cumsum_exclusive_reverse",
           lambda x: tf.math.cumsum(x, 0, exclusive=True, reverse=True),
           lambda x: np_cumsum(x, 0, exclusive=True, reverse=True), normal(4, 2)),
    OpCase("cumprod", lambda x: tf.math.cumprod(x, 0), lambda x: np.cumprod(x, 0),
           lambda rng: [rng.uniform(0.5, 2.0, (4, 2))], lambda a: a.cumprod(0)),
    OpCase("argmax", lambda x: tf.argmax(x, 1), lambda x: np.argmax(x, 1), distinct(3, 4),
           lambda a: a.argmax(1), grad=False),
    OpCase("argmin", lambda x: tf.argmin(x), lambda x: np.argmin(x, 0), distinct(3, 4),
           lambda a: a.argmin(0), grad=False),
]


test_forward, test_gradient, test_vs_torch, test_graph_matches_eager = \
    testing.op_table_tests(CASES)


def test_max_gradient_is_split_evenly_among_ties():
    x = tf.constant([[1.0, 3.0, 3.0], [5.0, 5.0, 5.0]])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_max(x, axis=1)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(),
                               [[0, 0.5, 0.5], [1 / 3, 1 / 3, 1 / 3]], rtol=1e-6)


def test_prod_gradient_exact_at_a_zero():
    x = tf.constant([2.0, 0.0, 3.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_prod(x)
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [0.0, 6.0, 0.0])


def test_prod_gradient_over_two_axes_with_unknown_dims_in_a_graph():
    x = np.random.default_rng(5).uniform(0.5, 1.5, (2, 3, 4))
    x[1, 2, 0] = 0.0  # a zero in one group: only that group's gradient is the others' product

    def grad(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(tf.reduce_prod(x, axis=[0, 2]) * tf.constant([1.0, 2.0, 3.0],
                                                                           tf.float64))
        return tape.gradient(y, x)

    traced = tf.function(grad, input_signature=[tf.TensorSpec([None, None, None], tf.float64)])
    expect = np.empty_like(x)
    for j in range(3):
        group = x[:, j, :].ravel()
        others = [np.prod(np.delete(group, i)) for i in range(group.size)]
        expect[:, j, :] = (j + 1) * np.reshape(others, (2, 4))
    np.testing.assert_allclose(traced(tf.constant(x)).numpy(), expect, rtol=1e-12)
    np.testing.assert_allclose(grad(tf.constant(x)).numpy(), expect, rtol=1e-12)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_float_mean_traced_equals_eager(dtype):
    values = np.random.default_rng(0).uniform(0, 10, (5000,)).astype(np.float16)
    x = tf.cast(tf.constant(values), dtype)  # float16 running sums: 4.984, np.mean: 4.99
    eager = tf.reduce_mean(x).numpy()
    traced = tf.function(lambda v: tf.reduce_mean(v))(x).numpy()
    assert eager.tobytes() == traced.tobytes()
    if dtype == "float16":  # float32 accumulation, as np.mean: not the float16 running sum
        assert float(eager) == pytest.approx(float(np.mean(x.numpy().astype(np.float32))),
                                             rel=1e-3)


def test_logsumexp_is_stable():
    out = tf.reduce_logsumexp(tf.constant([1000.0, 1000.0])).numpy()
    np.testing.assert_allclose(out, 1000 + np.log(2), rtol=1e-6)
    assert tf.reduce_logsumexp(tf.constant([-np.inf, -np.inf])).numpy() == -np.inf


def test_any_all():
    x = tf.constant([[True, False], [True, True]])
    np.testing.assert_array_equal(tf.reduce_any(x, 1).numpy(), [True, True])
    np.testing.assert_array_equal(tf.reduce_all(x, 1).numpy(), [False, True])
    assert bool(tf.reduce_all(x, keepdims=True).numpy().shape == (1, 1))
    with pytest.raises(tf.errors.InvalidArgumentError, match="All.*bool"):
        tf.reduce_all(tf.constant([1.0]))


def test_argmax_output_type_and_default_axis():
    x = tf.constant([[1, 9], [7, 2]])
    assert tf.argmax(x).dtype == tf.int64
    np.testing.assert_array_equal(tf.argmax(x).numpy(), [1, 0])
    assert tf.argmax(x, 1, output_type=tf.int32).dtype == tf.int32


def test_bad_axis_is_reported():
    with pytest.raises(ValueError, match="axis 2 is out of range.*rank 2"):
        tf.reduce_max(tf.zeros([2, 2]), axis=2)


def test_integer_reductions_keep_dtype():
    x = tf.constant([[1, 2], [3, 4]])
    assert tf.reduce_prod(x).dtype == tf.int32 and tf.reduce_sum(x).dtype == tf.int32
    assert int(tf.reduce_prod(x)) == 24
    assert int(tf.reduce_max(x)) == 4
