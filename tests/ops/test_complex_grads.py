"""Complex gradients follow TensorFlow's convention (conjugated), checked against TF 2.21's
recorded values (fixtures/tf_complex_grads.json, made by record_tf_complex_grads.py) and,
for real losses, against finite differences along the real and imaginary axes."""

import json
import os

import complex_grad_cases as cases
import numpy as np
import pytest

import tapeflow as tf

with open(os.path.join(os.path.dirname(__file__), "fixtures", "tf_complex_grads.json")) as f:
    RECORDED = json.load(f)


@pytest.mark.parametrize("name", sorted(cases.CASES))
def test_matches_tensorflow(name):
    re, im = RECORDED[name]
    expected = (np.asarray(re) + 1j * np.asarray(im)).reshape(cases.Z.shape)
    np.testing.assert_allclose(cases.gradient(tf, name), expected, rtol=1e-10, atol=1e-12)


# not "det": TensorFlow's determinant gradient multiplies by det itself, not its conjugate
@pytest.mark.parametrize("name", ["mul", "matmul adjoint", "trig", "pow", "abs", "inverse"])
def test_real_loss_gradient_is_d_re_plus_i_d_im(name):
    def loss(z):
        return float(cases.CASES[name](tf, tf.constant(z)).numpy())

    eps, expected = 1e-6, np.zeros(cases.Z.shape, complex)
    for idx in np.ndindex(*cases.Z.shape):
        for unit in (1, 1j):
            step = np.zeros(cases.Z.shape, complex)
            step[idx] = eps * unit
            expected[idx] += unit * (loss(cases.Z + step) - loss(cases.Z - step)) / (2 * eps)
    np.testing.assert_allclose(cases.gradient(tf, name), expected, rtol=1e-6, atol=1e-7)
    traced = tf.function(lambda z: tf.gradients(cases.CASES[name](tf, z), z)[0])
    np.testing.assert_allclose(traced(tf.constant(cases.Z)).numpy(), expected, rtol=1e-6,
                               atol=1e-7)


def test_imag_of_a_real_tensor_is_zeros_with_no_gradient_path():
    # TF 2.21 (recorded by hand): imag([1., -2.]) = [0., 0.] float32; d imag/dx is None and
    # d(sum(3 * imag(x) + x))/dx = [1., 1.]
    x0 = np.array([1.0, -2.0, 0.5])

    def grads(x):
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y = tf.math.imag(x)
            z = tf.reduce_sum(tf.sin(x) * (3.0 * y + x))
        return y, tape.gradient(y, x), tape.gradient(z, x)

    for run in (grads, tf.function(grads)):
        y, gy, gz = run(tf.constant(x0))
        assert y.dtype == tf.float64
        np.testing.assert_array_equal(y.numpy(), np.zeros(3))
        assert gy is None
        expected = (np.sin(x0 + 1e-6) * (x0 + 1e-6) - np.sin(x0 - 1e-6) * (x0 - 1e-6)) / 2e-6
        np.testing.assert_allclose(gz.numpy(), expected, rtol=1e-6)
    assert tf.math.imag(tf.constant([1, 2])).dtype == tf.int32
