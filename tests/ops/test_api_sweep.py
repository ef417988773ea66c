"""Functions added in the API coverage sweep against TF 2.21's recorded values and gradients
(api_sweep_cases.py, fixtures/tf_api_sweep.json), float64 finite differences, and the same
gradients traced."""

import json
import os

import api_sweep_cases as cases
import numpy as np
import pytest

import tapeflow as tf
from tapeflow.testing import numeric_gradient

with open(os.path.join(os.path.dirname(__file__), "fixtures", "tf_api_sweep.json")) as f:
    RECORDED = json.load(f)


def _hex_lists(x):
    if isinstance(x, list):
        return [_hex_lists(y) for y in x]
    return x.hex() if isinstance(x, bytes) else x


def _check(got, want, name):
    if isinstance(want, dict) and "ragged" in want:
        assert _hex_lists(got.to_list()) == want["ragged"], name
        return
    if isinstance(want, list):
        assert len(got) == len(want), name
        for g, w in zip(got, want):
            _check(g, w, name)
        return
    assert got.dtype.name == want["dtype"], name
    assert list(got.shape) == want["shape"], name
    if want["dtype"] == "string":
        assert [b.hex() for b in np.asarray(got.numpy(), object).ravel()] == want["data"], name
        return
    data = np.array([np.nan if v is None else v for v in want["data"]], np.float64)
    # float32: rounding; float64: TF's FFT-based DCTs and FFTs sum in another order; the LRN
    # gradient is computed in float32 (TF's LRN takes no float64) and cast
    tol = 2e-6 if want["dtype"] == "float32" else 1e-9
    tol = {"nn grad lrn": 5e-5}.get(name, tol)
    if name.startswith("conv"):  # float32 convolutions summed in another order
        tol = 2e-5
    np.testing.assert_allclose(np.asarray(got.numpy(), np.float64).ravel(), data, rtol=tol,
                               atol=tol, err_msg=name)


# TF 2.21 fails these gradients (rfft2d's gradient with a cropping fft_length and irfft2d's with
# a given one raise shape errors; IRFFT3D has no gradient): tapeflow's are checked against
# finite differences below instead
TF_GRADIENT_FAILS = {"signal grad rfft2d fft_length", "signal grad irfft2d",
                     "signal grad rfft3d round trip"}


@pytest.mark.parametrize("name", sorted(set(cases.CASES) - TF_GRADIENT_FAILS))
def test_matches_tensorflow(name):
    want = RECORDED[name]
    if isinstance(want, dict) and "error" in want:
        with pytest.raises(Exception) as info:
            cases.CASES[name](tf)
        assert type(info.value).__name__ == want["error"]
        return
    _check(cases.CASES[name](tf), want, name)


# the exclusive cumulative_logsumexp ends in -inf (its gradient is checked against TF's above)
@pytest.mark.parametrize("name", sorted(n for n in cases.UNARY if "exclusive" not in n))
def test_gradient_finite_differences_and_traced(name):
    fn = cases.UNARY[name]

    def loss(x):
        return float(np.sum(fn(tf, tf.constant(x)).numpy() * cases.W))

    numeric = numeric_gradient(loss, cases.X)
    eager = cases.grad_case(fn)(tf).numpy()
    np.testing.assert_allclose(eager, numeric, rtol=1e-5, atol=1e-7)
    traced = tf.function(lambda: cases.grad_case(fn)(tf))().numpy()
    np.testing.assert_allclose(traced, eager, rtol=1e-12)


@pytest.mark.parametrize("name", sorted(cases.SIGNAL))
def test_signal_gradients_finite_differences(name):
    fn = cases.SIGNAL[name]

    def loss(x):
        y = fn(tf, tf.constant(x)).numpy()
        return float(np.sum(np.sin(y) * np.arange(y.size).reshape(y.shape) / 10.0))

    x0 = cases.SIG
    numeric = numeric_gradient(loss, x0)
    got = cases.signal_grad(fn)(tf).numpy()
    np.testing.assert_allclose(got, numeric, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("name", sorted(n for n in cases.LINALG if "lu_matrix" not in n))
def test_linalg_gradients_finite_differences_and_traced(name):
    fn = cases.LINALG[name]

    def loss(x):
        y = fn(tf, tf.constant(x)).numpy()
        return float(np.sum(y * np.arange(y.size).reshape(y.shape)))

    x0 = cases.MAT
    numeric = numeric_gradient(loss, x0)
    got = cases.linalg_grad(fn)(tf).numpy()
    np.testing.assert_allclose(got, numeric, rtol=1e-5, atol=1e-6)
    traced = tf.function(lambda: cases.linalg_grad(fn)(tf))().numpy()
    np.testing.assert_allclose(traced, got, rtol=1e-10, atol=1e-12)


NN_FLOAT64 = {"weighted_moments": cases.NN["weighted_moments"],  # TF's LRN is float32 only
              "lrn": lambda tf, x: tf.nn.lrn(tf.reshape(x, [1, 2, 3, 4]), depth_radius=1,
                                             bias=1.0, alpha=0.5, beta=0.75)}


@pytest.mark.parametrize("name", sorted(NN_FLOAT64))
def test_nn_gradients_finite_differences(name):
    fn = NN_FLOAT64[name]

    def loss(x):
        y = fn(tf, tf.constant(x)).numpy()
        return float(np.sum(y * np.arange(y.size).reshape(y.shape)))

    x0 = cases.X3
    numeric = numeric_gradient(loss, x0)
    np.testing.assert_allclose(cases.nn_grad(fn)(tf).numpy(), numeric, rtol=1e-5, atol=1e-6)


def test_gamma_and_poisson_follow_seeds_and_moments():
    tf.random.set_seed(3)
    g = tf.random.gamma([20000], [2.0, 5.0], beta=[1.0, 2.0])
    p = tf.random.poisson([20000], [4.0, 0.5], dtype=tf.int32)
    assert g.shape == (20000, 2) and p.dtype == tf.int32
    np.testing.assert_allclose(g.numpy().mean(0), [2.0, 2.5], rtol=0.03)
    np.testing.assert_allclose(p.numpy().mean(0), [4.0, 0.5], rtol=0.05)
    tf.random.set_seed(3)
    again = tf.random.gamma([20000], [2.0, 5.0], beta=[1.0, 2.0])
    np.testing.assert_array_equal(again.numpy(), g.numpy())
    assert tf.function(lambda: tf.random.poisson([2], 3.0, seed=1))().shape == (2,)
    tf.random.set_seed(None)


@pytest.mark.parametrize("name", sorted(cases.CONV))
def test_conv_gradients_finite_differences(name):
    fn = cases.CONV[name]

    def loss(x):
        y = fn(tf, tf.constant(x)).numpy()
        return float(np.sum(y * np.arange(y.size).reshape(y.shape)))

    x0 = cases.CONV_X
    numeric = numeric_gradient(loss, x0)
    got = cases.conv_grad(fn, "float64")(tf).numpy()
    np.testing.assert_allclose(got, numeric, rtol=1e-5, atol=1e-5)
