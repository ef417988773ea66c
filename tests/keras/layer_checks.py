"""Shared checks for layer tests: layer gradients (inputs, weights) vs finite differences."""

from __future__ import annotations

import numpy as np

import tapeflow as tf


def check_layer_grads(layer, x: np.ndarray, *, call_kwargs: dict | None = None,
                      eps: float = 1e-6, atol: float = 1e-6, rtol: float = 1e-5,
                      seed: int = 0) -> None:
    """Tape gradients of <layer(x), c> w.r.t. x and every trainable weight match central
    finite differences (the layer must use float64 weights)."""
    call_kwargs = call_kwargs or {}
    x = np.asarray(x, dtype=np.float64)
    out = layer(tf.constant(x), **call_kwargs)
    cot = np.random.default_rng(seed).standard_normal(tuple(out.shape))

    def scalar(xv):
        return float(np.sum(np.asarray(layer(tf.constant(xv), **call_kwargs)) * cot))

    xt = tf.constant(x)
    weights = layer.trainable_variables
    with tf.GradientTape() as tape:
        tape.watch(xt)
        y = tf.reduce_sum(layer(xt, **call_kwargs) * tf.constant(cot))
    grads = tape.gradient(y, [xt] + weights)

    numeric = np.zeros_like(x)
    for j in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[j] += eps
        down[j] -= eps
        numeric[j] = (scalar(up) - scalar(down)) / (2 * eps)
    np.testing.assert_allclose(np.asarray(grads[0]), numeric, atol=atol, rtol=rtol,
                               err_msg="gradient w.r.t. the layer input")
    for w, g in zip(weights, grads[1:]):
        base = w.numpy().copy()
        numeric = np.zeros_like(base)
        for j in np.ndindex(base.shape):
            for sign in (1, -1):
                moved = base.copy()
                moved[j] += sign * eps
                w.assign(moved)
                numeric[j] += sign * scalar(x) / (2 * eps)
        w.assign(base)
        np.testing.assert_allclose(np.asarray(g), numeric, atol=atol, rtol=rtol,
                                   err_msg=f"gradient w.r.t. {w.name}")
