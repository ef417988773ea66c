"""tf.function: tracing per signature, retrace explanations, printed graphs, generated code."""

import warnings

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.framework import errors
from tapeflow.graph.verify import verify


def test_python_scalars_trace_by_value_tensors_by_spec():
    @tf.function
    def add(a, b):
        return a + b

    assert add(2, 3) == 5 and add(4, 3) == 7
    assert add.experimental_get_tracing_count() == 2
    add(tf.ones([2, 2]), tf.ones([2, 2]))
    add(tf.zeros([2, 2]), tf.ones([2, 2]))
    assert add.experimental_get_tracing_count() == 3
    add(tf.ones([3]), tf.ones([3]))
    assert add.experimental_get_tracing_count() == 4
    assert "argument 'a': Python value 2 -> 4" in add.explain_retrace()
    assert "shape [2, 2] -> [3]" in add.explain_retrace()


def test_side_effects_at_trace_time_tf_print_every_call(capsys):
    @tf.function
    def f(x):
        print("traced")
        tf.print("value", x)
        return x * 2

    for _ in range(3):
        f(tf.constant(1.0))
    out = capsys.readouterr()
    assert out.out.count("traced") == 1
    assert out.err.count("value 1") == 3


def test_input_signature_none_dims_and_bad_inputs():
    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
    def f(x):
        return tf.reduce_sum(x, axis=1)

    assert f(tf.ones([2, 3])).shape == (2,)
    assert f(np.ones((5, 3), np.float32)).shape == (5,)
    assert f.experimental_get_tracing_count() == 1
    with pytest.raises(TypeError, match="argument 'x'.*incompatible"):
        f(tf.ones([2, 4]))
    with pytest.raises(TypeError, match="argument 'x' has dtype int32"):
        f(tf.ones([2, 3], tf.int32))
    assert "x: f32[?,3]" in str(f.get_concrete_function().graph)


def test_reduce_retracing_generalizes_dims():
    @tf.function(reduce_retracing=True)
    def f(x):
        return x * 2

    for n in range(1, 6):
        assert f(tf.ones([n, 3])).shape == (n, 3)
    assert f.experimental_get_tracing_count() == 2
    assert "f32[?,3]" in str(f._concretes[-1].graph)


def test_retrace_warning_names_the_argument():
    @tf.function
    def f(x, n):
        return x * n

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in range(6):
            f(tf.constant(1.0), n)
    messages = [str(w.message) for w in caught]
    assert any("'n'" in m and "retraced 5 times" in m for m in messages)


def test_variables_captured_by_reference_and_created_once():
    v = tf.Variable(1.0)

    @tf.function
    def f(x):
        v.assign_add(x)
        return v.read_value()

    assert float(f(tf.constant(2.0))) == 3.0
    assert float(f(tf.constant(2.0))) == 5.0
    assert float(v.numpy()) == 5.0

    created = []

    @tf.function
    def g(x):
        if not created:
            created.append(tf.Variable(2.0))
        return created[0] * x

    assert float(g(tf.constant(3.0))) == 6.0

    @tf.function
    def h(x):
        return tf.Variable(2.0) * x

    h(tf.constant(1.0))
    with pytest.raises(ValueError, match="first trace"):
        h(tf.constant([1.0, 2.0]))


def test_stateful_ops_keep_program_order():
    v = tf.Variable(1.0)

    @tf.function
    def f():
        a = v.read_value()
        v.assign(10.0)
        b = v.read_value()
        v.assign_add(1.0)
        return a, b, v.read_value()

    a, b, c = f()
    assert (float(a), float(b), float(c)) == (1.0, 10.0, 11.0)


def test_methods_and_callable_objects():
    class Model:
        def __init__(self):
            self.w = tf.Variable([[2.0]])
            self.calls = 0

        @tf.function
        def apply(self, x):
            return tf.matmul(x, self.w)

        def __call__(self, x):
            self.calls += 1
            return x + 1.0

    m = Model()
    assert float(m.apply(tf.ones([1, 1]))[0, 0]) == 2.0
    wrapped = tf.function(m)
    wrapped(tf.ones([2]))
    wrapped(tf.ones([2]))
    assert m.calls == 1


