"""Bias gradients taken from the batch-norm gradient's dx sums: which BiasAddGrad nodes the pass
rewrites, graph against eager execution and against finite differences, the same bits run to
run, and the ones it leaves alone."""

import numpy as np

import tapeflow as tf
from tapeflow.graph.passes import bias_grad_sums
from tapeflow.graph.verify import verify

rng = np.random.default_rng(7)


def _args(dtype):
    return [tf.constant(rng.standard_normal(s).astype(dtype))
            for s in ((2, 6, 6, 3), (3, 3, 3, 4), (4,), (4,), (7,), (7,))]


def _dense_layer(x, w, b, scale, offset):
    """A dense-block layer and a reader of its concatenation besides the batch norm, so the
    concatenation's gradient (and the new channels' bias gradient) is not zero."""
    y = tf.nn.bias_add(tf.nn.conv2d(x, w, 1, "SAME"), b)
    c = tf.concat([x, y], axis=-1)
    z, _, _ = tf.compat.v1.nn.fused_batch_norm(c, scale, offset, is_training=True)
    return tf.reduce_sum(tf.nn.relu(z) ** 2) + tf.reduce_sum(c ** 3) * 0.1


def _step(x, w, b, b2, scale, offset):
    with tf.GradientTape() as tape:
        tape.watch([x, w, b, b2, scale, offset])
        loss = _dense_layer(x, w, b, scale, offset)
        # a convolution without a batch norm after it: its bias gradient stays BiasAddGrad
        loss += tf.reduce_sum(tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x, w, 1, "SAME"), b2)))
    return loss, tape.gradient(loss, [x, w, b, b2, scale, offset])


def _inputs(dtype):
    x, w, b, b2, scale, offset = _args(dtype)
    return x, w, b, b2[:4], scale, offset


def test_the_bias_gradient_of_a_concatenation_piece_is_the_dx_sums_slice():
    args = _inputs(np.float32)
    graph_step = tf.function(_step)
    concrete = graph_step.get_concrete_function(*args)
    report = concrete.optimization_report()
    assert ("bias_grad_sums: took 1 bias gradients from the dx sums of 1 batch-norm gradients"
            in report)
    names = [n.op.name for n in concrete.graph.nodes]
    assert names.count("BiasAddGrad") == 1  # b2's: no batch norm reads its conv
    grad_ex = [n for n in concrete.graph.nodes if n.op.name == "_FusedBatchNormGradEx"]
    assert [n.attrs.get("dx_sums") for n in grad_ex] == [True]
    verify(concrete.graph)
    (loss, grads), (eager_loss, eager_grads) = graph_step(*args), _step(*args)
    np.testing.assert_allclose(loss.numpy(), eager_loss.numpy(), rtol=1e-5)
    for got, want in zip(grads, eager_grads):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4,
                                   atol=1e-4 * np.abs(want.numpy()).max())
    again = graph_step(*args)[1]
    for a, b in zip(grads, again):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_the_bias_gradient_matches_finite_differences():
    args = list(_inputs(np.float64))
    grad_b = tf.function(_step)(*args)[1][2].numpy()
    assert np.abs(grad_b).max() > 1e-3  # the concatenation's other reader: not zero
    eps, b = 1e-6, args[2].numpy()
    for j in range(b.size):
        plus, minus = b.copy(), b.copy()
        plus[j] += eps
        minus[j] -= eps
        lp = _step(*args[:2], tf.constant(plus), *args[3:])[0].numpy()
        lm = _step(*args[:2], tf.constant(minus), *args[3:])[0].numpy()
        np.testing.assert_allclose(grad_b[j], (lp - lm) / (2 * eps), rtol=1e-5, atol=1e-6)


def test_a_bias_gradient_of_another_tensor_is_left_alone():
    args = _inputs(np.float32)[:4]

    def step(x, w, b, b2):
        with tf.GradientTape() as tape:
            tape.watch([b, b2])
            y = tf.nn.bias_add(tf.nn.conv2d(x, w, 1, "SAME"), b)
            loss = tf.reduce_sum(tf.nn.relu(y) * b2)
        return tape.gradient(loss, [b, b2])

    graph = tf.function(step).get_concrete_function(*args).traced_graph
    _, report = bias_grad_sums.run(graph)
    assert report == ("bias_grad_sums: took 0 bias gradients from the dx sums of 0 batch-norm "
                      "gradients")
