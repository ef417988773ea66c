"""tf.convert_to_tensor of a (nested) list holding tensors or variables is TF's Pack: under a
gradient tape it carries gradients to each element, and Python numbers take the tensors' dtype."""

import numpy as np
import pytest

import tapeflow as tf


def test_gradient_through_a_list_of_tensors():
    a, b = tf.constant(1.5, tf.float64), tf.constant(-2.0, tf.float64)
    with tf.GradientTape() as tape:
        tape.watch([a, b])
        packed = tf.convert_to_tensor([[a, b * b], [3.0, a * b]])
        y = tf.reduce_sum(packed * tf.constant([[1.0, 2.0], [3.0, 4.0]], tf.float64))
    ga, gb = tape.gradient(y, [a, b])
    assert packed.dtype == tf.float64 and packed.shape == (2, 2)
    # y = a + 2 b^2 + 9 + 4 a b
    np.testing.assert_allclose([ga.numpy(), gb.numpy()], [1 + 4 * -2.0, 4 * -2.0 + 4 * 1.5])


def test_gradient_reaches_variables_in_a_list_and_ops_taking_lists():
    v = tf.Variable(2.0)
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(tf.convert_to_tensor([v, v * v, 1.0])) + tf.reduce_sum([v, 3.0])
    assert tape.gradient(y, v).numpy() == pytest.approx(1 + 4 + 1)


def test_same_values_without_a_tape_and_traced():
    v = tf.Variable([1.0, 2.0])
    eager = tf.convert_to_tensor([v, [3, 4]]).numpy()
    traced = tf.function(lambda: tf.convert_to_tensor([v, [3, 4]]))().numpy()
    np.testing.assert_array_equal(eager, [[1, 2], [3, 4]])
    np.testing.assert_array_equal(traced, eager)


def test_mixed_dtypes_raise():
    with tf.GradientTape():
        with pytest.raises((TypeError, ValueError)):
            tf.convert_to_tensor([tf.constant(1.0), tf.constant(1, tf.int32)])
