"""Concatenation chains grown in one buffer: the kernels, which chains the pass links, the
kernels that read a channel prefix in place, and graph against eager execution."""

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.framework.dispatch import apply
from tapeflow.graph.passes import grow_concat
from tapeflow.graph.verify import verify
from tapeflow.kernels import batch_norm as BN
from tapeflow.kernels import concat as K
from tapeflow.ops import fused_ops
from tapeflow.testing import check_grads

rng = np.random.default_rng(3)


def _array(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def test_start_and_append_build_the_concatenation_in_one_buffer():
    x, y1, y2 = _array(2, 5, 5, 4), _array(2, 5, 5, 3), _array(2, 5, 5, 2)
    c1 = K.start((x, y1), width=9)
    c2 = K.append(c1, (y2,))
    np.testing.assert_array_equal(c1, np.concatenate([x, y1], -1))
    np.testing.assert_array_equal(c2, np.concatenate([x, y1, y2], -1))
    assert np.shares_memory(c1, c2) and c2.flags.c_contiguous and not c1.flags.c_contiguous
    np.testing.assert_array_equal(c1, np.concatenate([x, y1], -1))  # untouched by the append


@pytest.mark.parametrize("prev", ["contiguous", "full", "sliced"])
def test_append_to_anything_but_a_prefix_with_room_is_a_fresh_concatenation(prev):
    y = _array(2, 5, 5, 3)
    base = K.start((_array(2, 5, 5, 4),), width=7)
    p = {"contiguous": _array(2, 5, 5, 4), "full": K.append(base, (y,)),
         "sliced": np.ascontiguousarray(_array(2, 5, 5, 9))[..., 2:6]}[prev]
    out = K.append(p, (y,))
    np.testing.assert_array_equal(out, np.concatenate([p, y], -1))
    assert not np.shares_memory(out, p)


def test_batch_norm_kernels_read_a_channel_prefix_in_place():
    """The same numbers as from a contiguous copy, for every kernel a concatenation feeds."""
    wide = _array(64, 32, 32, 64)  # 256 KB rows: above the kernels' split threshold
    x, xc = wide[..., :28], np.ascontiguousarray(wide[..., :28])
    scale, offset, g = _array(28), _array(28), _array(64, 32, 32, 28)
    for a, b in zip(BN.forward(x, scale, offset, 1e-3, True, True),
                    BN.forward(xc, scale, offset, 1e-3, True, True)):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
    _, mean, _, inv, ab = BN.forward(xc, scale, offset, 1e-3, True, True)
    for a, b in zip(BN.backward(g, x, scale, mean, inv, relu_coefficients=ab),
                    BN.backward(g, xc, scale, mean, inv, relu_coefficients=ab)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(BN.affine_relu(x, ab), BN.affine_relu(xc, ab))


def test_grown_concatenations_have_the_gradients_of_concat():
    def f(x, y1, y2):
        c1 = apply(fused_ops._concat_start, x, y1, width=6)
        return c1, apply(fused_ops._concat_append, c1, y2)

    check_grads(f, [_array(2, 3, 3, 2, dtype=np.float64), _array(2, 3, 3, 3, dtype=np.float64),
                    _array(2, 3, 3, 1, dtype=np.float64)])


def _dense_block(x, layers, training=True):
    """BN-ReLU-Conv3x3 layers, each output concatenated onto everything before it."""
    for bn, conv in layers:
        x = tf.concat([x, conv(tf.nn.relu(bn(x, training=training)))], axis=-1)
    return x


def _layers(depth: int, growth: int = 4):
    return [(tf.keras.layers.BatchNormalization(),
             tf.keras.layers.Conv2D(growth, 3, padding="same")) for _ in range(depth)]


def _op_names(fn, *args):
    concrete = fn.get_concrete_function(*args)
    return concrete, [n.op.name for n in concrete.graph.nodes]


@pytest.mark.parametrize("shape,growth,winograd", [((4, 8, 8, 6), 4, 0), ((4, 16, 16, 12), 12, 4)],
                         ids=["thin", "winograd"])
def test_a_dense_block_grows_one_buffer_and_matches_eager(shape, growth, winograd):
    """Thin: plain convolutions read the prefixes. Winograd: every layer's batch norm + ReLU is
    applied by the convolution's tiler as it reads the prefix in place (prologue), given the
    statistics of the earlier layers (reuse_statistics)."""
    x = tf.constant(_array(*shape))
    layers = _layers(4, growth)
    _dense_block(x, layers)
    variables = [v for layer in layers for part in layer for v in part.trainable_variables]

    def step(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = _dense_block(x, layers)
            loss = tf.reduce_sum(y * y)
        return y, tape.gradient(loss, [x] + variables)

    graph_step = tf.function(step)
    concrete, names = _op_names(graph_step, x)
    assert names.count("_ConcatStart") == 1 and names.count("_ConcatAppend") == 3
    assert not [n for n in concrete.graph.nodes  # (statistics are concatenated on axis 0)
                if n.op.name == "ConcatV2" and n.outputs[0].shape.rank == 4]
    assert names.count("_BatchNormReluConv2D") == winograd
    report = concrete.optimization_report()
    assert "grow_concat: grew 4 concatenations in place in 1 buffers" in report
    assert "reuse_statistics: gave 3 batch norms" in report
    verify(concrete.graph)
    (y, grads), (eager_y, eager_grads) = graph_step(x), step(x)
    np.testing.assert_allclose(y.numpy(), eager_y.numpy(), rtol=1e-4, atol=1e-4)
    for g, e in zip(grads, eager_grads):
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-3, atol=1e-3)


def test_a_prefix_with_two_appenders_is_not_shared():
    """c1 feeds two concatenations as their first input: each would write the channels after
    c1, so neither may grow c1's buffer."""
    a, b, c = (tf.constant(_array(2, 3, 3, k)) for k in (2, 3, 4))

    def f(a, b, c):
        c1 = tf.concat([a, b], -1)
        return tf.concat([c1, c], -1) * 2.0, tf.concat([c1, b], -1) + 1.0

    concrete, names = _op_names(tf.function(f), a, b, c)
    assert names.count("ConcatV2") == 3
    for got, want in zip(tf.function(f)(a, b, c), f(a, b, c)):
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_other_axes_and_single_concatenations_are_left_alone():
    a, b = tf.constant(_array(2, 3)), tf.constant(_array(2, 3))
    f = tf.function(lambda a, b: (tf.concat([tf.concat([a, b], 0), a], 0),
                                  tf.concat([a, b], 1)))
    _, report = grow_concat.run(f.get_concrete_function(a, b).traced_graph)
    assert report == "grow_concat: grew 0 concatenations in place in 0 buffers"
