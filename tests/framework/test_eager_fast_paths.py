"""The plain eager fast paths (issue 21): ``a + b``, ``tf.maximum(x, 0.0)``, ``x[1:5]`` and
full reductions skip apply's general walk when the thread runs eager with no tape and no
tf.device scope (``state.plain``). They must give what apply gives: the same values and dtypes,
the same errors naming the op and the user's line, and everything else (mixed dtypes, numbers,
broadcasting, tapes, tf.device, tracing, check_numerics) still takes the general path."""

import threading

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.framework.context import state
from tapeflow.framework.dispatch import apply, number_operand
from tapeflow.ops import math_ops


def _bits(a):
    return np.ascontiguousarray(a).view(np.uint8)


def test_plain_follows_graph_tapes_and_device():
    assert state.plain
    with tf.GradientTape():
        assert not state.plain
        with tf.GradientTape() as inner:
            with inner.stop_recording():
                assert not state.plain  # the outer tape still records
        assert not state.plain
    assert state.plain
    with tf.device("/CPU:0"):
        assert not state.plain
    assert state.plain

    seen = []

    @tf.function
    def f(x):
        seen.append(state.plain)
        return x + x

    f(tf.constant([1.0]))
    assert seen == [False] and state.plain


def test_plain_is_per_thread():
    seen = []
    with tf.GradientTape():
        worker = threading.Thread(target=lambda: seen.append(state.plain))
        worker.start()
        worker.join()
    assert seen == [True]


