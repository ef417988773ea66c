"""Reading a variable under a tape keeps the gradient path to it (as TF's ReadVariableOp)."""

import numpy as np

import tapeflow as tf


def test_converted_and_read_variables_get_gradients():
    v = tf.Variable(2.0)
    with tf.GradientTape() as tape:
        y = tf.convert_to_tensor(v) * 3.0 + v.read_value() ** 2 + tf.identity(v)
    np.testing.assert_allclose(tape.gradient(y, v).numpy(), 3.0 + 4.0 + 1.0)


def test_a_watched_non_trainable_variable_gets_its_gradient_and_an_unwatched_none():
    frozen = tf.Variable(2.0, trainable=False)
    with tf.GradientTape() as tape:
        y = tf.convert_to_tensor(frozen) * 3.0
    assert tape.gradient(y, frozen) is None
    with tf.GradientTape() as tape:
        tape.watch(frozen)
        y = tf.convert_to_tensor(frozen) * 3.0
    np.testing.assert_allclose(tape.gradient(y, frozen).numpy(), 3.0)


def test_reads_outside_a_tape_are_plain_values():
    v = tf.Variable([1.0, 2.0])
    t = tf.convert_to_tensor(v)
    v.assign([5.0, 6.0])
    np.testing.assert_array_equal(t.numpy(), [1.0, 2.0])  # a snapshot, not a view
