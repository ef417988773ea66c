"""Kernels split over cores give the same bits whether the machine is idle or busy.

A kernel runs its slices in parallel when a core is idle (``parallel.idle_core``, read from the
load average at call time). A reduction adds one partial sum per slice (float addition is not
associative) and BLAS rounds a row differently in products of different heights, so slices
that followed the load made one step's gradients differ from call to call. ``parallel.split``
cuts the slices by size alone.
"""

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.framework import threads
from tapeflow.kernels import batch_norm, conv, parallel, winograd

rng = np.random.default_rng(5)


def _both_ways(monkeypatch, fn):
    """fn() with two idle workers and with none (all slices on the calling thread)."""
    monkeypatch.setattr(threads, "_intra_op", 2)
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(parallel, "idle_core", lambda: True)
    idle = fn()
    monkeypatch.setattr(parallel, "idle_core", lambda: False)
    return idle, fn()


def _assert_same_bits(a, b):
    for x, y in zip(a, b):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_fixed_slices_depend_on_the_size_alone(monkeypatch):
    monkeypatch.setattr(threads, "_intra_op", 2)
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 0)
    for idle in (True, False):
        monkeypatch.setattr(parallel, "idle_core", lambda idle=idle: idle)
        assert parallel.split(9, 1, lambda lo, hi: (lo, hi)) == [(0, 4), (4, 9)]
        assert parallel.split(1, 1, lambda lo, hi: (lo, hi)) == [(0, 1)]
        assert parallel.split(0, 1, lambda lo, hi: (lo, hi)) == [(0, 0)]


@pytest.mark.parametrize("shape", [(16, 6, 6, 16, 12), (3, 5, 5, 4, 2), (3, 5, 5, 2, 6),
                                   (3, 5, 5, 6, 6)])
def test_filter_gradients_do_not_depend_on_the_load(monkeypatch, shape):
    """Winograd (16 -> 12), gather (cout < cin), scatter and im2col filter gradients."""
    n, h, w, cin, cout = shape
    x = rng.standard_normal((n, h, w, cin)).astype(np.float32)
    g = conv.geometry((h, w), (3, 3), (1, 1), (1, 1), "SAME")
    gr = rng.standard_normal((n, g.ho, g.wo, cout)).astype(np.float32)
    idle, busy = _both_ways(monkeypatch, lambda: [conv.conv2d_backprop_filter(x, gr, g)])
    _assert_same_bits(idle, busy)
    if cin >= 12:
        assert winograd.applies(g, n, cin, cout, x.dtype)


def test_batch_norm_sums_do_not_depend_on_the_load(monkeypatch):
    x = (rng.standard_normal((9, 5, 5, 8)) * 3 + 1).astype(np.float32)
    dy = rng.standard_normal(x.shape).astype(np.float32)
    scale = rng.standard_normal(8).astype(np.float32)

    def run():
        y, mean, _, inv = batch_norm.forward(x, scale, np.zeros(8, np.float32), 1e-3)
        return [y, mean, inv, *batch_norm.backward(dy, x, scale, mean, inv)]

    idle, busy = _both_ways(monkeypatch, run)
    _assert_same_bits(idle, busy)


def test_a_graph_training_step_is_reproducible_bit_for_bit(monkeypatch):
    """Conv-BN-ReLU gradients of one step, one with idle cores and one on a busy machine."""
    tf.random.set_seed(3)
    model = tf.keras.Sequential([
        tf.keras.layers.Conv2D(12, 3, padding="same", input_shape=(8, 8, 12)),
        tf.keras.layers.BatchNormalization(), tf.keras.layers.ReLU(),
        tf.keras.layers.Conv2D(12, 3, padding="same"), tf.keras.layers.GlobalAveragePooling2D(),
        tf.keras.layers.Dense(3)])
    x = tf.constant(rng.standard_normal((16, 8, 8, 12)).astype(np.float32))

    @tf.function
    def grads():
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(model(x, training=True) ** 2)
        return tape.gradient(loss, model.trainable_variables)

    idle, busy = _both_ways(monkeypatch, grads)
    _assert_same_bits(idle, busy)
