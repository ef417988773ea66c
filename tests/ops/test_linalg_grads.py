"""Gradients of QR, eig and eigh: TF 2.21's recorded values (fixtures/tf_linalg_grads.json,
made by record_tf_linalg_grads.py from linalg_grad_cases.py), float64 finite differences, and
the same gradient inside tf.function."""

import json
import os

import linalg_grad_cases as cases
import numpy as np
import pytest

import tapeflow as tf

with open(os.path.join(os.path.dirname(__file__), "fixtures", "tf_linalg_grads.json")) as f:
    RECORDED = json.load(f)


@pytest.mark.parametrize("name", sorted(cases.CASES))
def test_matches_tensorflow(name):
    loss, grad = cases.gradient(tf, name)
    np.testing.assert_allclose(loss, RECORDED[name]["loss"], rtol=1e-10)
    np.testing.assert_allclose(grad.ravel(), RECORDED[name]["grad"], rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("name", ["qr tall", "qr wide", "eig square", "eigh batch"])
def test_finite_differences_and_traced(name):
    key, fn = cases.CASES[name]
    x0 = cases.INPUTS[key]

    def loss(x):
        return float(fn(tf, tf.constant(x)).numpy())

    eps, numeric = 1e-6, np.zeros_like(x0)
    for idx in np.ndindex(*x0.shape):
        step = np.zeros_like(x0)
        step[idx] = eps
        numeric[idx] = (loss(x0 + step) - loss(x0 - step)) / (2 * eps)
    _, grad = cases.gradient(tf, name)
    np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-6)

    @tf.function
    def traced(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = fn(tf, x)
        return tape.gradient(y, x)

    np.testing.assert_allclose(traced(tf.constant(x0)).numpy(), grad, rtol=1e-10, atol=1e-12)


def test_qr_full_matrices_of_a_tall_matrix_has_no_gradient():
    x = tf.constant(cases.INPUTS["tall"])
    with tf.GradientTape() as tape:
        tape.watch(x)
        q, _ = tf.linalg.qr(x, full_matrices=True)
    with pytest.raises(NotImplementedError, match="full_matrices"):
        tape.gradient(q, x)


def test_adjoint_conjugates():
    z = tf.constant([[1 + 2j, 3j], [0.5, -1j]])
    np.testing.assert_array_equal(tf.linalg.adjoint(z).numpy(), np.conj(z.numpy()).T)
    np.testing.assert_allclose(tf.matmul(z, z, adjoint_a=True).numpy(),
                               np.conj(z.numpy()).T @ z.numpy())
    assert tf.linalg.eig(tf.constant(np.eye(2)))[0].dtype == tf.complex128
