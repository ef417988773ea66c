"""tf.einsum with a Variable operand: the tape sees the variable (as with tf.matmul)."""

import numpy as np

import tapeflow as tf


def _kernel_gradient(fn):
    x = tf.constant(np.arange(6.0).reshape(1, 2, 3))
    kernel = tf.Variable(np.ones((3, 2)))
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(fn(x, kernel))
    return tape.gradient(y, kernel)


def test_einsum_differentiates_a_variable_operand_eagerly_and_traced():
    def product(x, kernel):
        return tf.einsum("abc,cd->abd", x, kernel)

    expected = np.repeat(np.array([[3.0], [5.0], [7.0]]), 2, axis=1)  # column sums of x
    eager = _kernel_gradient(product)
    traced = tf.function(lambda: _kernel_gradient(product))()
    assert eager is not None and traced is not None
    np.testing.assert_array_equal(eager.numpy(), expected)
    np.testing.assert_array_equal(traced.numpy(), expected)
