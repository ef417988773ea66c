"""A dense layer's convolution storing its output in its block's buffer, with its bias and
moments in the Winograd output transform: the kernel's epilogue against the separate passes,
the fused op's new outputs and their gradients, the pass on a dense block (which nodes it
rewrites, graph against eager execution, the same bits run to run)."""

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.framework.dispatch import apply
from tapeflow.graph.passes import conv_into_concat
from tapeflow.graph.verify import verify
from tapeflow.kernels import batch_norm as bn_kernels
from tapeflow.kernels import bias as bias_kernels
from tapeflow.kernels import concat as concat_kernels
from tapeflow.kernels import conv as K
from tapeflow.kernels import winograd as W
from tapeflow.ops import fused_ops
from tapeflow.testing import check_grads

pytestmark = pytest.mark.skipif(W._combine is None, reason="needs numba")

rng = np.random.default_rng(11)
CONV = dict(strides=(1, 1), dilations=(1, 1), padding="SAME")


def _array(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("relu", [False, True])
def test_epilogue_stores_the_separate_passes_values_in_the_buffer(relu):
    """Bias (+ ReLU) as add_bias_inplace gives them, bit for bit; the output in channels
    5..17 of a 24-channel buffer (the rest untouched); moments as channel_moments's."""
    x, w, b = _array(3, 9, 10, 5), _array(3, 3, 5, 12), _array(12)
    g = K.geometry((9, 10), (3, 3), (1, 1), (1, 1), "SAME")
    plain = bias_kernels.add_bias_inplace(W.conv2d(x, w, g), b, relu)
    buf = concat_kernels.start((x,), 24)
    base = buf.base
    before = base.copy()
    got, mean, var = W.conv2d(buf, w, g, bias=b, relu=relu, into=(base, 5), moments=True)
    assert got.base is base and got.shape == plain.shape
    np.testing.assert_array_equal(got, plain)
    np.testing.assert_array_equal(base[..., 5:17], plain)
    np.testing.assert_array_equal(base[..., :5], before[..., :5])
    np.testing.assert_array_equal(base[..., 17:], before[..., 17:])
    want_mean, want_var = bn_kernels.channel_moments(plain)
    np.testing.assert_allclose(mean, want_mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(var, want_var, rtol=1e-4, atol=1e-6)
    x[0, 1, 1, 0] = np.nan  # NaN stays NaN through the bias and the ReLU, as add_bias_inplace
    plain = bias_kernels.add_bias_inplace(W.conv2d(x, w, g), b, relu)
    got = W.conv2d(x, w, g, bias=b, relu=relu)
    assert np.isnan(got).any()
    np.testing.assert_array_equal(got, plain)


def test_an_append_finds_its_input_in_place_and_copies_nothing(monkeypatch):
    x, y = _array(2, 3, 3, 4), _array(2, 3, 3, 2)
    prev = concat_kernels.start((x,), 8)
    prev.base[..., 4:6] = y  # as the convolution stores it
    monkeypatch.setattr(concat_kernels, "_into_columns_nb", None)  # a copy would go through
    out = concat_kernels.append(prev, (prev.base[..., 4:6],))
    np.testing.assert_array_equal(out, np.concatenate([x, y], axis=-1))


def _folded(x, w, b, scale, offset, **attrs):
    stats = apply(fused_ops._batch_norm_statistics, x, scale, offset, epsilon=1e-3)
    return apply(fused_ops._batch_norm_relu_conv2d, x, w, b, scale, offset, *stats,
                 activation=None, epsilon=1e-3, **CONV, **attrs)


@pytest.mark.parametrize("keep_tiles", [False, True])
def test_moments_outputs_follow_the_fused_ops_others(keep_tiles):
    args = [_array(4, 12, 11, 16), _array(3, 3, 16, 12) * 0.2, _array(12), _array(16),
            _array(16)]
    plain = _folded(*args, keep_tiles=keep_tiles)
    summed = _folded(*args, keep_tiles=keep_tiles, moments=True, into_input=True)
    assert len(summed) == len(plain) + 2
    for a, b in zip(summed, plain):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    mean, var = apply(fused_ops._channel_moments, plain[0])
    np.testing.assert_allclose(summed[-2].numpy(), mean.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(summed[-1].numpy(), var.numpy(), rtol=1e-4, atol=1e-6)


def test_moments_gradients_match_finite_differences():
    """Float64 (the materializing path): through the output and its moments."""
    args = [_array(2, 4, 5, 3, dtype=np.float64), _array(3, 3, 3, 2, dtype=np.float64),
            _array(2, dtype=np.float64), _array(3, dtype=np.float64) + 2.0,
            _array(3, dtype=np.float64)]

    def f(x, w, b, scale, offset):
        z, mean, var = _folded(x, w, b, scale, offset, keep_tiles=False, moments=True)
        return z, mean, var

    check_grads(f, args, atol=1e-5, rtol=1e-4)


def _block(x, layers):
    """A dense block of three layers (batch norm, ReLU, 3x3 conv of 12 channels)."""
    for bn, conv in layers:
        x = tf.concat([x, conv(tf.nn.relu(bn(x, training=True)))], axis=-1)
    return x


def _layers():
    return [(tf.keras.layers.BatchNormalization(), tf.keras.layers.Conv2D(12, 3, padding="same"))
            for _ in range(3)]


def test_a_dense_block_stores_each_layer_in_its_buffer_and_matches_eager():
    x = tf.constant(_array(4, 12, 12, 16))
    graph_layers, eager_layers = _layers(), _layers()
    for layers in (graph_layers, eager_layers):
        _block(x, layers)
    for gl, el in zip(graph_layers, eager_layers):
        for g, e in zip(gl, el):
            e.set_weights(g.get_weights())

    def step(x, layers):
        variables = [v for pair in layers for layer in pair for v in layer.trainable_variables]
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = _block(x, layers)
            loss = tf.reduce_sum(tf.nn.relu(y) ** 2)
        return y, tape.gradient(loss, [x, *variables])

    graph_step = tf.function(lambda x: step(x, graph_layers))
    concrete = graph_step.get_concrete_function(x)
    assert ("conv_into_concat: stored 2 convolutions' outputs in their concatenation's "
            "buffer, summed 2 outputs' moments") in concrete.optimization_report()
    names = [n.op.name for n in concrete.graph.nodes]
    assert "_ChannelMoments" not in names and names.count("_ConcatAppend") == 2
    verify(concrete.graph)
    (y, grads), (eager_y, eager_grads) = graph_step(x), step(x, eager_layers)
    np.testing.assert_allclose(y.numpy(), eager_y.numpy(), rtol=1e-4, atol=1e-4)
    for got, want in zip(grads, eager_grads):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-3,
                                   atol=1e-4 * np.abs(want.numpy()).max())
    for gl, el in zip(graph_layers, eager_layers):  # moving statistics from the moments
        for gv, ev in zip(gl[0].non_trainable_variables, el[0].non_trainable_variables):
            np.testing.assert_allclose(gv.numpy(), ev.numpy(), rtol=1e-5, atol=1e-6)
    y2, grads2 = graph_step(x)
    for a, b in zip([y, *grads], [y2, *grads2]):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_no_dense_block_no_rewrite():
    f = tf.function(lambda x, w: tf.nn.conv2d(x, w, 1, "SAME"))
    graph = f.get_concrete_function(tf.constant(_array(1, 8, 8, 12)),
                                    tf.constant(_array(3, 3, 12, 12))).traced_graph
    _, report = conv_into_concat.run(graph)
    assert report == ("conv_into_concat: stored 0 convolutions' outputs in their "
                      "concatenation's buffer, summed 0 outputs' moments")
