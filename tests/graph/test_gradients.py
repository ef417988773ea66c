"""Gradients through traced functions: one tape entry, backward graph, higher order, torch."""

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.testing import numeric_gradient


def test_function_is_one_tape_entry_with_saved_intermediates_only():
    w = tf.Variable(np.linspace(-1, 1, 12).reshape(4, 3))

    @tf.function
    def f(x):
        h = tf.tanh(tf.matmul(x, w))
        return tf.reduce_sum(h * h)

    x = tf.constant(np.linspace(0.1, 1.0, 8).reshape(2, 4))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
        assert len(tape._entries) == 2  # variable read + the function call
    gx, gw = tape.gradient(y, [x, w])
    grad = f.get_concrete_function(x)._grad
    # the backward graph recomputes nothing from the forward pass: no Tanh, one saved value
    assert not any(n.op.name == "Tanh" for n in grad.backward_graph.nodes)
    assert [t.node.op.name for t in grad.saved] == ["Tanh"]
    num_x = numeric_gradient(lambda v: float(np.sum(np.tanh(v @ w.numpy()) ** 2)), x.numpy())
    num_w = numeric_gradient(lambda v: float(np.sum(np.tanh(x.numpy() @ v) ** 2)), w.numpy())
    np.testing.assert_allclose(gx.numpy(), num_x, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gw.numpy(), num_w, rtol=1e-6, atol=1e-8)


def test_tape_inside_function_emits_backward_nodes_and_updates():
    w = tf.Variable(np.ones((3, 1)))

    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((tf.matmul(x, w) - y) ** 2)
        g = tape.gradient(loss, w)
        w.assign_sub(0.1 * g)
        return loss

    x = tf.constant(np.arange(6.0).reshape(2, 3))
    y = tf.constant(np.array([[1.0], [2.0]]))
    expected_w = w.numpy().copy()
    for _ in range(3):
        step(x, y)
        r = x.numpy() @ expected_w - y.numpy()
        expected_w -= 0.1 * 2 * x.numpy().T @ r / 2
    np.testing.assert_allclose(w.numpy(), expected_w, rtol=1e-10)
    assert step.experimental_get_tracing_count() == 1


def test_second_order_through_function():
    @tf.function
    def f(a):
        return a * a * a

    a = tf.constant(2.0)
    with tf.GradientTape() as outer:
        outer.watch(a)
        with tf.GradientTape() as inner:
            inner.watch(a)
            y = f(a)
        dy = inner.gradient(y, a)
    assert float(dy) == 12.0
    assert float(outer.gradient(dy, a)) == 12.0


def test_gradient_matches_torch():
    torch = pytest.importorskip("torch")
    xn = np.random.default_rng(0).normal(size=(5, 4))
    wn = np.random.default_rng(1).normal(size=(4, 3))
    w = tf.Variable(wn)

    @tf.function
    def f(x):
        return tf.reduce_sum(tf.nn.softmax(tf.matmul(x, w)) * tf.constant([1.0, 2.0, 3.0],
                                                                            tf.float64))

    x = tf.constant(xn)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    gx, gw = tape.gradient(y, [x, w])
    tx = torch.tensor(xn, requires_grad=True)
    tw = torch.tensor(wn, requires_grad=True)
    ty = (torch.softmax(tx @ tw, dim=1) * torch.tensor([1.0, 2.0, 3.0],
                                                       dtype=torch.float64)).sum()
    ty.backward()
    np.testing.assert_allclose(float(y), ty.item(), rtol=1e-10)
    np.testing.assert_allclose(gx.numpy(), tx.grad.numpy(), rtol=1e-8)
    np.testing.assert_allclose(gw.numpy(), tw.grad.numpy(), rtol=1e-8)


def test_unwatched_calls_under_a_tape_are_not_recorded():
    @tf.function
    def f(x):
        return x * 2.0

    x, other = tf.constant(1.0), tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch(other)
        f(x)
    assert tape._entries == []
    assert f.get_concrete_function(x)._grad is None  # no backward graph was built


def test_tf_gradients_inside_a_function():
    @tf.function
    def f(x):
        y = x * x * x
        return tf.gradients(y, x)[0]

    assert float(f(tf.constant(2.0))) == 12.0
    with pytest.raises(tf.errors.InvalidArgumentError, match="GradientTape"):
        tf.gradients(tf.constant(1.0), tf.constant(2.0))
