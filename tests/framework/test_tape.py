"""tf.GradientTape: watching, persistence, higher order, structures, jacobians, custom grads."""

import numpy as np
import pytest

import tapeflow as tf


def test_trainable_variables_are_watched_automatically():
    x = tf.Variable(3.0)
    with tf.GradientTape() as tape:
        y = x ** 2
    assert float(tape.gradient(y, x)) == 6.0


def test_constants_need_watch():
    x = tf.constant(3.0)
    with tf.GradientTape() as tape:
        y = x * x
    assert tape.gradient(y, x) is None
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    assert float(tape.gradient(y, x)) == 6.0


def test_watch_accessed_variables_false():
    a, b = tf.Variable(2.0), tf.Variable(3.0)
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(a)
        y = a * b
    ga, gb = tape.gradient(y, [a, b])
    assert float(ga) == 3.0 and gb is None


def test_non_trainable_variable_not_watched():
    v = tf.Variable(2.0, trainable=False)
    with tf.GradientTape() as tape:
        y = v * v
    assert tape.gradient(y, v) is None


def test_persistent_tape_and_single_use():
    x = tf.constant(2.0)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        z = y * y
    assert float(tape.gradient(z, x)) == 32.0
    assert float(tape.gradient(y, x)) == 4.0
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    tape.gradient(y, x)
    with pytest.raises(RuntimeError, match="non-persistent"):
        tape.gradient(y, x)


def test_nested_tapes_give_higher_order_derivatives():
    x = tf.Variable(2.0)
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            y = x ** 3
        dy = inner.gradient(y, x)
    assert float(dy) == 12.0
    assert float(outer.gradient(dy, x)) == 12.0  # d2/dx2 x**3 = 6x


def test_third_order():
    x = tf.constant(1.5)
    with tf.GradientTape() as t3:
        t3.watch(x)
        with tf.GradientTape() as t2:
            t2.watch(x)
            with tf.GradientTape() as t1:
                t1.watch(x)
                y = tf.sin(x)
            d1 = t1.gradient(y, x)
        d2 = t2.gradient(d1, x)
    np.testing.assert_allclose(t3.gradient(d2, x).numpy(), -np.cos(1.5), rtol=1e-6)


def test_output_gradients():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    g = tape.gradient(y, x, output_gradients=tf.constant([10.0, 100.0]))
    np.testing.assert_array_equal(g.numpy(), [20.0, 400.0])


def test_sources_keep_their_structure():
    a, b, c = tf.Variable(1.0), tf.Variable(2.0), tf.Variable(3.0)
    with tf.GradientTape(persistent=True) as tape:
        y = a * b * c
    g = tape.gradient(y, {"ab": [a, b], "c": (c,)})
    assert set(g) == {"ab", "c"} and isinstance(g["ab"], list) and isinstance(g["c"], tuple)
    assert [float(t) for t in g["ab"]] == [6.0, 3.0] and float(g["c"][0]) == 2.0
    assert isinstance(tape.gradient(y, (a, b)), tuple)


def test_unconnected_gradients():
    x, z = tf.Variable(1.0), tf.Variable([1.0, 2.0])
    with tf.GradientTape(persistent=True) as tape:
        y = x * 2
    assert tape.gradient(y, z) is None
    g = tape.gradient(y, z, unconnected_gradients=tf.UnconnectedGradients.ZERO)
    np.testing.assert_array_equal(g.numpy(), [0.0, 0.0])
    g = tape.gradient(y, z, unconnected_gradients="zero")
    assert g.shape == (2,)


def test_integer_tensors_get_no_gradient():
    x = tf.constant(3)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    assert tape.gradient(y, x) is None


def test_stop_gradient():
    x = tf.Variable(2.0)
    with tf.GradientTape() as tape:
        y = x * tf.stop_gradient(x)
    assert float(tape.gradient(y, x)) == 2.0


def test_custom_gradient():
    @tf.custom_gradient
    def clip_grad(x):
        def grad(dy):
            return tf.clip_by_value(dy, -0.1, 0.1)

        return x * 1.0, grad

    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = clip_grad(x) * 5.0
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), [0.1, 0.1])


def test_custom_gradient_log1pexp_is_stable():
    @tf.custom_gradient
    def log1pexp(x):
        e = tf.exp(x)

        def grad(dy):
            return dy * (1 - 1 / (1 + e))

        return tf.math.log(1 + e), grad

    x = tf.constant(100.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = log1pexp(x)
    assert float(tape.gradient(y, x)) == 1.0


def test_jacobian_and_batch_jacobian():
    x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
    j = tape.jacobian(y, x)
    assert j.shape == (2, 2, 2, 2)
    want = np.zeros((2, 2, 2, 2))
    for i in range(2):
        for k in range(2):
            want[i, k, i, k] = 2 * x.numpy()[i, k]
    np.testing.assert_array_equal(j.numpy(), want)
    bj = tape.batch_jacobian(y, x)
    assert bj.shape == (2, 2, 2)
    np.testing.assert_array_equal(bj.numpy(), [np.diag([2.0, 4.0]), np.diag([6.0, 8.0])])


def test_gradient_through_many_ops_matches_closed_form():
    w = tf.Variable([[0.5, -1.0], [2.0, 0.25]])
    x = tf.constant([[1.0, 2.0]])
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.tanh(x @ w) ** 2)
    h = np.tanh(x.numpy() @ w.numpy())
    want = x.numpy().T @ (h * (1 - h ** 2))  # d mean(h^2) = 2h/2 (1 - h^2) dh
    np.testing.assert_allclose(tape.gradient(loss, w).numpy(), want, rtol=1e-6)


def test_stop_recording():
    x = tf.Variable(1.0)
    with tf.GradientTape(persistent=True) as tape:
        y = x * 2
        with tape.stop_recording():
            z = x * 3
    assert tape.gradient(z, x) is None
    assert float(tape.gradient(y, x)) == 2.0
