"""Elementwise ops, one row each: forward vs NumPy, gradients vs finite differences (orders 1
and 2), forward+backward vs PyTorch, eager vs graph."""

import numpy as np
import pytest

import tapeflow as tf
from tapeflow import testing
from tapeflow.testing import OpCase


def normal(*shape):
    return lambda rng: [rng.standard_normal(shape)]


def positive(*shape, low=0.5, high=2.0):
    return lambda rng: [rng.uniform(low, high, shape)]


def pair(shape_a, shape_b, low=None):
    def make(rng):
        if low is None:
            return [rng.standard_normal(shape_a), rng.standard_normal(shape_b)]
        return [rng.uniform(low, 2.0, shape_a), rng.uniform(low, 2.0, shape_b)]

    return make


def separated(shape_a, shape_b):
    """Two inputs at least 0.05 apart everywhere (max/min are not differentiable at ties)."""

    def make(rng):
        while True:
            a, b = rng.standard_normal(shape_a), rng.standard_normal(shape_b)
            if np.all(np.abs(a - b) > 0.05):
                return [a, b]

    return make


def away_from_integers(*shape):
    return lambda rng: [rng.integers(-3, 3, shape) + rng.uniform(0.2, 0.8, shape)]


DIVISORS = np.array([0.0, 1.5, -2.0, 0.0])


def sigmoid_ref(x):
    return 1 / (1 + np.exp(-x))


CASES = [
    OpCase("add", tf.add, np.add, pair((2, 3), (3,)), lambda a, b: a + b, order=2),
    OpCase("subtract", tf.subtract, np.subtract, pair((2, 1), (1, 3)), lambda a, b: a - b),
    OpCase("multiply", tf.multiply, np.multiply, pair((2, 3), (2, 3)), lambda a, b: a * b,
           order=2),
    OpCase("divide", tf.divide, np.divide, pair((2, 3), (3,), low=0.5), lambda a, b: a / b,
           order=2),
    OpCase("negative", tf.negative, np.negative, normal(2, 3), lambda a: -a),
    OpCase("pow", tf.pow, np.power, pair((2, 3), (3,), low=0.5), lambda a, b: a ** b, order=2),
    OpCase("pow_scalar", lambda x: x ** 3, lambda x: x ** 3, normal(4), lambda a: a ** 3,
           order=2),
    OpCase("floormod", tf.math.floormod, np.mod, lambda rng: [
        rng.uniform(0.1, 0.9, (5,)) + np.arange(5.0), np.full((5,), 1.3)],
        lambda a, b: torch_mod(a, b)),
    OpCase("floordiv", tf.math.floordiv, np.floor_divide, lambda rng: [
        rng.uniform(0.1, 0.9, (5,)) + np.arange(5.0), np.full((5,), 1.3)], None, grad=False),
    OpCase("abs", tf.abs, np.abs, normal(2, 3), lambda a: a.abs()),
    OpCase("sign", tf.sign, np.sign, normal(2, 3), lambda a: a.sign()),
    OpCase("square", tf.square, np.square, normal(2, 3), lambda a: a * a, order=2),
    OpCase("sqrt", tf.sqrt, np.sqrt, positive(2, 3), lambda a: a.sqrt(), order=2),
    OpCase("rsqrt", tf.math.rsqrt, lambda x: 1 / np.sqrt(x), positive(2, 3),
           lambda a: a.rsqrt(), order=2),
    OpCase("reciprocal", tf.math.reciprocal, np.reciprocal, positive(4),
           lambda a: a.reciprocal(), order=2),
    OpCase("exp", tf.exp, np.exp, normal(2, 3), lambda a: a.exp(), order=2),
    OpCase("log", tf.math.log, np.log, positive(2, 3), lambda a: a.log(), order=2),
    OpCase("log1p", tf.math.log1p, np.log1p, positive(2, 3), lambda a: a.log1p()),
    OpCase("sin", tf.sin, np.sin, normal(2, 3), lambda a: a.sin(), order=2),
    OpCase("cos", tf.cos, np.cos, normal(2, 3), lambda a: a.cos(), order=2),
    OpCase("tanh", tf.tanh, np.tanh, normal(2, 3), lambda a: a.tanh(), order=2),
    OpCase("sigmoid", tf.sigmoid, sigmoid_ref, normal(2, 3), lambda a: a.sigmoid(), order=2),
    OpCase("maximum", tf.maximum, np.maximum, separated((2, 3), (3,)),
           lambda a, b: torch_max(a, b)),
    OpCase("minimum", tf.minimum, np.minimum, separated((2, 3), (2, 3)),
           lambda a, b: torch_min(a, b)),
    OpCase("clip_by_value", lambda x: tf.clip_by_value(x, -0.5, 0.5),
           lambda x: np.clip(x, -0.5, 0.5), lambda rng: [np.array([-2.0, -0.3, 0.1, 0.4, 3.0])],
           lambda a: a.clamp(-0.5, 0.5)),
    OpCase("where", lambda c, x, y: tf.where(c, x, y), np.where, lambda rng: [
        rng.standard_normal((2, 3)) > 0, rng.standard_normal((2, 3)), rng.standard_normal((3,))],
        lambda c, a, b: torch_where(c, a, b)),
    OpCase("squared_difference", tf.math.squared_difference, lambda a, b: (a - b) ** 2,
           pair((2, 3), (3,)), lambda a, b: (a - b) ** 2),
    OpCase("floor", tf.floor, np.floor, away_from_integers(5), lambda a: a.floor()),
    OpCase("round", tf.round, np.round, away_from_integers(5), lambda a: a.round()),
    OpCase("add_n", lambda a, b: tf.add_n([a, b, a]), lambda a, b: a + b + a,
           pair((2, 2), (2, 2)), lambda a, b: a + b + a),
    OpCase("divide_no_nan", lambda a: tf.math.divide_no_nan(a, tf.constant(DIVISORS, a.dtype)),
           lambda a: np.where(DIVISORS == 0, 0.0, a / np.where(DIVISORS == 0, 1, DIVISORS)),
           normal(4)),
]

