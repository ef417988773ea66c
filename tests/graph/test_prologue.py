"""Batch norm + ReLU folded into the Winograd convolution that alone reads it: which chains the
pass folds, the fused ops against the unfused chain (values, gradients against finite
differences), and graph against eager execution with Keras layers."""

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.framework.dispatch import apply
from tapeflow.graph.passes import prologue
from tapeflow.graph.verify import verify
from tapeflow.kernels import winograd as W
from tapeflow.ops import fused_ops
from tapeflow.testing import check_grads

pytestmark = pytest.mark.skipif(W._combine is None, reason="needs numba")

rng = np.random.default_rng(1)
CONV = dict(strides=(1, 1), dilations=(1, 1), padding="SAME")


def _array(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def _folded(x, w, b, scale, offset, activation=None, keep_tiles=False):
    stats = apply(fused_ops._batch_norm_statistics, x, scale, offset, epsilon=1e-3)
    outs = apply(fused_ops._batch_norm_relu_conv2d, x, w, b, scale, offset, *stats,
                 activation=activation, keep_tiles=keep_tiles, epsilon=1e-3, **CONV)
    return outs, stats


def _unfused(x, w, b, scale, offset, activation=None):
    y, mean, var, inv, ab = apply(fused_ops._fused_batch_norm_ex, x, scale, offset,
                                  epsilon=1e-3, activation="Relu")
    z = apply(fused_ops._fused_conv2d, y, w, b, activation=activation, **CONV)
    return z, (mean, var, inv, ab)


@pytest.mark.parametrize("keep_tiles", [False, True])
@pytest.mark.parametrize("activation", [None, "Relu"])
def test_folded_chain_computes_the_unfused_one(activation, keep_tiles):
    """On the Winograd path (float32, 16 channels, 4 x 12 x 11 pixels)."""
    args = [_array(4, 12, 11, 16), _array(3, 3, 16, 12) * 0.2, _array(12), _array(16),
            _array(16)]
    outs, stats = _folded(*args, activation=activation, keep_tiles=keep_tiles)
    z, ref_stats = _unfused(*args, activation=activation)
    np.testing.assert_allclose(outs[0].numpy(), z.numpy(), rtol=1e-5, atol=1e-5)
    for s, r in zip(stats, ref_stats):
        np.testing.assert_array_equal(s.numpy(), r.numpy())
    assert len(outs) == (2 if keep_tiles else 1)
    if keep_tiles:
        _, tiles = apply(fused_ops._winograd_conv2d,
                         tf.nn.relu(args[0] * ref_stats[3][0] + ref_stats[3][1]), *args[1:3],
                         activation=activation, **CONV)
        np.testing.assert_allclose(outs[1].numpy(), tiles.numpy(), rtol=1e-6, atol=1e-6)


def test_folded_chain_gradients_match_finite_differences():
    """Float64 (the materializing path): through the output and the statistics, which the
    moving averages read."""
    args = [_array(2, 4, 5, 3, dtype=np.float64), _array(3, 3, 3, 2, dtype=np.float64),
            _array(2, dtype=np.float64), _array(3, dtype=np.float64) + 2.0,
            _array(3, dtype=np.float64)]

    def f(x, w, b, scale, offset):
        (z,), (mean, var, _, _) = _folded(x, w, b, scale, offset, activation="Relu")
        return z, mean, var

    check_grads(f, args, atol=1e-5, rtol=1e-4)


def test_folded_chain_gradients_equal_the_unfused_chain_on_the_winograd_path():
    args = [tf.constant(a) for a in (_array(4, 12, 11, 16), _array(3, 3, 16, 12) * 0.2,
                                     _array(12), _array(16), _array(16))]
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(args)
        (z,), _ = _folded(*args)
        ref, _ = _unfused(*args)
        loss, ref_loss = tf.reduce_sum(z * z), tf.reduce_sum(ref * ref)
    for g, e in zip(tape.gradient(loss, args), tape.gradient(ref_loss, args)):
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-4, atol=1e-3)


def _bn_relu_conv_stack(depth: int):
    return tf.keras.Sequential([layer for _ in range(depth) for layer in (
        tf.keras.layers.BatchNormalization(), tf.keras.layers.ReLU(),
        tf.keras.layers.Conv2D(16, 3, padding="same"))])


def _count(fn, name: str) -> int:
    return [n.op.name for n in fn.get_concrete_function().graph.nodes].count(name)


def test_forward_pass_without_a_tape_folds_every_chain_and_updates_moving_statistics():
    x = tf.constant(_array(4, 16, 16, 16))
    graph_model, eager_model = _bn_relu_conv_stack(3), _bn_relu_conv_stack(3)
    graph_model(x[:1])
    eager_model(x[:1])
    eager_model.set_weights(graph_model.get_weights())
    step = tf.function(lambda: graph_model(x, training=True))
    assert _count(step, "_BatchNormReluConv2D") == 3
    assert _count(step, "_FusedBatchNormEx") == 0
    verify(step.get_concrete_function().graph)
    np.testing.assert_allclose(step().numpy(), eager_model(x, training=True).numpy(),
                               rtol=1e-4, atol=1e-4)
    for g, e in zip(graph_model.non_trainable_variables, eager_model.non_trainable_variables):
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-5, atol=1e-6)


