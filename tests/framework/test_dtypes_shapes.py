"""TF dtype rules for constants and mixed arithmetic, DType objects and TensorShape."""

import numpy as np
import pytest

import tapeflow as tf


@pytest.mark.parametrize("value,dtype", [
    (1.0, tf.float32), (1, tf.int32), (True, tf.bool), ([1, 2], tf.int32),
    ([1.0, 2], tf.float32), (2**40, tf.int64), ("a", tf.string),
    (np.float64(1.0), tf.float64), (np.arange(3), tf.int64),
    (np.zeros(2, np.float16), tf.float16), (np.zeros(2, np.uint8), tf.uint8),
])
def test_constant_dtype_inference(value, dtype):
    assert tf.constant(value).dtype == dtype


def test_explicit_dtype_and_shape():
    t = tf.constant(3, dtype=tf.float64, shape=[2, 2])
    assert t.dtype == tf.float64 and t.shape == (2, 2)
    np.testing.assert_array_equal(t.numpy(), np.full((2, 2), 3.0))
    assert tf.constant([1, 2, 3, 4], shape=(2, 2)).shape == (2, 2)


def test_int_division_gives_float64_like_tf():
    out = tf.constant(7) / tf.constant(2)
    assert out.dtype == tf.float64
    assert float(out) == 3.5


def test_python_numbers_take_the_tensor_dtype():
    x = tf.constant([1, 2], dtype=tf.int64)
    assert (x + 1).dtype == tf.int64
    assert (2.0 * tf.constant([1.0], tf.float64)).dtype == tf.float64
    assert (tf.constant([1.0]) ** 2).dtype == tf.float32


def test_mixed_dtypes_raise_invalid_argument():
    with pytest.raises(tf.errors.InvalidArgumentError, match="AddV2.*float32, int32"):
        tf.constant([1.0]) + tf.constant([1])
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.constant([1.0]) * tf.constant([1.0], tf.float64)


def test_non_integral_float_does_not_join_an_int_tensor():
    with pytest.raises((TypeError, tf.errors.InvalidArgumentError), match="AddV2|integral"):
        tf.constant([1, 2]) + 2.5


def test_cast():
    x = tf.cast(tf.constant([1.7, -1.7]), tf.int32)
    assert x.dtype == tf.int32
    np.testing.assert_array_equal(x.numpy(), [1, -1])
    assert tf.cast(x, "float64").dtype == tf.float64


def test_dtype_objects():
    assert tf.float32.name == "float32"
    assert tf.float32.as_numpy_dtype is np.float32
    assert tf.as_dtype(np.int64) is tf.int64 and tf.as_dtype("float16") is tf.float16
    assert tf.float32 == np.float32 and tf.float32 != tf.float64
    assert tf.int8.is_integer and tf.float16.is_floating and tf.bool.is_bool
    assert tf.uint8.max == 255 and repr(tf.int32) == "tf.int32"
    with pytest.raises(TypeError):
        tf.as_dtype("nonsense")


def test_tensor_shape():
    s = tf.TensorShape([None, 3])
    assert s.rank == 2 and s.as_list() == [None, 3] and not s.is_fully_defined()
    assert s.is_compatible_with([5, 3]) and not s.is_compatible_with([5, 4])
    assert s.merge_with([5, None]) == tf.TensorShape([5, 3])
    assert str(s) == "(None, 3)" and repr(s) == "TensorShape([None, 3])"
    assert tf.TensorShape(None).rank is None
    with pytest.raises(ValueError):
        tf.TensorShape(None).as_list()
    assert tf.TensorShape([2, 3]).num_elements() == 6
    assert tf.TensorShape([2]) + [4] == tf.TensorShape([2, 4])
    assert tf.zeros([2, 3]).shape[1] == 3 and tf.zeros([2, 3]).shape == (2, 3)