def test_printed_graph_golden_and_generated_code():
    w = tf.Variable(np.ones((4, 2), np.float32), name="w")

    @tf.function
    def mlp(x):
        return tf.nn.relu(tf.matmul(tf.reshape(x, [2, 4]), w) + 1.0)

    concrete = mlp.get_concrete_function(tf.ones([2, 2, 2]))
    expected = (
        "graph mlp(x: f32[2,2,2]) captures (w: f32[4,2]):\n"
        "  t0 = Reshape(x, shape=(2, 4))                  f32[2,4]\n"
        "  t1 = ReadVariableOp(var=w)                     f32[4,2]\n"
        "  t2 = MatMul(t0, t1, transpose_a=False, transpose_b=False) f32[2,2]\n"
        "  t3 = Const(1.)                                 f32[]\n"
        "  t4 = AddV2(t2, t3)                             f32[2,2]\n")
    assert str(concrete.graph).startswith(expected)
    # the generated code uses the printed names (t3, the constant, is a bound global)
    assert concrete.code == (
        "def mlp(x):\n"
        "    t0 = x.reshape(shape)\n"
        "    t1 = w._value\n"
        "    t2 = dot(t0, t1)\n"
        "    del t0, t1\n"
        "    t4 = add(t2, t3, out=t2)\n"
        "    del t2\n"
        "    t5 = maximum(t4, c, out=t4)\n"
        "    del t4\n"
        "    return (t5,)\n")
    verify(concrete.graph)
    np.testing.assert_allclose(mlp(tf.ones([2, 2, 2])).numpy(), np.full((2, 2), 5.0))


def test_optimizer_passes_report_and_verify():
    @tf.function
    def f(x):
        a = x * 2.0
        b = x * 2.0          # CSE
        c = tf.constant(3.0) * tf.constant(4.0)  # folded
        unused = tf.exp(x)   # DCE  # noqa: F841
        return a + b + c + x * 1.0 - x  # x * 1.0 is simplified

    concrete = f.get_concrete_function(tf.ones([3]))
    report = f.optimization_report()
    lines = {line.split(":")[0]: line for line in report.splitlines()}
    counts = {name: int(line.split()[2]) for name, line in lines.items() if name != "nodes"}
    assert counts["fold"] >= 1 and counts["simplify"] == 1 and counts["cse"] >= 1
    assert counts["pool_first"] == 0 and "Exp" in lines["dce"]
    assert not any(n.op.name == "Exp" for n in concrete.graph.nodes)
    verify(concrete.graph)
    np.testing.assert_allclose(f(tf.ones([3])).numpy(), [16.0] * 3)


def test_tensor_bool_without_autograph_points_at_user_line():
    @tf.function(autograph=False)
    def f(x):
        if x > 0:  # the user's line
            return x
        return -x

    with pytest.raises(errors.OperatorNotAllowedInGraphError) as info:
        f(tf.constant(1.0))
    assert "test_function.py" in str(info.value) and "if x > 0" in str(info.value)
    assert "tf.cond" in str(info.value)


def test_shape_error_while_tracing_names_op_shapes_and_line():
    @tf.function
    def f(a, b):
        return tf.matmul(a, b)  # mismatched

    with pytest.raises(errors.InvalidArgumentError) as info:
        f(tf.ones([2, 3]), tf.ones([4, 5]))
    msg = str(info.value)
    assert "MatMul" in msg and "test_function.py" in msg and "return tf.matmul(a, b)" in msg


