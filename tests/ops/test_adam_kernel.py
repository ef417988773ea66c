"""The one-pass Adam loop gives NumPy's twelve-pass bits, and falls back where it must."""

from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.keras.optimizers import adam as keras_adam
from tapeflow.keras.optimizers.optimizer import adam_moments, bias_corrected_rate
from tapeflow.kernels import adam

pytestmark = pytest.mark.skipif(adam._adam_nb is None, reason="numba not installed")


class _Slot:
    def __init__(self, value):
        self._value = value


def _numpy_update(g, m, v, w, lr_t, eps):
    new_m, new_v = adam_moments(g, _Slot(m), _Slot(v), 0.9, 0.999)
    denom = np.sqrt(new_v)
    denom += eps
    new = np.multiply(new_m, lr_t)
    new /= denom
    np.subtract(w, new, out=new)
    return new_m, new_v, new


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(1,), (7,), (33, 5)])
def test_same_bits_as_numpy(dtype, shape):
    rng = np.random.default_rng(0)
    g, m, w = (rng.standard_normal(shape).astype(dtype) for _ in range(3))
    v = np.abs(rng.standard_normal(shape)).astype(dtype)
    lr_t = bias_corrected_rate(1e-3, 4, 0.9, 0.999, np.dtype(dtype))
    fused = adam.update(g, m, v, w, lr_t, 0.9, 0.999, 1e-7)
    for got, want in zip(fused, _numpy_update(g, m, v, w, lr_t, 1e-7)):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def test_declines_what_it_has_no_loop_for():
    w = np.ones((4, 3), np.float32)
    assert adam.update(np.ones((3, 4), np.float32).T, w, w, w, np.float32(1), .9, .9, 1e-7) is None
    half = np.ones(3, np.float16)
    assert adam.update(half, half, half, half, np.float16(1), .9, .9, 1e-7) is None


def test_keras_adam_steps_equal_the_numpy_path(monkeypatch):
    def run():
        rng = np.random.default_rng(1)
        var = tf.Variable(rng.standard_normal((6, 4)).astype(np.float32))
        opt = tf.keras.optimizers.Adam(0.01)
        for _ in range(3):
            opt.apply_gradients([(tf.constant(rng.standard_normal((6, 4)).astype(np.float32)),
                                  var)])
        return var.numpy()

    fused = run()
    monkeypatch.setattr(keras_adam.adam_kernel, "update", lambda *a: None)
    np.testing.assert_array_equal(fused, run())