COMPARISONS = [
    ("equal", tf.equal, np.equal), ("not_equal", tf.not_equal, np.not_equal),
    ("less", tf.less, np.less), ("less_equal", tf.less_equal, np.less_equal),
    ("greater", tf.greater, np.greater), ("greater_equal", tf.greater_equal, np.greater_equal),
]

LOGICAL = [
    ("logical_and", tf.logical_and, np.logical_and), ("logical_or", tf.logical_or, np.logical_or),
    ("logical_xor", tf.math.logical_xor, np.logical_xor),
]


def torch_mod(a, b):
    import torch

    return torch.remainder(a, b)


def torch_max(a, b):
    import torch

    return torch.maximum(a, b)


def torch_min(a, b):
    import torch

    return torch.minimum(a, b)


def torch_where(c, a, b):
    import torch

    return torch.where(c, a, b)


test_forward, test_gradient, test_vs_torch, test_graph_matches_eager = \
    testing.op_table_tests(CASES)


@pytest.mark.parametrize("name,fn,ref", COMPARISONS, ids=[c[0] for c in COMPARISONS])
def test_comparisons(name, fn, ref):
    a = np.array([[1.0, 2.0, 3.0], [3.0, 2.0, 1.0]], dtype=np.float32)
    b = np.array([2.0, 2.0, 2.0], dtype=np.float32)
    out = fn(tf.constant(a), tf.constant(b))
    assert out.dtype == tf.bool
    np.testing.assert_array_equal(out.numpy(), ref(a, b))
    with tf.GradientTape() as tape:
        x = tf.constant(a)
        tape.watch(x)
        y = fn(x, 2.0)
    assert tape.gradient(y, x) is None  # bool outputs carry no gradient


