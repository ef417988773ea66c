"""The Tensor API: NumPy interop, Python protocols, operators (incl. reflected), printing."""

import numpy as np
import pytest

import tapeflow as tf


def test_numpy_shape_dtype_device():
    t = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    assert isinstance(t.numpy(), np.ndarray) and t.numpy().dtype == np.float32
    assert t.shape == (2, 2) and t.dtype == tf.float32 and t.ndim == 2
    assert t.device.endswith("CPU:0")
    assert isinstance(tf.constant(2.0).numpy(), np.float32)  # scalars come back as NumPy scalars


def test_operators_and_reflected_forms():
    x = tf.constant([1.0, 2.0, 4.0])
    cases = [
        (x + 1, [2, 3, 5]), (1 + x, [2, 3, 5]), (x - 1, [0, 1, 3]), (1 - x, [0, -1, -3]),
        (x * 2, [2, 4, 8]), (2 * x, [2, 4, 8]), (x / 2, [0.5, 1, 2]), (4 / x, [4, 2, 1]),
        (x // 3, [0, 0, 1]), (7 // x, [7, 3, 1]), (x % 3, [1, 2, 1]), (5 % x, [0, 1, 1]),
        (x ** 2, [1, 4, 16]), (2 ** x, [2, 4, 16]), (-x, [-1, -2, -4]), (+x, [1, 2, 4]),
        (abs(-x), [1, 2, 4]),
    ]
    for got, want in cases:
        assert got.dtype == tf.float32
        np.testing.assert_allclose(got.numpy(), want)


def test_comparison_operators():
    x = tf.constant([1, 2, 3])
    np.testing.assert_array_equal((x < 2).numpy(), [True, False, False])
    np.testing.assert_array_equal((x <= 2).numpy(), [True, True, False])
    np.testing.assert_array_equal((x > 2).numpy(), [False, False, True])
    np.testing.assert_array_equal((x >= 2).numpy(), [False, True, True])
    np.testing.assert_array_equal((x == 2).numpy(), [False, True, False])
    np.testing.assert_array_equal((x != 2).numpy(), [True, False, True])
    assert (x == None) is False and (x != None) is True  # noqa: E711


def test_matmul_operator_and_numpy_interop():
    a = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal((a @ a).numpy(), [[7, 10], [15, 22]])
    np.testing.assert_array_equal((np.eye(2, dtype=np.float32) @ a).numpy(), a.numpy())
    assert np.sum(a) == 10.0 and np.asarray(a).dtype == np.float32
    assert float(tf.reduce_sum(np.ones((2, 2), np.float32))) == 4.0  # ops accept NumPy data


def test_python_protocols():
    assert bool(tf.constant(True)) and not bool(tf.constant(0.0))
    assert float(tf.constant(2.5)) == 2.5 and int(tf.constant(7)) == 7
    assert len(tf.zeros([4, 2])) == 4
    rows = list(tf.constant([[1, 2], [3, 4]]))
    assert len(rows) == 2 and rows[1].numpy().tolist() == [3, 4]
    assert [1, 2, 3][tf.constant(1)] == 2  # __index__
    with pytest.raises(TypeError):
        len(tf.constant(1.0))
    with pytest.raises(TypeError):
        iter(tf.constant(1.0))


def test_str_and_repr_match_tf():
    t = tf.constant([0.16, 0.0])
    assert str(t) == "tf.Tensor([0.16 0.  ], shape=(2,), dtype=float32)"
    assert repr(tf.constant(54.0)) == "<tf.Tensor: shape=(), dtype=float32, numpy=54.0>"
    assert repr(tf.constant([1, 2])) == (
        "<tf.Tensor: shape=(2,), dtype=int32, numpy=array([1, 2], dtype=int32)>")
    assert str(tf.constant([[7.0, 10.0], [15.0, 22.0]])) == (
        "tf.Tensor(\n[[ 7. 10.]\n [15. 22.]], shape=(2, 2), dtype=float32)")


def test_is_tensor_and_executing_eagerly():
    assert tf.is_tensor(tf.constant(1)) and tf.is_tensor(tf.Variable(1.0))
    assert not tf.is_tensor(np.ones(2))
    assert tf.executing_eagerly()


def test_convert_to_tensor():
    t = tf.constant([1.0])
    assert tf.convert_to_tensor(t) is t
    assert tf.convert_to_tensor([1, 2], dtype=tf.float32).dtype == tf.float32
    with pytest.raises(ValueError, match="requested dtype float64"):
        tf.convert_to_tensor(t, dtype=tf.float64)
