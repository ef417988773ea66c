"""The pool_first pass: average pooling moved ahead of pointwise convolutions, forward and
backward, with the same results as eager execution."""

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.graph.passes import pool_first


def _step(x, w, b, pool, extra_reader=False):
    with tf.GradientTape() as tape:
        tape.watch([x, w, b])
        conv = tf.nn.bias_add(tf.nn.conv2d(x, w, 1, "VALID"), b)
        y = tf.nn.avg_pool2d(conv, *pool)
        loss = tf.reduce_sum(y * y)
        if extra_reader:
            loss += tf.reduce_sum(conv)
    return [loss] + tape.gradient(loss, [x, w, b])


def _inputs(hw, cin=5, cout=4):
    rng = np.random.default_rng(0)
    return (tf.constant(rng.standard_normal((2, hw, hw, cin))),
            tf.constant(rng.standard_normal((1, 1, cin, cout))),
            tf.constant(rng.standard_normal(cout)))


@pytest.mark.parametrize("hw, pool", [(8, (2, 2, "VALID")), (7, (3, 2, "SAME")),
                                      (9, (2, 2, "VALID"))])
def test_pooling_first_gives_eager_results_forward_and_backward(hw, pool):
    args = _inputs(hw)
    graph_fn = tf.function(lambda x, w, b: _step(x, w, b, pool))
    concrete = graph_fn.get_concrete_function(*args)
    assert "rewrote 4 nodes" in concrete.optimization_report()
    names = [n.op.name for n in concrete.graph.nodes]
    assert "AvgPoolGrad" in names  # now on the input gradient, after the small product
    for node in concrete.graph.nodes:
        if node.op.name in ("Conv2D", "_FusedConv2D", "Conv2DBackpropFilter"):
            assert node.inputs[0].node.op.name == "AvgPool"
    for got, want in zip(graph_fn(*args), _step(*args, pool)):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-12)


def test_a_convolution_read_elsewhere_keeps_its_forward_but_its_gradients_pool_first():
    args = _inputs(8)
    graph_fn = tf.function(lambda x, w, b: _step(x, w, b, (2, 2, "VALID"), extra_reader=True))
    concrete = graph_fn.get_concrete_function(*args)
    conv_inputs = [n.inputs[0].node.op.name for n in concrete.graph.nodes
                   if n.op.name in ("Conv2D", "_FusedConv2D")]
    assert conv_inputs and "AvgPool" not in conv_inputs  # the full-size output is needed
    for got, want in zip(graph_fn(*args), _step(*args, (2, 2, "VALID"), extra_reader=True)):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-12)


def test_wider_windows_and_stride_one_pools_are_left_alone():
    x = tf.constant(np.random.default_rng(1).standard_normal((1, 6, 6, 3)))

    @tf.function
    def f(x, w):
        three = tf.nn.avg_pool2d(tf.nn.conv2d(x, w, 1, "SAME"), 2, 2, "VALID")
        return three, tf.nn.avg_pool2d(tf.nn.conv2d(x, w[1:2, 1:2], 1, "SAME"), 3, 1, "SAME")

    w = tf.constant(np.ones((3, 3, 3, 2)))
    report = pool_first.run(f.get_concrete_function(x, w).traced_graph)[1]
    assert "rewrote 0 nodes" in report


def test_float32_densenet_transition_matches_eager_within_rounding():
    layers = tf.keras.layers
    inputs = tf.keras.Input((8, 8, 6))
    h = layers.Conv2D(6, 1)(layers.ReLU()(layers.BatchNormalization()(inputs)))
    model = tf.keras.Model(inputs, layers.AveragePooling2D(2)(h))
    x = tf.constant(np.random.default_rng(2).standard_normal((4, 8, 8, 6)).astype(np.float32))

    def grads(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.square(model(x, training=True)))
        return tape.gradient(loss, model.trainable_variables)

    for got, want in zip(tf.function(grads)(x), grads(x)):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-4)


def test_an_unknown_batch_size_still_pools_first():
    args = _inputs(8)
    spec = [tf.TensorSpec([None, 8, 8, 5], tf.float64), tf.TensorSpec([1, 1, 5, 4], tf.float64),
            tf.TensorSpec([4], tf.float64)]
    graph_fn = tf.function(lambda x, w, b: _step(x, w, b, (2, 2, "VALID")), input_signature=spec)
    assert "rewrote 4 nodes" in graph_fn.get_concrete_function().optimization_report()
    for got, want in zip(graph_fn(*args), _step(*args, (2, 2, "VALID"))):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-12)