@pytest.mark.parametrize("name,fn,ref", LOGICAL, ids=[c[0] for c in LOGICAL])
def test_logical(name, fn, ref):
    a = np.array([True, True, False, False])
    b = np.array([True, False, True, False])
    np.testing.assert_array_equal(fn(a, b).numpy(), ref(a, b))
    with pytest.raises(tf.errors.InvalidArgumentError, match="bool"):
        fn(tf.constant([1.0]), tf.constant([0.0]))


def test_logical_not_and_operators():
    a = tf.constant([True, False])
    np.testing.assert_array_equal(tf.logical_not(a).numpy(), [False, True])
    np.testing.assert_array_equal((~a).numpy(), [False, True])
    np.testing.assert_array_equal((a & tf.constant([True, True])).numpy(), [True, False])
    np.testing.assert_array_equal((a | tf.constant([False, False])).numpy(), [True, False])
    np.testing.assert_array_equal((a ^ tf.constant([True, True])).numpy(), [False, True])


def test_integer_floordiv_floormod_follow_python():
    a = tf.constant([-7, 7, -7, 7])
    b = tf.constant([2, 2, -2, -2])
    np.testing.assert_array_equal((a // b).numpy(), [-4, 3, 3, -4])
    np.testing.assert_array_equal((a % b).numpy(), [1, 1, -1, -1])
    assert (a // b).dtype == tf.int32


def test_where_one_argument_returns_int64_coordinates():
    out = tf.where(tf.constant([[True, False], [False, True]]))
    assert out.dtype == tf.int64
    np.testing.assert_array_equal(out.numpy(), [[0, 0], [1, 1]])


def test_where_rejects_non_bool_condition():
    with pytest.raises(tf.errors.InvalidArgumentError, match="SelectV2.*bool"):
        tf.where(tf.constant([1.0]), tf.constant([1.0]), tf.constant([2.0]))


def test_sigmoid_is_finite_for_large_inputs():
    out = tf.sigmoid(tf.constant([-1000.0, 1000.0])).numpy()
    np.testing.assert_array_equal(out, [0.0, 1.0])


def test_float_only_ops_reject_integers_naming_the_op():
    with pytest.raises(tf.errors.InvalidArgumentError, match="Sqrt.*int32"):
        tf.sqrt(tf.constant([4]))


def test_pow_gradient_wrt_exponent_is_zero_for_nonpositive_base():
    x = tf.constant([-2.0, 0.0, 2.0])
    y = tf.constant(2.0)
    with tf.GradientTape() as tape:
        tape.watch(y)
        z = tf.reduce_sum(x ** y)
    np.testing.assert_allclose(tape.gradient(z, y).numpy(), 4 * np.log(2.0), rtol=1e-6)


def test_maximum_tie_sends_gradient_to_first_argument():
    x, y = tf.constant([1.0, 2.0]), tf.constant([1.0, 3.0])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([x, y])
        z = tf.maximum(x, y)
    np.testing.assert_array_equal(tape.gradient(z, x).numpy(), [1.0, 0.0])
    np.testing.assert_array_equal(tape.gradient(z, y).numpy(), [0.0, 1.0])


def test_is_nan_inf_finite():
    x = tf.constant([1.0, np.nan, np.inf])
    np.testing.assert_array_equal(tf.math.is_nan(x).numpy(), [False, True, False])
    np.testing.assert_array_equal(tf.math.is_inf(x).numpy(), [False, False, True])
    np.testing.assert_array_equal(tf.math.is_finite(x).numpy(), [True, False, False])


def test_public_names_follow_tensorflow():
    assert tf.math.sigmoid is tf.sigmoid is tf.nn.sigmoid
    assert tf.math.abs is tf.abs
    assert tf.math.maximum is tf.maximum
    assert tf.math.floormod is tf.math.mod
    assert tf.math.add_n is tf.add_n
