"""Winograd tiles shared between a convolution and its filter gradient: which pairs the pass
rewrites, and that the rewritten graph computes what eager execution does."""

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.framework.dispatch import apply
from tapeflow.graph.passes import share_tiles
from tapeflow.graph.verify import verify
from tapeflow.kernels import conv as K
from tapeflow.kernels import parallel
from tapeflow.kernels import winograd as W
from tapeflow.ops import conv_ops, fused_ops

pytestmark = pytest.mark.skipif(W._combine is None, reason="needs numba")

rng = np.random.default_rng(0)
CONV = dict(strides=(1, 1), dilations=(1, 1), padding="SAME")


def _tensor(*shape):
    return tf.constant(rng.standard_normal(shape).astype(np.float32))


def _convs(depth: int, channels: int = 16):
    """Weights and biases of `depth` 3x3 convolutions, channels -> channels."""
    return [(_tensor(3, 3, channels, channels) * 0.2, _tensor(channels)) for _ in range(depth)]


def _stack_step(x, params):
    """Loss and gradients of a stack of conv-bias-ReLU layers (regular backprop)."""
    flat = [t for pair in params for t in pair]
    with tf.GradientTape() as tape:
        tape.watch(flat)
        h = x
        for w, b in params:
            h = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(h, w, 1, "SAME"), b))
        loss = tf.reduce_sum(h * h)
    return loss, tape.gradient(loss, flat)


def _graph(fn, *args):
    concrete = fn.get_concrete_function(*args)
    return concrete, [n.op.name for n in concrete.graph.nodes]


def test_last_convolutions_pair_and_earlier_ones_keep_x():
    """Regular backprop: the filter gradients of the last two of four convolutions come at most
    one convolution after theirs; the first two are further and read x as before."""
    x, params = _tensor(4, 16, 16, 16), _convs(4)
    step = tf.function(lambda x: _stack_step(x, params))
    concrete, names = _graph(step, x)
    assert names.count("_WinogradConv2D") == 2
    assert names.count("_WinogradConv2DBackpropFilter") == 2
    assert names.count("Conv2DBackpropFilter") == 2
    assert "share_tiles: paired 2 filter gradients" in concrete.optimization_report()
    verify(concrete.graph)
    loss, grads = step(x)
    eager_loss, eager_grads = _stack_step(x, params)
    np.testing.assert_allclose(loss.numpy(), eager_loss.numpy(), rtol=1e-5)
    for g, e in zip(grads, eager_grads):
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("between,pairs", [(0, 1), (1, 2), (2, 3), (3, 4)])
def test_how_many_convolutions_may_run_in_between(monkeypatch, between, pairs):
    """Conv k's filter gradient comes after the 4 - k convolutions above it have run."""
    monkeypatch.setattr(share_tiles, "MAX_CONVS_BETWEEN", between)
    x, params = _tensor(4, 16, 16, 16), _convs(4)
    step = tf.function(lambda x: _stack_step(x, params))
    _, names = _graph(step, x)
    assert names.count("_WinogradConv2DBackpropFilter") == pairs
    for g, e in zip(step(x)[1], _stack_step(x, params)[1]):
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape,channels", [((4, 16, 16, 3), 3), ((1, 8, 8, 16), 16)],
                         ids=["thin-channels", "too-few-pixels"])
def test_convolutions_off_the_winograd_path_are_left_alone(shape, channels):
    x, params = _tensor(*shape), _convs(1, channels)
    _, names = _graph(tf.function(lambda x: _stack_step(x, params)), x)
    assert "Conv2DBackpropFilter" in names and "_WinogradConv2D" not in names


def test_unknown_batch_size_is_left_alone():
    params = _convs(1)
    step = tf.function(lambda x: _stack_step(x, params),
                       input_signature=[tf.TensorSpec([None, 16, 16, 16], tf.float32)])
    _, names = _graph(step, _tensor(4, 16, 16, 16))
    assert "_WinogradConv2D" not in names


def test_report_of_a_graph_without_pairs():
    f = tf.function(lambda x: x * 2.0)
    _, report = share_tiles.run(f.get_concrete_function(_tensor(3)).traced_graph)
    assert report == "share_tiles: paired 0 filter gradients with their convolution's " \
                     "Winograd tiles"


@pytest.mark.parametrize("activation", [None, "Relu"])
def test_winograd_conv_is_the_fused_conv_with_its_gradients(activation):
    """Same output and tape gradients as _FusedConv2D (whose gradients are checked against
    finite differences in float64; the Winograd path is float32 only)."""
    x, w, b = _tensor(4, 12, 11, 16), _tensor(3, 3, 16, 12), _tensor(12)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([x, w, b])
        y, tiles = apply(fused_ops._winograd_conv2d, x, w, b, activation=activation, **CONV)
        ref = apply(fused_ops._fused_conv2d, x, w, b, activation=activation, **CONV)
        loss, ref_loss = tf.reduce_sum(y * y), tf.reduce_sum(ref * ref)
    np.testing.assert_allclose(y.numpy(), ref.numpy(), rtol=1e-6, atol=1e-6)
    assert tiles.shape == (36, 4 * 3 * 3, 16)
    for g, e in zip(tape.gradient(loss, [x, w, b]), tape.gradient(ref_loss, [x, w, b])):
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-5, atol=1e-4)
    gy = _tensor(*y.shape)
    dw = apply(fused_ops._winograd_conv2d_backprop_filter, tiles, gy, input_hw=(12, 11),
               filter_hw=(3, 3), **CONV)
    ref_dw = apply(conv_ops._conv2d_backprop_filter, x, gy, filter_hw=(3, 3), **CONV)
    np.testing.assert_array_equal(dw.numpy(), ref_dw.numpy())


def test_winograd_ops_name_what_does_not_fit():
    x, w, b = _tensor(1, 4, 4, 3), _tensor(3, 3, 3, 16), _tensor(16)
    with pytest.raises(tf.errors.InvalidArgumentError, match="does not take the Winograd path"):
        apply(fused_ops._winograd_conv2d, x, w, b, activation=None, **CONV)
    _, tiles = apply(fused_ops._winograd_conv2d, _tensor(2, 16, 16, 16), _tensor(3, 3, 16, 16),
                     b, activation=None, **CONV)
    with pytest.raises(tf.errors.InvalidArgumentError, match="do not match 3 images"):
        apply(fused_ops._winograd_conv2d_backprop_filter, tiles, _tensor(3, 16, 16, 16),
              input_hw=(16, 16), filter_hw=(3, 3), **CONV)


def test_kernel_tiles_give_the_same_numbers_as_x(monkeypatch):
    """The kept tiles are the ones the filter gradient computes itself: bit for bit, on an odd
    batch split into many chunks over the cores."""
    monkeypatch.setattr(W, "CHUNK_BYTES", 1)
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 0)
    x = rng.standard_normal((7, 9, 10, 16)).astype(np.float32)
    w = rng.standard_normal((3, 3, 16, 12)).astype(np.float32)
    g = K.geometry((9, 10), (3, 3), (1, 1), (1, 1), "SAME")
    y, tiles = W.conv2d(x, w, g, keep_tiles=True)
    np.testing.assert_array_equal(y, W.conv2d(x, w, g))
    assert tiles.shape == W.tiles_shape(7, g, 16)
    gr = rng.standard_normal(y.shape).astype(np.float32)
    np.testing.assert_array_equal(W.conv2d_backprop_filter(None, gr, g, tiles=tiles),
                                  W.conv2d_backprop_filter(x, gr, g))
