"""The eager snippets of seeds 003 and 004, asserting what the seeds print."""

import numpy as np

import tapeflow as tf


def test_seed003_matmul_prints_like_tf():
    a = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    assert str(tf.matmul(a, a)) == (
        "tf.Tensor(\n[[ 7. 10.]\n [15. 22.]], shape=(2, 2), dtype=float32)")


def test_seed003_numpy_compatibility_both_ways():
    a = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    foo = tf.matmul(a, a)
    bar = foo.numpy()
    assert repr(bar) == "array([[ 7., 10.],\n       [15., 22.]], dtype=float32)"
    total = tf.reduce_sum(bar)
    assert repr(total) == "<tf.Tensor: shape=(), dtype=float32, numpy=54.0>"


def test_seed003_derivative_of_square():
    x = tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.square(x)
    assert float(tape.gradient(y, x)) == 6.0


def test_seed003_tape_with_variables():
    c = tf.Variable([[2.0]])
    d = tf.Variable([[3.0]])
    with tf.GradientTape() as tape:
        loss = c * d
    grad = tape.gradient(loss, d)
    assert grad.numpy().tolist() == [[2.0]]


def test_seed003_executing_eagerly():
    assert tf.executing_eagerly() is True


def test_seed004_simple_tape():
    x = tf.Variable(3.0)
    with tf.GradientTape() as tape:
        y = x ** 2
    dy_dx = tape.gradient(y, x)
    assert dy_dx.numpy() == 6.0


def test_seed004_w_b_example():
    w = tf.Variable(tf.random.normal((3, 2)), name="w")
    b = tf.Variable(tf.zeros(2, dtype=tf.float32), name="b")
    x = [[1.0, 2.0, 3.0]]
    with tf.GradientTape(persistent=True) as tape:
        y = x @ w + b
        loss = tf.reduce_mean(y ** 2)
    [dl_dw, dl_db] = tape.gradient(loss, [w, b])
    assert w.shape == (3, 2) and dl_dw.shape == (3, 2) and dl_db.shape == (2,)
    assert str(w.shape) == "(3, 2)" and str(dl_dw.shape) == "(3, 2)"
    yv = np.array(x, np.float32) @ w.numpy()
    np.testing.assert_allclose(dl_dw.numpy(), np.array(x).T @ yv, rtol=1e-5)  # d mean(y^2)/dw
    my_vars = {"w": w, "b": b}
    grad = tape.gradient(loss, my_vars)
    np.testing.assert_allclose(grad["b"].numpy(), yv[0], rtol=1e-5)
