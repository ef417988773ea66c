"""Errors a person can act on: TF's classes, the op, the shapes and the user's own line."""

import pytest

import tapeflow as tf


def test_matmul_shape_mismatch_names_op_shapes_and_this_line():
    a, b = tf.zeros([2, 3]), tf.zeros([4, 5])
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        tf.matmul(a, b)  # the line the message must point at
    msg = str(info.value)
    assert "MatMul" in msg and "[2, 3]" in msg and "[4, 5]" in msg
    assert __file__ in msg and "tf.matmul(a, b)  # the line the message must point at" in msg


def test_kernel_errors_become_invalid_argument_with_shapes():
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        tf.reshape(tf.zeros([2, 3]), [4, 2])
    msg = str(info.value)
    assert "Reshape" in msg and "float32[2, 3]" in msg and __file__ in msg


def test_broadcast_mismatch():
    with pytest.raises(tf.errors.InvalidArgumentError, match="AddV2") as info:
        tf.zeros([2, 3]) + tf.zeros([4])
    assert __file__ in str(info.value)


def test_error_classes():
    assert issubclass(tf.errors.InvalidArgumentError, tf.errors.OpError)
    for name in ("FailedPreconditionError", "OutOfRangeError", "NotFoundError",
                 "OperatorNotAllowedInGraphError", "ResourceExhaustedError"):
        assert hasattr(tf.errors, name)
