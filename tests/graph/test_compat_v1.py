"""tf.compat.v1 over the graph IR: seed 004's TF1 program and seed 003's session slides."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.framework import errors

v1 = tf.compat.v1


def test_seed_004_tf1_program_prints_expected_output():
    program = textwrap.dedent("""
        import tapeflow as tf
        tf.compat.v1.disable_eager_execution()
        print(f'TF executing eagerly is {tf.executing_eagerly()}')
        in_a = tf.compat.v1.placeholder(dtype=tf.float32, shape=(2))
        in_b = tf.compat.v1.placeholder(dtype=tf.float32, shape=(2))
        def forward(x):
          with tf.compat.v1.variable_scope("matmul", reuse=tf.compat.v1.AUTO_REUSE):
            W = tf.compat.v1.get_variable("W", initializer=tf.ones(shape=(2,2)),
                                regularizer=tf.keras.regularizers.L2(0.04))
            b = tf.compat.v1.get_variable("b", initializer=tf.zeros(shape=(2)))
            return W * x + b
        out_a = forward(in_a)
        out_b = forward(in_b)
        reg_loss=tf.compat.v1.losses.get_regularization_loss(scope="matmul")
        with tf.compat.v1.Session() as sess:
          sess.run(tf.compat.v1.global_variables_initializer())
          outs = sess.run([out_a, out_b, reg_loss],
                        feed_dict={in_a: [1, 0], in_b: [0, 1]})
          print(outs)
        """)
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                         check=True).stdout
    assert out == ("TF executing eagerly is False\n"
                   "[array([[1., 0.],\n       [1., 0.]], dtype=float32), "
                   "array([[0., 1.],\n       [0., 1.]], dtype=float32), 0.16]\n")


def test_seed_003_session_slides():
    with tf.Graph().as_default() as g:
        assert not tf.executing_eagerly()
        x = tf.add(tf.constant(2), tf.constant(3))
        w = tf.Variable(10)
        with v1.Session() as sess:
            assert sess.run(x) == 5
            with pytest.raises(errors.FailedPreconditionError, match="uninitialized value"):
                sess.run(w)
            sess.run(w.initializer)
            w.assign(100)
            assert sess.run(w) == 10
            assign_op = w.assign(100)
            sess.run(assign_op)
            assert sess.run(w) == 100
        a = v1.placeholder(tf.float32, shape=[3])
        b = tf.constant([5, 5, 5], tf.float32)
        with v1.Session(graph=g) as sess:
            np.testing.assert_array_equal(sess.run(tf.add(a, b), {a: [1, 2, 3]}), [6, 7, 8])
            with pytest.raises(errors.InvalidArgumentError, match="must feed a value"):
                sess.run(tf.add(a, b))
            result = sess.run({"sum": tf.add(a, b), "pair": (b, [a])}, feed_dict={a: [0, 0, 1]})
            assert sorted(result) == ["pair", "sum"] and isinstance(result["pair"], tuple)
    assert tf.executing_eagerly()


def test_variable_scope_reuse_rules():
    with tf.Graph().as_default():
        with v1.variable_scope("s"):
            v = v1.get_variable("v", shape=[2, 3])
        assert v.name == "s/v:0"
        with pytest.raises(ValueError, match="already exists"):
            with v1.variable_scope("s"):
                v1.get_variable("v", shape=[2, 3])
        with v1.variable_scope("s", reuse=True):
            assert v1.get_variable("v") is v
            with pytest.raises(ValueError, match="does not exist"):
                v1.get_variable("other", shape=[1])
        with v1.variable_scope("s", reuse=v1.AUTO_REUSE):
            assert v1.get_variable("v") is v
            assert v1.get_variable("new", shape=[1]).name == "s/new:0"
        assert len(v1.global_variables()) == 2


def test_placeholder_none_dims_and_feed_shape_check():
    with tf.Graph().as_default():
        x = v1.placeholder(tf.float32, shape=[None, 2])
        y = tf.reduce_sum(x, axis=1)
        with v1.Session() as sess:
            assert sess.run(y, {x: np.ones((4, 2))}).shape == (4,)
            with pytest.raises(ValueError, match="Cannot feed value of shape"):
                sess.run(y, {x: np.ones((4, 3))})


def test_placeholder_needs_a_graph():
    with pytest.raises(RuntimeError, match="not compatible with eager execution"):
        v1.placeholder(tf.float32, [2])


def test_disable_eager_execution_builds_graphs_then_enable_restores():
    v1.reset_default_graph()
    v1.disable_eager_execution()
    try:
        assert not tf.executing_eagerly()
        x = v1.placeholder(tf.float32, [2])
        y = x * 2.0
        assert isinstance(y, tf.Tensor) and y.graph is v1.get_default_graph()
        with v1.Session() as sess:
            np.testing.assert_array_equal(sess.run(y, {x: [1.0, 2.0]}), [2.0, 4.0])
            np.testing.assert_array_equal(y.eval({x: [3.0, 4.0]}), [6.0, 8.0])
    finally:
        v1.enable_eager_execution()
    assert tf.executing_eagerly()


def test_control_dependencies_run_the_assign_first():
    with tf.Graph().as_default():
        w = tf.Variable(1.0)
        assign = w.assign(5.0)
        with tf.control_dependencies([assign]):
            y = tf.identity(tf.constant(2.0)) * 1.0
        with v1.Session() as sess:
            sess.run(w.initializer)
            assert sess.run(y) == 2.0
            assert sess.run(w) == 5.0


def test_seed_003_two_assign_ops_in_one_run():
    with tf.Graph().as_default():
        x, y = tf.Variable(1.0), tf.Variable(1.0)
        add_op = x.assign(x + y)
        div_op = y.assign(y / 2)
        init = v1.global_variables_initializer()
        with v1.Session() as sess:
            init.run()
            for _ in range(50):
                sess.run([add_op, div_op])
            assert 2.0 <= sess.run(x) <= 3.0


def test_tf1_training_loop_with_gradients_and_session():
    rng = np.random.default_rng(0)
    x_np = rng.normal(size=(32, 3))
    y_np = x_np @ np.array([[1.0], [-2.0], [0.5]]) + 0.3
    with tf.Graph().as_default():
        x = v1.placeholder(tf.float64, [None, 3])
        y = v1.placeholder(tf.float64, [None, 1])
        w = tf.Variable(np.zeros((3, 1)))
        b = tf.Variable(np.zeros(1))
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
        gw, gb = v1.gradients(loss, [w, b])
        train = tf.group(w.assign_sub(0.1 * gw), b.assign_sub(0.1 * gb))
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            first = sess.run(loss, {x: x_np, y: y_np})
            for _ in range(200):
                sess.run(train, {x: x_np, y: y_np})
            last = sess.run(loss, {x: x_np, y: y_np})
            np.testing.assert_allclose(sess.run(w).ravel(), [1.0, -2.0, 0.5], atol=1e-3)
    assert last < 1e-6 < first


def test_gradients_match_tape():
    with tf.Graph().as_default():
        x = v1.placeholder(tf.float64, [2])
        y = tf.reduce_sum(tf.sin(x) * x)
        (g,) = v1.gradients(y, [x])
        with v1.Session() as sess:
            got = sess.run(g, {x: [0.5, 1.5]})
    xv = np.array([0.5, 1.5])
    np.testing.assert_allclose(got, np.cos(xv) * xv + np.sin(xv))


@pytest.mark.parametrize("make", [lambda: v1.train.GradientDescentOptimizer(0.1),
                                  lambda: v1.train.AdamOptimizer(0.05)])
def test_tf1_optimizer_minimize(make):
    rng = np.random.default_rng(1)
    x_np = rng.normal(size=(64, 2)).astype(np.float32)
    y_np = (x_np @ np.array([[2.0], [-1.0]], np.float32)).astype(np.float32)
    with tf.Graph().as_default():
        x = v1.placeholder(tf.float32, [None, 2])
        y = v1.placeholder(tf.float32, [None, 1])
        w = v1.get_variable("w", shape=[2, 1])
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
        step = v1.Variable(0, trainable=False)
        train_op = make().minimize(loss, global_step=step)
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            for _ in range(300):
                sess.run(train_op, {x: x_np, y: y_np})
            assert sess.run(step) == 300
            assert sess.run(loss, {x: x_np, y: y_np}) < 1e-3
    assert v1.train.Checkpoint is tf.train.Checkpoint
