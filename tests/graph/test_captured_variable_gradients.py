"""Variables read inside a traced while_loop body or cond branch get their gradients.

The reads are hoisted out of the sub-graph as captures; the capture is made by an op on the
variable, so a tape around the loop links its gradient to the variable (before, the loop's
gradient for the capture was computed and then dropped: None for the variable).
"""

import numpy as np
import pytest

import tapeflow as tf

rng = np.random.default_rng(6)


def _rnn_loss(x, w, u):
    """A tanh RNN over a run-time number of steps, u read only inside the loop body."""
    proj = tf.matmul(x, w)
    steps = tf.shape(x)[1]

    def body(t, h):
        return t + 1, tf.tanh(proj[:, t, :] + tf.matmul(h, u))

    _, h = tf.while_loop(lambda t, h: t < steps, body,
                         [tf.constant(0), tf.zeros([tf.shape(x)[0], 4], x.dtype)])
    branch = tf.cond(tf.reduce_sum(h) > -1e9, lambda: tf.reduce_sum(h * u[0]),
                     lambda: tf.reduce_sum(h))
    return tf.reduce_sum(h ** 2) + branch


def _grads(fn, x, w, u):
    with tf.GradientTape() as tape:
        loss = fn(x, w, u)
    return tape.gradient(loss, [w, u])


def test_loop_and_branch_variables_get_the_eager_gradients():
    x = tf.constant(rng.standard_normal((2, 5, 3)))
    w = tf.Variable(rng.standard_normal((3, 4)) * 0.5)
    u = tf.Variable(rng.standard_normal((4, 4)) * 0.5)
    graph = tf.function(lambda x: _grads(_rnn_loss, x, w, u),
                        input_signature=[tf.TensorSpec((None, None, 3), tf.float64)])
    traced = graph(x)
    assert traced[1] is not None
    for a, b in zip(traced, _grads(_rnn_loss, x, w, u)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10)


def test_loop_variable_gradient_matches_finite_differences():
    x = tf.constant(rng.standard_normal((2, 4, 3)))
    w = tf.Variable(rng.standard_normal((3, 4)) * 0.5)
    u0 = rng.standard_normal((4, 4)) * 0.5
    u = tf.Variable(u0)
    loss = tf.function(lambda: _rnn_loss(x, w, u))
    grad = tf.function(lambda: _grads(_rnn_loss, x, w, u)[1])().numpy()
    numeric = np.zeros_like(u0)
    for j in np.ndindex(u0.shape):
        step = np.zeros_like(u0)
        step[j] = 1e-6
        u.assign(u0 + step)
        hi = float(loss())
        u.assign(u0 - step)
        lo = float(loss())
        numeric[j] = (hi - lo) / 2e-6
    u.assign(u0)
    np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("x,want", [(1.0, 1.0), (-1.0, 2.0)])
def test_a_variable_read_in_both_branches_of_a_traced_cond_gets_its_gradient_once(x, want):
    """Each branch's hoisted read was its own ReadVariableOp; differentiating the function
    mapped both to one placeholder and the branch not taken added the other's gradient (2.0
    for y = w)."""
    w = tf.Variable(3.0)
    f = tf.function(lambda p: tf.cond(p > 0, lambda: w * 1.0, lambda: w * 2.0))
    with tf.GradientTape() as tape:
        y = f(tf.constant(x))
    assert float(tape.gradient(y, w)) == want


def test_a_loop_condition_sees_the_assignments_of_its_body():
    """The body assigns the variable the condition reads: that read must not be hoisted out."""
    v = tf.Variable(0.0)

    def body(i):
        v.assign_add(1.0)
        return (i + 1,)

    count = tf.function(lambda: tf.while_loop(lambda i: v < 3.0, body, [tf.constant(0)]))
    steps = count()
    steps = steps[0] if isinstance(steps, (list, tuple)) else steps
    assert float(v.numpy()) == 3.0 and int(steps) == 3


def test_a_variable_read_in_a_traced_loop_body_gets_the_summed_gradient():
    w = tf.Variable(3.0)
    g = tf.function(lambda x: tf.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a + w * x),
                                            [0, 0.0])[1])
    with tf.GradientTape() as tape:
        y = g(tf.constant(2.0))
    assert float(y) == 18.0 and float(tape.gradient(y, w)) == 6.0
