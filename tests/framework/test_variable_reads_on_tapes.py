"""Reading a variable under a tape keeps the gradient path to it (as TF's ReadVariableOp)."""

import numpy as np

import tapeflow as tf
from tapeflow.testing import numeric_gradient


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


READS = {
    "read_value": lambda w: w.read_value(),
    "value": lambda w: w.value(),
    "convert_to_tensor": lambda w: tf.convert_to_tensor(w),
    "identity": lambda w: tf.identity(w),
    "plus_zero": lambda w: w + 0.0,
}


def test_traced_reads_get_the_eager_gradient_checked_by_finite_differences():
    start = np.array([0.5, -1.5, 2.0])
    w = tf.Variable(start)  # float64
    for name, read in READS.items():
        def step(read=read):
            with tf.GradientTape() as tape:
                y = tf.reduce_sum(tf.sin(read(w)) * read(w))
            return tape.gradient(y, w)

        eager, traced = step(), tf.function(step)()
        assert traced is not None, name
        np.testing.assert_allclose(traced.numpy(), eager.numpy(), rtol=1e-12, err_msg=name)
        expected = numeric_gradient(lambda x: float(np.sum(np.sin(x) * x)), start)
        np.testing.assert_allclose(traced.numpy(), expected, rtol=1e-6, err_msg=name)


def test_a_traced_read_feeds_an_optimizer_step():
    w = tf.Variable([1.0, 2.0])
    opt = tf.keras.optimizers.SGD(0.5)

    @tf.function
    def train():
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(w.read_value() * 2.0)
        opt.apply_gradients([(tape.gradient(loss, w), w)])

    train()
    np.testing.assert_allclose(w.numpy(), [0.0, 1.0])