def test_eager_vs_graph_equal_for_op_table():
    x = tf.constant(np.linspace(0.1, 2.0, 12, dtype=np.float32).reshape(3, 4))
    y = tf.constant(np.linspace(-1.0, 1.0, 12, dtype=np.float32).reshape(3, 4))
    cases = [
        lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b, lambda a, b: a / b,
        lambda a, b: tf.matmul(a, b, transpose_b=True), lambda a, b: tf.reduce_sum(a, axis=1),
        lambda a, b: tf.reduce_mean(a * b), lambda a, b: tf.reshape(a, [4, 3]),
        lambda a, b: tf.transpose(a), lambda a, b: tf.tanh(b), lambda a, b: tf.exp(b),
        lambda a, b: tf.math.log(a), lambda a, b: tf.sigmoid(b), lambda a, b: tf.nn.relu(b),
        lambda a, b: tf.maximum(a, b), lambda a, b: tf.cast(a > b, tf.float32),
        lambda a, b: tf.stack([a, b]), lambda a, b: tf.gather(a, [2, 0]),
        lambda a, b: tf.concat([a, b], axis=0), lambda a, b: tf.square(b) - tf.sqrt(a),
        lambda a, b: tf.nn.softmax(b), lambda a, b: tf.where(a > 1.0, a, b),
    ]
    for fn in cases:
        eager = fn(x, y).numpy()
        graph = tf.function(fn)(x, y).numpy()
        np.testing.assert_allclose(graph, eager, rtol=1e-6)


def test_runtime_error_names_node_and_trace_line():
    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32),
                                  tf.TensorSpec([None, 2], tf.float32)])
    def f(a, b):
        return tf.matmul(a, b, transpose_a=True)  # batch dims must agree at run time

    with pytest.raises(errors.InvalidArgumentError) as info:
        f(tf.ones([4, 3]), tf.ones([5, 2]))
    msg = str(info.value)
    assert "MatMul" in msg and "test_function.py" in msg and "traced at" in msg


def test_nested_function_is_inlined_and_concrete_function_from_specs():
    @tf.function
    def inner(x):
        return x * 3.0

    @tf.function
    def outer(x):
        return inner(x) + 1.0

    concrete = outer.get_concrete_function(tf.TensorSpec([None], tf.float32))
    assert [n.op.name for n in concrete.graph.nodes if n.op.name != "Const"] == [
        "Placeholder", "Mul", "AddV2"]
    np.testing.assert_allclose(concrete(tf.constant([1.0, 2.0])).numpy(), [4.0, 7.0])
    assert inner.experimental_get_tracing_count() == 0
    assert "outer(x: float32[?])" in outer.pretty_printed_concrete_signatures()


def test_run_functions_eagerly_and_init_scope():
    calls = []

    @tf.function
    def f(x):
        calls.append(tf.executing_eagerly())
        with tf.init_scope():
            calls.append(tf.executing_eagerly())
        return x + 1

    tf.config.run_functions_eagerly(True)
    try:
        f(tf.constant(1))
    finally:
        tf.config.run_functions_eagerly(False)
    f(tf.constant(1))
    assert calls == [True, True, False, True]


def test_seed_002_keras_model_as_function():
    keras = tf.keras

    class SequentialModel(keras.Model):
        def __init__(self):
            super().__init__()
            self.flatten = keras.layers.Flatten(input_shape=(28, 28))
            self.dense_1 = keras.layers.Dense(128, activation="relu")
            self.dropout = keras.layers.Dropout(0.2)
            self.dense_2 = keras.layers.Dense(10)

        def call(self, x):
            return self.dense_2(self.dropout(self.dense_1(self.flatten(x))))

    data = tf.random.uniform([60, 28, 28])
    graph_model = tf.function(SequentialModel())  # variables created during the first trace
    out = graph_model(data)
    np.testing.assert_allclose(out.numpy(), graph_model.python_function(data).numpy(),
                               rtol=1e-5, atol=1e-6)
    assert graph_model.experimental_get_tracing_count() == 1