def test_regular_backprop_folds_every_chain_whose_activation_only_the_convolution_needs():
    """Each ReLU output is read by its convolution and that convolution's filter gradient
    only: share_tiles hands the gradient the tiles instead, so no activation is stored."""
    x = tf.constant(_array(4, 16, 16, 16))
    model = _bn_relu_conv_stack(3)
    model(x[:1])

    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(model(x, training=True) ** 2)
        return tape.gradient(loss, model.trainable_variables)

    graph_step = tf.function(step)
    assert _count(graph_step, "_BatchNormReluConv2D") == 3
    assert _count(graph_step, "_FusedBatchNormEx") == 0
    report = graph_step.get_concrete_function().optimization_report()
    assert "prologue: folded 3 batch norm + ReLU" in report
    for g, e in zip(graph_step(), step()):
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-3, atol=1e-3)


def test_an_activation_read_elsewhere_keeps_its_batch_norm():
    """The first ReLU's output also enters the loss: it must be stored for that, so the first
    filter gradient reads it (not tiles) and its batch norm still writes it."""
    x = tf.constant(_array(4, 16, 16, 16))
    inputs = tf.keras.Input((16, 16, 16))
    first = tf.keras.layers.ReLU()(tf.keras.layers.BatchNormalization()(inputs))
    h = tf.keras.layers.Conv2D(16, 3, padding="same")(first)
    h = _bn_relu_conv_stack(2)(h)
    model = tf.keras.Model(inputs, [h, first])

    def step():
        with tf.GradientTape() as tape:
            out, relu = model(x, training=True)
            loss = tf.reduce_sum(out ** 2) + tf.reduce_sum(relu)
        return loss, tape.gradient(loss, model.trainable_variables)

    graph_step = tf.function(step)
    names = [n.op.name for n in graph_step.get_concrete_function().graph.nodes]
    assert names.count("_BatchNormReluConv2D") == 2
    assert names.count("Conv2DBackpropFilter") == 1
    (graph_loss, graph_grads), (loss, grads) = graph_step(), step()
    np.testing.assert_allclose(graph_loss.numpy(), loss.numpy(), rtol=1e-5)
    for g, e in zip(graph_grads, grads):
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-3, atol=1e-3)


def test_thin_convolutions_keep_the_batch_norm():
    """Off the Winograd path (3 input channels) the input is stored either way."""
    x = tf.constant(_array(4, 16, 16, 3))
    model = tf.keras.Sequential([tf.keras.layers.BatchNormalization(), tf.keras.layers.ReLU(),
                                 tf.keras.layers.Conv2D(16, 3, padding="same")])
    model(x[:1])
    step = tf.function(lambda: model(x, training=True))
    assert _count(step, "_BatchNormReluConv2D") == 0
    _, report = prologue.run(step.get_concrete_function().traced_graph)
    assert report.startswith("prologue: folded 0 ")


def test_fused_ops_name_bad_coefficients():
    x, w, b = _array(4, 12, 11, 16), _array(3, 3, 16, 12), _array(12)
    stats = apply(fused_ops._batch_norm_statistics, x, _array(16), _array(16), epsilon=1e-3)
    with pytest.raises(tf.errors.InvalidArgumentError, match="the coefficients"):
        apply(fused_ops._batch_norm_relu_conv2d, x, w, b, _array(16), _array(16), *stats[:3],
              _array(2, 15), activation=None, keep_tiles=False, epsilon=1e-3, **CONV)
    with pytest.raises(tf.errors.InvalidArgumentError, match="channel count 16"):
        apply(fused_ops._batch_norm_statistics, x, _array(15), _array(16), epsilon=1e-3)


def test_folded_forward_graph_differentiated_by_an_outer_tape():
    """A traced forward pass (folded: nothing in it reads the normalized activations but the
    convolution) called under an eager tape: the fused ops' own gradients, equal to eager's."""
    x = tf.constant(_array(4, 16, 16, 16))
    model = _bn_relu_conv_stack(2)
    model(x[:1])
    forward = tf.function(lambda x: model(x, training=True))
    assert [n.op.name for n in forward.get_concrete_function(x).graph.nodes].count(
        "_BatchNormReluConv2D") == 2
    grads = []
    for fn in (forward, lambda x: model(x, training=True)):
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = tf.reduce_sum(fn(x) ** 2)
        grads.append(tape.gradient(loss, [x, *model.trainable_variables]))
    for g, e in zip(*grads):
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-3, atol=1e-3)
