"""One reverse-mode walker (framework/backprop.py) serves GradientTape and tf.gradients."""

from __future__ import annotations

import numpy as np

import tapeflow as tf
from tapeflow.framework import backprop


def _program(x, w):
    top, rest = tf.split(x * w, 2, axis=1)  # a multi-output op, one output unused by the loss
    return tf.reduce_sum(tf.tanh(top) * w[:, :1]) + tf.reduce_sum(rest[:, :0])


def test_tape_and_tf_gradients_share_the_walker(monkeypatch):
    calls = []
    walk = backprop.backward

    def counting(steps, *args):
        calls.append(len(steps))
        return walk(steps, *args)

    monkeypatch.setattr(backprop, "backward", counting)
    x = np.arange(12, dtype=np.float64).reshape(3, 4) / 10
    w = tf.Variable(np.linspace(-1, 1, 12).reshape(3, 4))

    with tf.GradientTape() as tape:
        loss = _program(tf.constant(x), w)
    eager = tape.gradient(loss, w).numpy()

    @tf.function
    def symbolic(x):
        return tf.gradients(_program(x, w), [w])[0]

    graph = symbolic(tf.constant(x)).numpy()
    assert len(calls) == 2 and all(n > 0 for n in calls)
    np.testing.assert_allclose(graph, eager, rtol=1e-12)
    # the rule by hand: d/dw of sum(tanh(x*w)[:, :2] * w[:, :1])
    top = np.tanh(x[:, :2] * w.numpy()[:, :2])
    expected = np.zeros((3, 4))
    expected[:, :2] = (1 - top**2) * x[:, :2] * w.numpy()[:, :1]
    expected[:, 0] += top.sum(axis=1)
    np.testing.assert_allclose(eager, expected, rtol=1e-12)


def test_walker_keeps_source_gradients_and_drops_intermediates():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        z = y * 3.0
    gx, gy = tape.gradient(z, [x, y])  # y is a source and an intermediate
    np.testing.assert_array_equal(gy.numpy(), [3.0, 3.0])
    np.testing.assert_array_equal(gx.numpy(), [6.0, 12.0])
