"""Behaviour that differed from TensorFlow 2.21 (issue 18), each checked eager and traced."""

import numpy as np
import pytest

import tapeflow as tf


def test_python_number_takes_numpy_operand_dtype():
    out = tf.math.multiply(np.ones([3, 3]), 42)
    assert out.dtype == tf.float64
    np.testing.assert_array_equal(out.numpy(), np.full((3, 3), 42.0))
    traced = tf.function(lambda: tf.math.multiply(np.ones([2], np.float32), 3))()
    assert traced.dtype == tf.float32


def test_linspace_integer_and_tensor_ends():
    out = tf.linspace(-2, 2, 5)
    assert out.dtype == tf.float64
    np.testing.assert_array_equal(out.numpy(), np.linspace(-2, 2, 5))
    nd = tf.linspace(tf.constant([0.0, 1.0]), [4.0, 5.0], 3, axis=1)
    np.testing.assert_allclose(nd.numpy(), np.linspace([0, 1], [4, 5], 3, axis=1))
    traced = tf.function(lambda a: tf.linspace(a, 2.0, 3))(tf.constant(0.0))
    np.testing.assert_allclose(traced.numpy(), [0, 1, 2])


def test_module_variables_sorted_by_attribute_name():
    class Inner(tf.Module):
        def __init__(self):
            super().__init__()
            self.w = tf.Variable(5.0)

    class Outer(tf.Module):
        def __init__(self):
            super().__init__()
            self.z = tf.Variable(1.0)
            self.child = Inner()
            self.a = tf.Variable(2.0)
            self.m = [tf.Variable(3.0), tf.Variable(4.0)]

    # TensorFlow: own attributes by sorted name, then sub-modules' variables
    assert [float(v.numpy()) for v in Outer().variables] == [2.0, 3.0, 4.0, 1.0, 5.0]


def test_py_function_without_outputs_and_traced():
    calls = []
    assert tf.py_function(lambda: calls.append(1), [], Tout=[]) == []

    @tf.function
    def f(x):
        tf.py_function(lambda: calls.append(2), [], Tout=[])
        return tf.py_function(lambda a: a * a, [x], Tout=tf.float32)

    assert float(f(tf.constant(3.0))) == 9.0
    assert float(f(tf.constant(2.0))) == 4.0
    assert calls == [1, 2, 2]  # runs per call, not once at trace time


def test_py_function_gradient_matches_finite_difference():
    x = tf.constant(1.3, tf.float64)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.py_function(lambda a: tf.sin(a) * a, [x], Tout=tf.float64)
    eps = 1e-6
    fd = (np.sin(1.3 + eps) * (1.3 + eps) - np.sin(1.3 - eps) * (1.3 - eps)) / (2 * eps)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), fd, rtol=1e-6)


@pytest.mark.parametrize("fn", [tf.sigmoid, tf.nn.gelu, lambda x: tf.pad(x, [])])
def test_zero_d_inputs(fn):
    x = tf.constant(0.7)
    eager = fn(x)
    assert eager.shape == ()
    np.testing.assert_allclose(tf.function(fn)(x).numpy(), eager.numpy())


def test_add_of_python_numbers_in_function_is_a_tensor():
    seen = []

    @tf.function
    def f():
        r = tf.add(1, 2)
        seen.append(isinstance(r, tf.Tensor))
        return r

    assert int(f()) == 3 and seen == [True]


def test_input_signature_mismatch_is_type_error():
    f = tf.function(lambda x: x * 2, input_signature=[tf.TensorSpec([None], tf.float32)])
    with pytest.raises(TypeError, match="shape"):
        f(tf.constant([[1.0]]))
    with pytest.raises(TypeError, match="dtype"):
        f(tf.constant([1]))