@pytest.mark.parametrize("symbol, np_fn", [("+", np.add), ("-", np.subtract),
                                           ("*", np.multiply)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
def test_binary_operators_equal_numpy_and_apply(symbol, np_fn, dtype):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((3, 1)) * 10).astype(dtype)
    y = (rng.standard_normal(4) * 10).astype(dtype)  # broadcasting [3, 1] with [4]
    fast = eval(f"a {symbol} b", {"a": tf.constant(x), "b": tf.constant(y)})
    op = {"+": math_ops._add, "-": math_ops._sub, "*": math_ops._mul}[symbol]
    slow = apply(op, tf.constant(x), tf.constant(y))
    assert fast.dtype == slow.dtype == tf.as_dtype(dtype)
    np.testing.assert_array_equal(_bits(fast.numpy()), _bits(np_fn(x, y)))
    np.testing.assert_array_equal(fast.numpy(), slow.numpy())


def test_rank_zero_results_are_arrays():
    out = tf.constant(2.0) + tf.constant(3.0)
    assert type(out._value) is np.ndarray and out.numpy() == 5.0 and out.shape == ()


def test_mixed_dtypes_raise_naming_the_op_and_this_line():
    a, b = tf.constant([1.0, 2.0]), tf.constant([1, 2])
    with pytest.raises(tf.errors.InvalidArgumentError, match="AddV2") as info:
        a + b  # the mixed-dtype line
    assert __file__ in str(info.value) and "a + b  # the mixed-dtype line" in str(info.value)


def test_broadcast_error_names_the_op_and_this_line():
    a, b = tf.zeros([2, 3]), tf.zeros([4])
    with pytest.raises(tf.errors.InvalidArgumentError, match="Mul") as info:
        a * b  # the broadcast line
    msg = str(info.value)
    assert "float32[2, 3]" in msg and "a * b  # the broadcast line" in msg


def test_equal_dtypes_that_are_not_the_same_object_still_add():
    odd = np.dtype("f4", metadata={"from": "elsewhere"})  # == float32, another object
    assert odd == np.float32 and odd is not np.dtype(np.float32)
    a = tf.constant(np.array([1.0, 2.0], dtype=odd))
    out = a + tf.constant([3.0, 4.0])
    assert out.dtype == tf.float32
    np.testing.assert_array_equal(out.numpy(), [4.0, 6.0])


def test_numbers_take_the_tensor_dtype():
    a = tf.constant([1.5, -2.0])
    assert (a + 1).dtype == tf.float32 and (1 + a).dtype == tf.float32
    np.testing.assert_array_equal((a * 2).numpy(), [3.0, -4.0])
    i = tf.constant([1, 2], dtype=tf.int64)
    assert (i + 1).dtype == tf.int64
    with pytest.raises((TypeError, ValueError, tf.errors.InvalidArgumentError)):
        i + 1.5  # a float does not fit an int tensor


def test_a_tape_still_records_the_operators():
    x, y = tf.constant([1.0, 2.0]), tf.constant([3.0, 5.0])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        tape.watch(y)
        s = x + y
        p = x * y
        d = x - y
        m = tf.maximum(x, 1.5)
        sl = x[1:2]
        r = tf.reduce_sum(x * y)
    np.testing.assert_array_equal(tape.gradient(s, y).numpy(), [1.0, 1.0])
    np.testing.assert_array_equal(tape.gradient(p, x).numpy(), [3.0, 5.0])
    np.testing.assert_array_equal(tape.gradient(d, y).numpy(), [-1.0, -1.0])
    np.testing.assert_array_equal(tape.gradient(m, x).numpy(), [0.0, 1.0])
    np.testing.assert_array_equal(tape.gradient(sl, x).numpy(), [0.0, 1.0])
    np.testing.assert_array_equal(tape.gradient(r, x).numpy(), [3.0, 5.0])


def test_device_scope_outputs_carry_the_device():
    a = tf.constant([1.0])
    with tf.device("/CPU:0"):
        for out in (a + a, a[0:1], tf.maximum(a, 0.0), tf.reduce_sum(a)):
            assert out.device.endswith("CPU:0") and out._device is not None


def test_traced_functions_get_graph_nodes():
    @tf.function
    def f(x, y):
        return tf.reduce_sum(tf.maximum(x + y, 0.0)[1:3] * x[0])

    x, y = tf.constant([1.0, -2.0, 3.0]), tf.constant([0.5, 0.5, -5.0])
    eager = tf.reduce_sum(tf.maximum(x + y, 0.0)[1:3] * x[0])
    assert f(x, y).numpy() == eager.numpy() == 0.0
    names = [n.op.name for n in f.get_concrete_function(x, y).graph.nodes]
    assert {"AddV2", "Maximum", "StridedSlice", "Sum"} <= set(names)


def test_signed_zero_operands_are_kept_apart():
    x = tf.constant([-0.0, 0.0], dtype=tf.float32)
    for number in (0.0, -0.0, 0.0, -0.0):  # each twice: the cached operand must not mix them
        for fn, np_fn in ((tf.maximum, np.maximum), (tf.minimum, np.minimum)):
            got = fn(x, number).numpy()
            want = np_fn(x.numpy(), np.float32(number))
            np.testing.assert_array_equal(_bits(got), _bits(want))
    assert np.signbit((tf.constant([1.0]) * -0.0).numpy()[0])
    assert not np.signbit((tf.constant([1.0]) * 0.0).numpy()[0])


def test_number_operands_are_shared_read_only_and_typed():
    f32 = np.dtype(np.float32)
    zero = number_operand(0.0, f32)
    assert zero is number_operand(0.0, f32) and not zero._value.flags.writeable
    assert number_operand(0.0, np.dtype(np.float64)).dtype == tf.float64
    assert number_operand(-0.0, f32) is not zero
    assert number_operand(1.5, np.dtype(np.int32)) is None  # a float cannot meet an int
    assert number_operand(True, f32) is None  # bools are not numbers here
    assert number_operand(300, np.dtype(np.int8)) is None  # does not fit: the general rule


def test_slices_equal_numpy_and_errors_name_strided_slice():
    v = np.arange(10, dtype=np.float32)
    a = tf.constant(v)
    for key in (slice(1, 5), slice(None, None, -2), slice(-3, None), 3, -1):
        np.testing.assert_array_equal(a[key].numpy(), v[key])
    assert a[3].shape == () and type(a[3]._value) is np.ndarray
    with pytest.raises(tf.errors.InvalidArgumentError, match="StridedSlice") as info:
        a[10]  # the out-of-range line
    assert "a[10]  # the out-of-range line" in str(info.value)
    strings = tf.constant([b"a\x00", b"b"])
    assert strings[0].numpy() == b"a\x00"  # one string element keeps its NUL bytes


def test_reductions_equal_numpy_and_errors_name_the_op():
    v = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32)
    a = tf.constant(v)
    np.testing.assert_array_equal(tf.reduce_sum(a).numpy(), np.add.reduce(v, (0, 1)))
    np.testing.assert_array_equal(tf.reduce_sum(a, axis=1, keepdims=True).numpy(),
                                  v.sum(axis=1, keepdims=True))
    np.testing.assert_array_equal(tf.reduce_max(a, axis=-1).numpy(), v.max(axis=-1))
    assert tf.reduce_sum(a).shape == () and type(tf.reduce_sum(a)._value) is np.ndarray
    assert tf.reduce_sum(tf.constant([1, 2], dtype=tf.int32)).dtype == tf.int32
    with pytest.raises(tf.errors.InvalidArgumentError, match="Any") as info:
        tf.reduce_any(a)  # the non-bool line
    assert "tf.reduce_any(a)  # the non-bool line" in str(info.value)
    with pytest.raises(tf.errors.InvalidArgumentError, match="out of range"):
        tf.reduce_sum(a, axis=2)


def test_check_numerics_sees_the_fast_paths():
    tf.debugging.enable_check_numerics()
    try:
        inf = tf.constant([np.inf])
        with pytest.raises(tf.errors.InvalidArgumentError):
            inf - inf
        with pytest.raises(tf.errors.InvalidArgumentError):
            tf.reduce_sum(tf.constant([np.inf, -np.inf]))
    finally:
        tf.debugging.disable_check_numerics()


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_reflected_operators_with_numbers(dtype):
    v = np.array([1, -2, 3], dtype=dtype)
    a = tf.constant(v)
    for got, want in ((2 * a, 2 * v), (1 - a, 1 - v), (3 + a, 3 + v), (a - 1, v - 1)):
        assert got.dtype == tf.as_dtype(dtype)
        np.testing.assert_array_equal(got.numpy(), want.astype(dtype))
    with tf.GradientTape() as tape:
        x = tf.constant([1.0, 2.0])
        tape.watch(x)
        y = 1.0 - 3.0 * x
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [-3.0, -3.0])


