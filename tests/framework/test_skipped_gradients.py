"""Gradient rules told which inputs need a gradient (``needs=``) skip the others, and give the
same gradients as computing every input's."""

from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.framework import backprop
from tapeflow.ops import linalg_ops, math_ops


@pytest.fixture
def matmul_calls(monkeypatch):
    calls = []
    kernel = linalg_ops._matmul.kernel

    def counting(a, b, **attrs):
        calls.append((a.shape, b.shape, attrs["transpose_a"], attrs["transpose_b"]))
        return kernel(a, b, **attrs)

    monkeypatch.setattr(linalg_ops._matmul, "kernel", counting)
    return calls


def test_rules_declaring_needs_are_registered():
    for op in (math_ops._add, math_ops._sub, math_ops._mul, math_ops._div, linalg_ops._matmul):
        assert op.grad_fn in backprop.selective


def test_input_of_the_first_layer_gets_no_product(matmul_calls):
    rng = np.random.default_rng(0)
    x = tf.constant(rng.standard_normal((6, 5)).astype(np.float32))
    w = tf.Variable(rng.standard_normal((5, 3)).astype(np.float32))
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(tf.matmul(x, w) ** 2)
    del matmul_calls[:]
    (gw,) = tape.gradient(y, [w])
    assert matmul_calls == [((6, 5), (6, 3), True, False)]  # x^T g only, no g w^T
    expected = x.numpy().T @ (2 * (x.numpy() @ w.numpy()))
    np.testing.assert_allclose(gw.numpy(), expected, rtol=1e-5)


@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
def test_each_side_alone_equals_both_sides(ta, tb):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((4, 3) if ta else (3, 4))
    b = rng.standard_normal((2, 4) if tb else (4, 2))
    va, vb = tf.Variable(a), tf.Variable(b)
    with tf.GradientTape(persistent=True) as tape:
        y = tf.reduce_sum(tf.sin(tf.matmul(va, vb, transpose_a=ta, transpose_b=tb)))
    both = tape.gradient(y, [va, vb])
    only_a = tape.gradient(y, va)
    only_b = tape.gradient(y, vb)
    np.testing.assert_allclose(only_a.numpy(), both[0].numpy())
    np.testing.assert_allclose(only_b.numpy(), both[1].numpy())
    ea = tf.constant(a)
    with tf.GradientTape() as tape:  # a constant operand: only b's gradient is computed
        tape.watch(vb)
        y = tf.reduce_sum(tf.sin(tf.matmul(ea, vb, transpose_a=ta, transpose_b=tb)))
    np.testing.assert_allclose(tape.gradient(y, vb).numpy(), both[1].numpy())


@pytest.mark.parametrize("f", [lambda x, y: x + y, lambda x, y: x - y, lambda x, y: x * y,
                               lambda x, y: x / y])
def test_binary_ops_with_one_watched_side(f):
    rng = np.random.default_rng(2)
    x = tf.constant(rng.uniform(1, 2, (3, 4)))
    y = tf.constant(rng.uniform(1, 2, (4,)))
    for watched, other, pos in ((x, y, 0), (y, x, 1)):
        with tf.GradientTape() as tape:
            tape.watch(watched)
            out = f(watched, other) if pos == 0 else f(other, watched)
            loss = tf.reduce_sum(out * out)
        g = tape.gradient(loss, watched).numpy()
        eps = 1e-6  # float64 central differences
        w = watched.numpy()
        num = np.zeros_like(w)
        for i in np.ndindex(w.shape):
            d = np.zeros_like(w)
            d[i] = eps
            hi = f(w + d, other.numpy()) if pos == 0 else f(other.numpy(), w + d)
            lo = f(w - d, other.numpy()) if pos == 0 else f(other.numpy(), w - d)
            num[i] = (np.sum(hi * hi) - np.sum(lo * lo)) / (2 * eps)
        np.testing.assert_allclose(g, num, rtol=1e-6, atol=1e-6)


def test_second_order_through_a_skipped_side():
    x = tf.Variable(1.5, dtype=tf.float64)
    c = tf.constant(3.0, dtype=tf.float64)
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            y = c * x * x
        dy = inner.gradient(y, x)  # 2 c x
    assert float(dy) == pytest.approx(9.0)
    assert float(outer.gradient(dy, x)) == pytest.approx(6.0)


def test_traced_gradient_skips_too():
    w = tf.Variable(np.ones((5, 3), np.float32))

    @tf.function
    def grad(x):
        with tf.GradientTape() as tape:
            y = tf.reduce_sum(tf.matmul(x, w))
        return tape.gradient(y, w)

    x = np.arange(10, dtype=np.float32).reshape(2, 5)
    np.testing.assert_allclose(grad(tf.constant(x)).numpy(), x.T @ np.ones((2, 3), np.float32))
