"""tf.cond / tf.while_loop / TensorArray and AutoGraph, eager vs graph, with gradients."""

import numpy as np
import pytest

import tapeflow as tf


def test_seed_003_while_tanh():
    @tf.function
    def f(x):
        while tf.reduce_sum(x) > 1:
            x = tf.tanh(x)
        return x

    x = tf.random.uniform([10])
    out = f(x).numpy()
    expected = x.numpy()
    while expected.sum() > 1:
        expected = np.tanh(expected)
    np.testing.assert_allclose(out, expected, rtol=1e-6)
    code = tf.autograph.to_code(f)
    assert "ag__.while_stmt" in code and "def _ag_while_body_0(x)" in code


def test_for_range_with_if_and_continue():
    @tf.function
    def f(n):
        s = 0
        for i in tf.range(n):
            if i % 2 == 0:
                s += i
            else:
                continue
        return s

    assert int(f(tf.constant(10))) == 20
    assert int(f(tf.constant(7))) == 12
    assert f.experimental_get_tracing_count() == 1


def test_if_elif_else_with_returns():
    @tf.function
    def f(x):
        if x > 0:
            return x * 2.0
        elif x < -5.0:
            return -x
        return x + 100.0

    assert [float(f(tf.constant(v))) for v in (3.0, -10.0, -1.0)] == [6.0, 10.0, 99.0]
    assert f.experimental_get_tracing_count() == 1


def test_nested_loops_with_break():
    @tf.function
    def f(n):
        total = 0
        for i in tf.range(n):
            j = 0
            while j < 10:
                if j >= i:
                    break
                total += 1
                j += 1
        return total

    assert int(f(tf.constant(5))) == 10


def test_python_control_flow_stays_python():
    @tf.function
    def f(x, flag):
        for _ in range(3):
            x = x + 1.0
        if flag:
            x = x * 10.0
        return x

    assert float(f(tf.constant(0.0), True)) == 30.0
    graph = f.get_concrete_function(tf.constant(0.0), True).graph
    assert not any(n.op.name in ("While", "StatelessWhile", "If", "StatelessIf")
                   for n in graph.nodes)


def test_cond_and_while_gradients_match_finite_differences():
    w = tf.Variable(1.5, dtype=tf.float64)

    @tf.function
    def f(x):
        y = tf.cond(tf.reduce_sum(x) > 0, lambda: x * w, lambda: x - 1.0)
        _, z = tf.while_loop(lambda i, z: i < 3, lambda i, z: (i + 1, tf.sin(z) * w), [0, y])
        return tf.reduce_sum(z)

    def numeric(xv, wv):
        y = xv * wv if xv.sum() > 0 else xv - 1.0
        for _ in range(3):
            y = np.sin(y) * wv
        return y.sum()

    for sign in (1.0, -1.0):
        x = tf.constant(sign * np.array([0.3, 0.7]))
        with tf.GradientTape() as tape:
            tape.watch(x)
            out = f(x)
        gx, gw = tape.gradient(out, [x, w])
        eps = 1e-6
        num_x = [(numeric(x.numpy() + eps * e, 1.5) - numeric(x.numpy() - eps * e, 1.5)) / 2e-6
                 for e in np.eye(2)]
        num_w = (numeric(x.numpy(), 1.5 + eps) - numeric(x.numpy(), 1.5 - eps)) / 2e-6
        np.testing.assert_allclose(gx.numpy(), num_x, rtol=1e-6)
        np.testing.assert_allclose(float(gw), num_w, rtol=1e-6)


def test_cond_eager_is_python():
    assert float(tf.cond(tf.constant(True), lambda: 1.0, lambda: 2.0)) == 1.0
    i, s = tf.while_loop(lambda i, s: i < 4, lambda i, s: (i + 1, s + i), [0, 0])
    assert (int(i), int(s)) == (4, 6)


def test_tensor_array_accumulates_in_loop():
    @tf.function
    def f(n):
        ta = tf.TensorArray(tf.float32, size=n)
        for i in tf.range(n):
            ta = ta.write(i, tf.cast(i, tf.float32) * 2.0)
        return ta.stack()

    np.testing.assert_allclose(f(tf.constant(4)).numpy(), [0.0, 2.0, 4.0, 6.0])


def test_undefined_branch_variable_error():
    @tf.function
    def f(x):
        if x > 0:
            y = x
        return y + 1.0

    with pytest.raises(NameError, match="'y' is used but is not defined"):
        f(tf.constant(1.0))


def test_cond_branch_structure_mismatch():
    @tf.function
    def f(x):
        return tf.cond(x > 0, lambda: (x, x), lambda: x)

    with pytest.raises(ValueError, match="same structure"):
        f(tf.constant(1.0))


def _helper_abs(x):
    if x > 0:
        return x
    return -x


