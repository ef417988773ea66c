"""A batch norm of a concatenation given the statistics its parts already have: which batch
norms the pass rewrites, _ChannelMoments against NumPy and finite differences, and graph
against eager execution (outputs, gradients, moving statistics)."""

import numpy as np

import tapeflow as tf
from tapeflow.framework.dispatch import apply
from tapeflow.graph.passes import reuse_statistics
from tapeflow.graph.verify import verify
from tapeflow.ops import fused_ops, normalization_ops
from tapeflow.testing import check_grads

rng = np.random.default_rng(5)


def _array(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def test_channel_moments_are_a_batch_norms_statistics():
    x = _array(4, 5, 6, 3) * 3.0 + 1.0
    mean, var = apply(fused_ops._channel_moments, tf.constant(x))
    flat = x.reshape(-1, 3).astype(np.float64)
    np.testing.assert_allclose(mean.numpy(), flat.mean(0), rtol=1e-6)
    np.testing.assert_allclose(var.numpy(), flat.var(0, ddof=1), rtol=1e-5)
    ones, zeros = tf.constant(np.ones(3, np.float32)), tf.constant(np.zeros(3, np.float32))
    _, bn_mean, bn_var, _ = apply(normalization_ops._fused_batch_norm, tf.constant(x), ones,
                                  zeros, epsilon=1e-3)
    np.testing.assert_array_equal(mean.numpy(), bn_mean.numpy())
    np.testing.assert_array_equal(var.numpy(), bn_var.numpy())


def test_channel_moments_gradient_matches_finite_differences():
    check_grads(lambda x: apply(fused_ops._channel_moments, x),
                [_array(3, 4, 2, dtype=np.float64)])


def _layers():
    return tf.keras.layers.BatchNormalization(), tf.keras.layers.BatchNormalization()


def test_the_batch_norm_of_a_concatenation_takes_its_parts_statistics():
    """bn2 reads [a, b]; bn1 already read a: bn2 is given bn1's statistics for a and
    _ChannelMoments' for b, and computes what eager execution does."""
    a, b = tf.constant(_array(4, 6, 6, 5) + 2.0), tf.constant(_array(4, 6, 6, 3) * 2.0)
    graph_layers, eager_layers = _layers(), _layers()

    def f(a, b, bn1, bn2):
        h1 = tf.nn.relu(bn1(a, training=True))
        return h1, bn2(tf.concat([a, b], axis=-1), training=True)

    for layers in (graph_layers, eager_layers):
        f(a, b, *layers)
    for g, e in zip(graph_layers, eager_layers):
        e.set_weights(g.get_weights())

    def step(a, b, layers):
        with tf.GradientTape() as tape:
            tape.watch([a, b])
            h1, h2 = f(a, b, *layers)
            loss = tf.reduce_sum(h1 * h2[..., :5]) + tf.reduce_sum(h2 ** 3)
        return (h1, h2), tape.gradient(loss, [a, b])

    graph_step = tf.function(lambda a, b: step(a, b, graph_layers))
    concrete = graph_step.get_concrete_function(a, b)
    assert "reuse_statistics: gave 1 batch norms" in concrete.optimization_report()
    names = [n.op.name for n in concrete.graph.nodes]
    assert names.count("_ChannelMoments") == 1
    verify(concrete.graph)
    (outs, grads), (eager_outs, eager_grads) = graph_step(a, b), step(a, b, eager_layers)
    for got, want in zip([*outs, *grads], [*eager_outs, *eager_grads]):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-4)
    for g, e in zip(graph_layers, eager_layers):
        for gv, ev in zip(g.non_trainable_variables, e.non_trainable_variables):
            np.testing.assert_allclose(gv.numpy(), ev.numpy(), rtol=1e-5, atol=1e-6)


def test_no_earlier_statistics_no_rewrite():
    """Neither part has a batch norm before the concatenation's (bn1 reads a only after)."""
    a, b = tf.constant(_array(2, 3, 3, 2)), tf.constant(_array(2, 3, 3, 2))
    bn1, bn2 = _layers()

    def f(a, b):
        return bn2(tf.concat([a, b], -1), training=True), bn1(a, training=True)

    _, report = reuse_statistics.run(tf.function(f).get_concrete_function(a, b).traced_graph)
    assert report.startswith("reuse_statistics: gave 0 batch norms")
