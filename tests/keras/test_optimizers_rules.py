"""Keras 2 update rules: five steps on a quadratic vs the documented formulas (NumPy) and torch."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.keras import optimizers

A = np.array([[1.0, 0.5, -2.0], [3.0, -0.25, 0.75]])
B = np.array([[0.3, -1.2, 0.1], [-0.5, 0.8, 2.0]])
X0 = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])
STEPS = 5


def quad_grad(x: np.ndarray) -> np.ndarray:
    """Gradient of 0.5 * sum(A * x^2) + sum(B * x)."""
    return A * x + B


def run_tapeflow(opt, dtype=np.float64, steps=STEPS) -> np.ndarray:
    """Apply `steps` updates through a GradientTape on the quadratic."""
    x = tf.Variable(X0.astype(dtype))
    a, b = tf.constant(A.astype(dtype)), tf.constant(B.astype(dtype))
    for _ in range(steps):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(a * x * x) * tf.constant(dtype(0.5)) + tf.reduce_sum(b * x)
        (g,) = tape.gradient(loss, [x])
        opt.apply_gradients([(g, x)])
    return x.numpy()


# --- reference implementations of the Keras 2 formulas, written independently --------------


def ref_sgd(lr, momentum=0.0, nesterov=False, decay=0.0):
    x, accum = X0.copy(), np.zeros_like(X0)
    for it in range(STEPS):
        lr_t = lr / (1 + decay * it)
        g = quad_grad(x)
        if momentum == 0:
            x = x - lr_t * g
            continue
        accum = momentum * accum - lr_t * g
        x = x + (momentum * accum - lr_t * g if nesterov else accum)
    return x


def ref_adam(lr, b1=0.9, b2=0.999, eps=1e-7, amsgrad=False):
    x, m, v, vhat = X0.copy(), np.zeros_like(X0), np.zeros_like(X0), np.zeros_like(X0)
    for it in range(STEPS):
        t = it + 1
        g = quad_grad(x)
        lr_t = lr * math.sqrt(1 - b2 ** t) / (1 - b1 ** t)
        m = m + (g - m) * (1 - b1)
        v = v + (g * g - v) * (1 - b2)
        vhat = np.maximum(vhat, v)
        x = x - lr_t * m / (np.sqrt(vhat if amsgrad else v) + eps)
    return x


def ref_rmsprop(lr, rho=0.9, momentum=0.0, eps=1e-7, centered=False, decay=0.0):
    x, ms, mg, mom = X0.copy(), np.zeros_like(X0), np.zeros_like(X0), np.zeros_like(X0)
    for it in range(STEPS):
        lr_t = lr / (1 + decay * it)
        g = quad_grad(x)
        ms = rho * ms + (1 - rho) * g * g
        denom = ms
        if centered:
            mg = rho * mg + (1 - rho) * g
            denom = ms - mg * mg
        if momentum > 0:
            mom = momentum * mom + lr_t * g / np.sqrt(denom + eps)
            x = x - mom
        else:
            x = x - lr_t * g / (np.sqrt(denom) + eps)
    return x


def ref_adagrad(lr, init=0.1, eps=1e-7, legacy=False):
    """tf.keras.optimizers.Adagrad divides by sqrt(acc + eps), the legacy one by
    sqrt(acc) + eps."""
    x, acc = X0.copy(), np.full_like(X0, init)
    for _ in range(STEPS):
        g = quad_grad(x)
        acc = acc + g * g
        x = x - lr * g / ((np.sqrt(acc) + eps) if legacy else np.sqrt(acc + eps))
    return x


CASES = [
    ("sgd", lambda: optimizers.SGD(0.1), lambda: ref_sgd(0.1)),
    ("sgd-momentum", lambda: optimizers.SGD(0.05, momentum=0.9),
     lambda: ref_sgd(0.05, momentum=0.9)),
    ("sgd-nesterov", lambda: optimizers.SGD(0.05, momentum=0.8, nesterov=True),
     lambda: ref_sgd(0.05, momentum=0.8, nesterov=True)),
    ("adam", lambda: optimizers.Adam(0.1), lambda: ref_adam(0.1)),
    ("adam-betas", lambda: optimizers.Adam(0.05, beta_1=0.5, beta_2=0.9, epsilon=1e-3),
     lambda: ref_adam(0.05, 0.5, 0.9, 1e-3)),
    ("adam-amsgrad", lambda: optimizers.Adam(0.1, amsgrad=True),
     lambda: ref_adam(0.1, amsgrad=True)),
    ("rmsprop", lambda: optimizers.RMSprop(0.01), lambda: ref_rmsprop(0.01)),
    ("rmsprop-centered", lambda: optimizers.RMSprop(0.01, rho=0.8, centered=True),
     lambda: ref_rmsprop(0.01, rho=0.8, centered=True)),
    ("rmsprop-momentum", lambda: optimizers.RMSprop(0.01, momentum=0.9, epsilon=1e-2),
     lambda: ref_rmsprop(0.01, momentum=0.9, eps=1e-2)),
    ("rmsprop-centered-momentum",
     lambda: optimizers.RMSprop(0.01, momentum=0.5, centered=True, epsilon=1e-2),
     lambda: ref_rmsprop(0.01, momentum=0.5, eps=1e-2, centered=True)),
    ("adagrad", lambda: optimizers.Adagrad(0.1), lambda: ref_adagrad(0.1)),
    ("adagrad-init", lambda: optimizers.Adagrad(0.3, initial_accumulator_value=1.0,
                                                epsilon=1e-4),
     lambda: ref_adagrad(0.3, 1.0, 1e-4)),
    ("legacy-adagrad-init", lambda: optimizers.legacy.Adagrad(
        0.3, initial_accumulator_value=1.0, epsilon=1e-4),
     lambda: ref_adagrad(0.3, 1.0, 1e-4, legacy=True)),
]


@pytest.mark.parametrize("name,make,ref", CASES, ids=[c[0] for c in CASES])
def test_five_steps_match_keras_formulas_float64(name, make, ref):
    np.testing.assert_allclose(run_tapeflow(make()), ref(), rtol=0, atol=1e-6)


@pytest.mark.parametrize("name,make,ref", CASES, ids=[c[0] for c in CASES])
def test_five_steps_float32_close(name, make, ref):
    np.testing.assert_allclose(run_tapeflow(make(), np.float32), ref(), rtol=1e-5, atol=1e-5)


def test_legacy_lr_and_decay_seed_004():
    with pytest.warns(DeprecationWarning) as record:
        opt = optimizers.RMSprop(lr=0.01, decay=0.1)
    messages = " ".join(str(w.message) for w in record)
    assert "`lr`" in messages and "`decay`" in messages
    np.testing.assert_allclose(run_tapeflow(opt), ref_rmsprop(0.01, decay=0.1), atol=1e-6)
    with pytest.warns(DeprecationWarning, match="decay"):
        opt = optimizers.SGD(0.1, momentum=0.5, decay=0.3)
    np.testing.assert_allclose(run_tapeflow(opt), ref_sgd(0.1, 0.5, decay=0.3), atol=1e-6)


def test_seed_004_rmsprop_constructs_with_legacy_arguments():
    with pytest.warns(DeprecationWarning):
        opt = optimizers.RMSprop(lr=0.0001, decay=1e-6)
    assert opt.decay == 1e-6
    np.testing.assert_allclose(float(opt.learning_rate.numpy()), 1e-4, rtol=1e-6)
    np.testing.assert_allclose(float(opt._decayed_lr(tf.float32).numpy()), 1e-4, rtol=1e-6)
    opt.iterations.assign(np.int64(1000))
    np.testing.assert_allclose(float(opt._decayed_lr(tf.float32).numpy()),
                               1e-4 / (1 + 1e-6 * 1000), rtol=1e-6)


# --- PyTorch, where its formula is the same ------------------------------------------------


def run_torch(make_opt, steps=STEPS) -> np.ndarray:
    torch = pytest.importorskip("torch")
    x = torch.tensor(X0, dtype=torch.float64, requires_grad=True)
    a, b = torch.tensor(A), torch.tensor(B)
    opt = make_opt([x])
    for _ in range(steps):
        opt.zero_grad()
        loss = 0.5 * (a * x * x).sum() + (b * x).sum()
        loss.backward()
        opt.step()
    return x.detach().numpy()


TORCH_CASES = [
    ("sgd-momentum", lambda: optimizers.SGD(0.05, momentum=0.9),
     lambda t: lambda p: t.optim.SGD(p, lr=0.05, momentum=0.9)),
    ("sgd-nesterov", lambda: optimizers.SGD(0.05, momentum=0.8, nesterov=True),
     lambda t: lambda p: t.optim.SGD(p, lr=0.05, momentum=0.8, nesterov=True)),
    # torch scales epsilon by sqrt(1 - beta_2^t); with a negligible epsilon the rules agree
    ("adam", lambda: optimizers.Adam(0.1, epsilon=1e-12),
     lambda t: lambda p: t.optim.Adam(p, lr=0.1, eps=1e-12)),
    ("adam-amsgrad", lambda: optimizers.Adam(0.1, epsilon=1e-12, amsgrad=True),
     lambda t: lambda p: t.optim.Adam(p, lr=0.1, eps=1e-12, amsgrad=True)),
    ("rmsprop", lambda: optimizers.RMSprop(0.01, rho=0.9, epsilon=1e-4),
     lambda t: lambda p: t.optim.RMSprop(p, lr=0.01, alpha=0.9, eps=1e-4)),
    ("rmsprop-centered", lambda: optimizers.RMSprop(0.01, rho=0.9, epsilon=1e-4, centered=True),
     lambda t: lambda p: t.optim.RMSprop(p, lr=0.01, alpha=0.9, eps=1e-4, centered=True)),
    ("adagrad", lambda: optimizers.legacy.Adagrad(0.1, initial_accumulator_value=0.1,
                                                  epsilon=1e-10),
     lambda t: lambda p: t.optim.Adagrad(p, lr=0.1, initial_accumulator_value=0.1, eps=1e-10)),
]


@pytest.mark.parametrize("name,make,make_torch", TORCH_CASES, ids=[c[0] for c in TORCH_CASES])
def test_matches_torch(name, make, make_torch):
    torch = pytest.importorskip("torch")
    np.testing.assert_allclose(run_tapeflow(make()), run_torch(make_torch(torch)),
                               rtol=1e-7, atol=1e-7)
