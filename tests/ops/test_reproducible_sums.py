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


def test_winograd_chunks_give_the_same_bits_whoever_runs_them(monkeypatch):
    """The Winograd convolution's slices are its chunks of images, fixed by the batch's size:
    with a helper, alone, or joined midway by another thread (``parallel.join_open``, the
    inter-op worker), every product has the same height and each image the same bits."""
    import threading

    x = rng.standard_normal((12, 10, 10, 16)).astype(np.float32)
    w = rng.standard_normal((3, 3, 16, 12)).astype(np.float32)
    g = conv.geometry((10, 10), (3, 3), (1, 1), (1, 1), "SAME")
    monkeypatch.setattr(winograd, "CHUNK_BYTES", 1 << 16)  # several chunks
    idle, alone = _both_ways(monkeypatch, lambda: winograd.conv2d(x, w, g))
    _assert_same_bits([idle], [alone])

    ran_by = set()
    real = winograd._output_tiles_nb

    def slowly(*args):  # record the thread, give the joiner time to come in
        ran_by.add(threading.current_thread().name)
        threading.Event().wait(0.002)
        return real(*args)

    monkeypatch.setattr(winograd, "_output_tiles_nb", slowly)

    def joiner():
        while not parallel._open:
            threading.Event().wait(0.0002)
        parallel.join_open(lambda: False)

    thread = threading.Thread(target=joiner, name="joiner")
    thread.start()
    joined = winograd.conv2d(x, w, g)
    thread.join()
    assert "joiner" in ran_by
    _assert_same_bits([idle], [joined])


def test_a_pointwise_convolution_splits_by_its_products_too(monkeypatch):
    """A 1x1 convolution under 2 MB but with many multiply-adds (W4's 8x8 transition) is cut
    in slices, the same ones idle or busy."""
    x = rng.standard_normal((64, 8, 8, 112)).astype(np.float32)
    w = rng.standard_normal((1, 1, 112, 112)).astype(np.float32)
    gr = rng.standard_normal((64, 8, 8, 112)).astype(np.float32)
    g = conv.geometry((8, 8), (1, 1), (1, 1), (1, 1), "VALID")
    assert x.nbytes < parallel.PARALLEL_MIN_BYTES
    assert conv._work_bytes(x.nbytes, 64 * 8 * 8 * 112 * 112) >= parallel.PARALLEL_MIN_BYTES
    monkeypatch.setattr(threads, "_intra_op", 2)
    results = []
    for idle in (True, False):
        monkeypatch.setattr(parallel, "idle_core", lambda idle=idle: idle)
        results.append([conv.conv2d(x, w, g), conv.conv2d_backprop_filter(x, gr, g)])
    _assert_same_bits(*results)
    np.testing.assert_allclose(results[0][0], np.einsum("nhwc,cd->nhwd", x, w[0, 0]),
                               rtol=1e-4, atol=1e-4)