def test_division_fast_path_keeps_tf_rules():
    v = np.array([1.0, -2.0, 3.0], dtype=np.float32)
    a = tf.constant(v)
    np.testing.assert_array_equal((a / 2.0).numpy(), v / np.float32(2))
    np.testing.assert_array_equal((a / 3).numpy(), v / np.float32(3))
    np.testing.assert_array_equal((a / a).numpy(), np.ones(3, np.float32))
    assert (a / 2.0).dtype == tf.float32
    ints = tf.constant([1, 2], dtype=tf.int32)
    assert (ints / 2).dtype == tf.float64  # integers are cast first, as TF does
    with pytest.raises(tf.errors.InvalidArgumentError, match="RealDiv") as info:
        a / tf.constant([1.0, 2.0, 3.0], dtype=tf.float64)  # the mixed division line
    assert "the mixed division line" in str(info.value)
    with pytest.raises(tf.errors.InvalidArgumentError, match="RealDiv"):
        a / True  # a bool is not a number here


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape, axis, keepdims", [
    ((10,), None, False), ((3, 4, 5), None, True), ((3, 4, 5), 1, False),
    ((3, 4, 5), [0, 2], True), ((7, 1000), -1, False), ((100000,), None, False)])
def test_mean_has_numpy_means_bits(dtype, shape, axis, keepdims):
    v = (np.random.default_rng(2).standard_normal(shape) * 100).astype(dtype)
    got = tf.reduce_mean(tf.constant(v), axis=axis, keepdims=keepdims).numpy()
    want = np.mean(v, axis=None if axis is None else tuple(np.atleast_1d(axis)),
                   keepdims=keepdims)
    assert got.dtype == dtype and got.shape == np.shape(want)
    np.testing.assert_array_equal(_bits(got), _bits(want))


def test_mean_of_other_dtypes_and_empty_inputs():
    assert tf.reduce_mean(tf.constant([1, 2], dtype=tf.int32)).numpy() == 1  # truncated
    half = np.array([0.1, 0.2, 0.3], dtype=np.float16)
    assert tf.reduce_mean(tf.constant(half)).numpy() == np.mean(half)  # float32 accumulator
    with pytest.warns(RuntimeWarning):
        assert np.isnan(tf.reduce_mean(tf.zeros([0])).numpy())


def test_tf_add_subtract_multiply_take_the_same_paths():
    a, b = tf.constant([1.0, -2.0]), tf.constant([3.0, 4.0])
    for fn, symbol in ((tf.add, "+"), (tf.subtract, "-"), (tf.multiply, "*")):
        for x, y in ((a, b), (a, 2.0), (2.0, a), (a, 3)):
            want = eval(f"x {symbol} y", {"x": x, "y": y})
            got = fn(x, y)
            assert got.dtype == tf.float32
            np.testing.assert_array_equal(got.numpy(), want.numpy())
    with pytest.raises(tf.errors.InvalidArgumentError, match="Sub") as info:
        tf.subtract(a, tf.constant([1, 2]))  # the tf.subtract line
    assert "the tf.subtract line" in str(info.value)
    traced = tf.function(lambda x, y: tf.multiply(tf.add(x, y), 2.0))
    np.testing.assert_array_equal(traced(a, b).numpy(), [8.0, 4.0])


def test_unary_ops_and_negation():
    v = np.array([0.5, -2.0, 3.0], dtype=np.float32)
    a = tf.constant(v)
    for fn, np_fn in ((tf.exp, np.exp), (tf.math.sigmoid, None), (tf.square, np.square),
                      (tf.math.abs, np.abs), (lambda t: -t, np.negative)):
        got = fn(a)
        assert got.dtype == tf.float32
        if np_fn is not None:
            np.testing.assert_array_equal(got.numpy(), np_fn(v))
    assert (-tf.constant([1, -2], dtype=tf.int32)).dtype == tf.int32
    np.testing.assert_array_equal(tf.exp([0.0, 1.0]).numpy(), np.exp([0.0, 1.0], dtype=np.float32))
    with pytest.raises(tf.errors.InvalidArgumentError, match="LogicalNot") as info:
        tf.math.logical_not(a)  # the non-bool line
    assert "the non-bool line" in str(info.value)
    with tf.GradientTape() as tape:
        tape.watch(a)
        y = -tf.exp(a)
    np.testing.assert_allclose(tape.gradient(y, a).numpy(), -np.exp(v), rtol=1e-6)