def test_concrete_function_checks_its_inputs():
    @tf.function
    def f(x):
        return x + 1.0

    concrete = f.get_concrete_function(tf.TensorSpec([None, 2], tf.float32))
    assert concrete(tf.ones([3, 2])).shape == (3, 2)
    with pytest.raises(TypeError, match="argument 'x' has shape \\[3, 3\\]"):
        concrete(tf.ones([3, 3]))
    with pytest.raises(TypeError, match="argument 'x' has dtype float64"):
        concrete(tf.ones([3, 2], tf.float64))


def test_method_trace_cache_is_per_instance_even_for_unhashable_objects():
    class Unhashable:
        __hash__ = None

        def __init__(self, k):
            self.k = k

        @tf.function
        def scale(self, x):
            return x * self.k

    a, b = Unhashable(2.0), Unhashable(3.0)
    for _ in range(3):
        assert float(a.scale(tf.constant(1.0))) == 2.0
        assert float(b.scale(tf.constant(1.0))) == 3.0
    assert a.scale.experimental_get_tracing_count() == 1
    assert b.scale.experimental_get_tracing_count() == 1


def test_broadcast_error_while_tracing_names_the_op():
    @tf.function
    def f(x):
        return x + tf.ones([3])

    with pytest.raises(errors.InvalidArgumentError, match="AddV2: incompatible shapes"):
        f(tf.ones([2]))


def test_profile_reports_every_node_and_writes_a_chrome_trace(tmp_path):
    import json

    @tf.function
    def f(x):
        return tf.exp(x) * 2.0

    x = tf.ones([4])
    report = f.get_concrete_function(x).profile(x, runs=3, trace_path=str(tmp_path / "t.json"))
    assert "Exp = Exp(x:0)" in report and "Mul = Mul(" in report
    assert report.splitlines()[-1].endswith("total per call (3 runs)")
    events = json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    assert len(events) == 6 and {e["name"] for e in events} == {"Exp", "Mul"}
    assert all(e["dur"] >= 0 for e in events)


def test_profile_stats_counts_every_node_by_the_given_clock():
    import time

    @tf.function
    def f(x):
        return tf.exp(x) * 2.0

    x = tf.ones([4])
    ticks = iter(range(1000))
    stats = f.get_concrete_function(x).profile_stats(x, runs=3, clock=lambda: next(ticks))
    assert sorted(node.op.name for node in stats) == ["Exp", "Mul"]
    assert all(calls == 3 and seconds == 3 for seconds, calls in stats.values())  # 1 tick each
    cpu = f.get_concrete_function(x).profile_stats(x, runs=2, clock=time.thread_time)
    assert all(calls == 2 and seconds >= 0 for seconds, calls in cpu.values())


def test_tf_print_formats_nested_structures_every_call(capsys):
    import sys

    @tf.function
    def f(x, y):
        tf.print("vals{}:", [x, y], {"y": y}, output_stream=sys.stdout)
        return x

    x, y = tf.constant([1, 2]), tf.constant(3.5)
    f(x, y)
    f(x, y)
    assert capsys.readouterr().out == "vals{}: [[1 2], 3.5] {'y': 3.5}\n" * 2
    tf.print(tf.range(10), output_stream=sys.stdout)
    assert capsys.readouterr().out == "[0 1 2 ... 7 8 9]\n"


def test_tape_inside_a_function_differentiates_captured_eager_tensors():
    """An eager tensor closed over by traced code is captured as a constant; watching it and
    asking for its gradient refer to that constant, as in eager execution."""
    w = tf.constant([1.0, 2.0, 3.0])

    def step(x):
        with tf.GradientTape() as tape:
            tape.watch(w)
            y = tf.reduce_sum(x * w * w)
        return tape.gradient(y, [w, x])

    x = tf.constant([1.0, 0.5, -1.0])
    graph_dw, graph_dx = tf.function(step)(x)
    eager_dw, eager_dx = step(x)
    np.testing.assert_allclose(graph_dw.numpy(), [2.0, 2.0, -6.0])
    np.testing.assert_allclose(graph_dw.numpy(), eager_dw.numpy())
    assert graph_dx is None and eager_dx is None  # x was not watched
