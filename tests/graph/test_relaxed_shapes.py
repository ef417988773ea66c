"""Shape and gradient rules with unknown dims: regressions the differential fuzzer found."""

from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.framework import errors


def _spec(rank: int) -> tf.TensorSpec:
    return tf.TensorSpec([None] * rank, tf.float64)


def test_squeeze_with_an_unknown_dim_keeps_the_others_unknown():
    shapes = {}

    @tf.function(input_signature=[tf.TensorSpec([None, None, 3], tf.float64)])
    def f(x):
        shapes["axis"] = tf.squeeze(x, axis=0).shape.as_list()
        shapes["all"] = tf.squeeze(x).shape.rank
        return tf.gather(tf.squeeze(x, axis=0), [0, 3], axis=0)

    out = f(tf.constant(np.arange(12.0).reshape(1, 4, 3)))
    assert shapes == {"axis": [None, 3], "all": None}  # was [1, 3]: the unknown dim became 1
    np.testing.assert_array_equal(out.numpy(), [[0, 1, 2], [9, 10, 11]])


@pytest.mark.parametrize("keepdims", [False, True])
def test_reduction_gradient_with_several_unknown_dims(keepdims):
    @tf.function(input_signature=[_spec(4)])
    def f(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(tf.sin(x), axis=[1, 3], keepdims=keepdims)
            loss = tf.reduce_sum(y * y)
        return tape.gradient(loss, x)

    x = np.random.default_rng(0).standard_normal((2, 3, 2, 2))
    s = np.sin(x).sum(axis=(1, 3), keepdims=True)
    np.testing.assert_allclose(f(tf.constant(x)).numpy(), 2 * s * np.cos(x), rtol=1e-12)


def test_unconnected_zero_with_unknown_dims():
    @tf.function(input_signature=[_spec(2), _spec(1)])
    def f(x, y):
        with tf.GradientTape() as tape:
            tape.watch([x, y])
            loss = tf.reduce_sum(x)
        return tape.gradient(loss, [x, y], unconnected_gradients=tf.UnconnectedGradients.ZERO)

    dx, dy = f(tf.constant(np.ones((2, 3))), tf.constant(np.ones(4)))
    np.testing.assert_array_equal(dx.numpy(), np.ones((2, 3)))
    np.testing.assert_array_equal(dy.numpy(), np.zeros(4))


def test_conv_filter_gradient_needs_a_static_filter_size_and_says_so():
    @tf.function(input_signature=[tf.TensorSpec([None, 5, 5, 2], tf.float64), _spec(4)])
    def f(x, w):
        with tf.GradientTape() as tape:
            tape.watch([x, w])
            loss = tf.reduce_sum(tf.nn.conv2d(x, w, 1, "SAME"))
        return tape.gradient(loss, [x, w])

    with pytest.raises(errors.InvalidArgumentError,
                       match=r"Conv2D: the gradient needs the static spatial size of the filter"
                             r".*\(None, None, None, None\).*input_signature"):
        f(tf.constant(np.ones((1, 5, 5, 2))), tf.constant(np.ones((3, 3, 2, 4))))


def test_issue_signature_with_squeeze_of_an_unknown_dim_matches_eager():
    """Before Squeeze had a shape rule, squeeze(y, 0) of a [None, None, 3] y was a static [1, 3]
    and the gradient of the broadcast add below failed ("cannot reshape array of size 6 into
    shape (1,3,1)")."""
    def value_and_grads(x, y):
        with tf.GradientTape() as tape:
            tape.watch([x, y])
            z = tf.reduce_sum(x * 1.5, axis=2) + tf.squeeze(y, axis=0)  # [1, 3] + [2, 3]
            out = tf.clip_by_value(z, -2.0, 2.0)
            loss = tf.reduce_sum(tf.sin(out))
        return out, tape.gradient(loss, [x, y])

    rng = np.random.default_rng(0)
    x, y = tf.constant(rng.standard_normal((1, 3, 3))), tf.constant(rng.standard_normal((1, 2, 3)))
    traced = tf.function(value_and_grads, input_signature=[
        tf.TensorSpec([1, 3, None], tf.float64), tf.TensorSpec([None, None, 3], tf.float64)])
    (value, grads), (t_value, t_grads) = value_and_grads(x, y), traced(x, y)
    np.testing.assert_allclose(t_value.numpy(), value.numpy(), rtol=1e-12)
    for t, e in zip(t_grads, grads):
        np.testing.assert_allclose(t.numpy(), e.numpy(), rtol=1e-12)
