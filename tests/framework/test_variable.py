"""tf.Variable: names, assignment returning the variable, reads, trainability."""

import numpy as np
import pytest

import tapeflow as tf


def test_names_end_with_output_index():
    assert tf.Variable(1.0).name == "Variable:0"
    assert tf.Variable(1.0, name="w").name == "w:0"
    with tf.name_scope("dense"):
        assert tf.Variable(1.0, name="kernel").name == "dense/kernel:0"


def test_assign_ops_return_the_variable_and_update_in_place():
    v = tf.Variable([1.0, 2.0])
    assert v.assign([3.0, 4.0]) is v
    np.testing.assert_array_equal(v.numpy(), [3.0, 4.0])
    assert v.assign_add([1.0, 1.0]) is v
    assert v.assign_sub(tf.constant([0.5, 0.5])) is v
    np.testing.assert_array_equal(v.numpy(), [3.5, 4.5])
    assert v.dtype == tf.float32 and v.shape == (2,)


def test_read_value_is_a_snapshot():
    v = tf.Variable(1.0)
    before = v.read_value()
    v.assign(5.0)
    assert float(before) == 1.0 and float(v.read_value()) == 5.0
    assert isinstance(v.numpy(), np.float32)


def test_assign_checks_shape_and_dtype():
    v = tf.Variable([1.0, 2.0])
    with pytest.raises(tf.errors.InvalidArgumentError, match="shape"):
        v.assign([1.0, 2.0, 3.0])
    with pytest.raises((tf.errors.InvalidArgumentError, TypeError, ValueError)):
        v.assign(tf.constant([1, 2]))


def test_trainable_and_dtype_argument():
    v = tf.Variable(3, dtype=tf.float64, trainable=False)
    assert v.dtype == tf.float64 and not v.trainable
    assert tf.Variable(2).dtype == tf.int32


def test_variables_work_with_operators_and_ops():
    v = tf.Variable([[1.0, 2.0]])
    np.testing.assert_array_equal((v * 2 + 1).numpy(), [[3.0, 5.0]])
    np.testing.assert_array_equal((v @ tf.ones([2, 1])).numpy(), [[3.0]])
    np.testing.assert_array_equal(tf.reduce_sum(v).numpy(), 3.0)
    assert np.asarray(v).shape == (1, 2)
    assert "<tf.Variable 'Variable:0' shape=(1, 2) dtype=float32" in repr(v)