def test_user_functions_called_from_a_traced_function_are_converted():
    @tf.function
    def f(x):
        return _helper_abs(x) + _helper_abs(-x)

    assert float(f(tf.constant(-2.0))) == 4.0
    assert "ag__.call(_helper_abs, x)" in tf.autograph.to_code(f)


def test_return_inside_tensor_loops():
    @tf.function
    def first_big(x):
        for v in x:
            if v > 3.0:
                return v
        return -1.0

    assert float(first_big(tf.constant([1.0, 5.0, 7.0]))) == 5.0
    assert float(first_big(tf.constant([1.0, 2.0]))) == -1.0

    @tf.function
    def count(n):
        i = 0
        while i < n:
            i += 1
            if i == 7:
                return i * 10
        return i

    assert int(count(tf.constant(5))) == 5
    assert int(count(tf.constant(9))) == 70


def test_to_code_golden_for_seed_loop():
    def f(x):
        while tf.reduce_sum(x) > 1:
            x = tf.tanh(x)
        return x

    assert tf.autograph.to_code(f) == (
        "def f(x):\n"
        "\n"
        "    def _ag_while_test_0(x):\n"
        "        return tf.reduce_sum(x) > 1\n"
        "\n"
        "    def _ag_while_body_0(x):\n"
        "        x = tf.tanh(x)\n"
        "        return (x,)\n"
        "    x, = ag__.while_stmt(_ag_while_test_0, _ag_while_body_0, "
        "(ag__.ld(locals(), 'x'),), ('x',))\n"
        "    return x\n")


def test_numpy_on_symbolic_tensor_is_a_clear_error():
    @tf.function
    def f(x):
        return np.sum(x)

    with pytest.raises(NotImplementedError, match="Cannot convert the symbolic tensor"):
        f(tf.ones([2]))


def test_len_of_tensors_in_converted_code():
    @tf.function
    def f(x):
        total = 0.0
        for i in tf.range(len(x)):
            total += x[i] * tf.cast(len(x), tf.float32)
        return total

    assert float(f(tf.constant([1.0, 2.0]))) == 6.0
    g = tf.function(f.python_function, input_signature=[tf.TensorSpec([None], tf.float32)])
    assert float(g(tf.constant([1.0, 2.0, 3.0]))) == 18.0


def test_second_order_through_while_loop_is_a_clear_error():
    @tf.function
    def f(x):
        _, y = tf.while_loop(lambda i, y: i < 2, lambda i, y: (i + 1, y * x), [0, x])
        return y

    x = tf.constant(2.0)
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        dy = inner.gradient(y, x)
    assert float(dy) == 12.0  # d(x^3)/dx
    with pytest.raises(NotImplementedError, match="Second-order gradients through"):
        outer.gradient(dy, x)


def test_conditional_expression_on_a_tensor():
    @tf.function
    def f(x):
        return x * 2.0 if x > 0 else x - 1.0

    assert [float(f(tf.constant(v))) for v in (3.0, -3.0)] == [6.0, -4.0]
    assert f.experimental_get_tracing_count() == 1


CALLS = 0


def test_global_and_nonlocal_assignments_keep_python_semantics():
    @tf.function
    def f(x):
        global CALLS
        if x.shape[0] > 1:
            CALLS += 1
        return x

    f(tf.ones([2]))
    assert CALLS == 1

    seen = []

    def outer():
        count = 0

        @tf.function
        def g(x):
            nonlocal count
            for _ in range(3):
                count += 1
            seen.append(count)
            return x

        g(tf.ones([1]))
        return count

    assert outer() == 3 and seen == [3]


def test_converted_closures_see_rebound_variables_on_retrace():
    def make():
        k = 1.0

        @tf.function
        def f(x):
            if tf.reduce_sum(x) > 0:
                return x * k
            return x

        def set_k(v):
            nonlocal k
            k = v

        return f, set_k

    f, set_k = make()
    assert float(f(tf.constant([1.0]))[0]) == 1.0
    set_k(5.0)
    assert float(f(tf.constant([1.0, 1.0]))[0]) == 5.0  # new shape: retraced with k = 5


def _loop_with_branches(x, n):
    y = x
    for i in tf.range(n):
        if i % 2 == 0:
            y = tf.sin(y) * x
        else:
            y = y * y
    return tf.reduce_sum(y)


def test_gradient_through_converted_loop_with_branches_matches_eager():
    x = tf.constant(np.array([0.3, 0.6]))
    n = tf.constant(4)
    results = []
    for fn in (tf.function(_loop_with_branches), _loop_with_branches):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = fn(x, n)
        results.append((float(y), tape.gradient(y, x).numpy()))
    assert results[0][0] == pytest.approx(results[1][0], rel=1e-12)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-10)
