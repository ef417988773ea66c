"""tf.repeat: np.repeat semantics, gradients vs finite differences, eager vs graph."""

import numpy as np
import pytest

import tapeflow as tf


@pytest.mark.parametrize("repeats,axis", [(2, 1), (3, None), ([1, 0, 2], 1), (2, -1),
                                          ([2], 0), (0, 1)])
def test_repeat_matches_numpy(repeats, axis):
    x = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(tf.repeat(x, repeats, axis=axis).numpy(),
                                  np.repeat(x, repeats, axis=axis))


@pytest.mark.parametrize("repeats", [3, [2, 0, 1]])
def test_repeat_gradient_matches_finite_differences(repeats):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3))
    cot = rng.standard_normal(np.repeat(x, repeats, axis=1).shape)
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        y = tf.reduce_sum(tf.repeat(xt, repeats, axis=1) * cot)
    grad = tape.gradient(y, xt).numpy()
    numeric = np.zeros_like(x)
    for j in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[j] = 1e-6
        numeric[j] = (np.sum(np.repeat(x + step, repeats, 1) * cot)
                      - np.sum(np.repeat(x - step, repeats, 1) * cot)) / 2e-6
    np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-8)


def test_repeat_in_a_graph_with_unknown_dims():
    x = np.arange(24.0).reshape(2, 3, 4)

    @tf.function(input_signature=[tf.TensorSpec([None, None, 4], tf.float64)])
    def fn(v):
        return tf.repeat(v, 2, axis=1)

    np.testing.assert_array_equal(fn(x).numpy(), np.repeat(x, 2, axis=1))


def test_repeat_errors():
    with pytest.raises(tf.errors.InvalidArgumentError, match="Repeat: 2 repeat counts"):
        tf.repeat(np.zeros((2, 3)), [1, 2], axis=1)
    with pytest.raises(tf.errors.InvalidArgumentError, match="non-negative"):
        tf.repeat(np.zeros((2, 3)), -1, axis=1)
