"""Errors keep the README's promise: the op or layer, the shapes/dtypes, and the user's own
source line (this file). One test per case from issue 20."""

from __future__ import annotations

import re

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.framework import errors

HERE = re.escape(__file__)


def _raises(exc, *patterns):
    """pytest.raises that also checks each pattern and that this file's line is named."""
    class _Check:
        def __enter__(self):
            self._ctx = pytest.raises(exc)
            self._info = self._ctx.__enter__()
            return self._info

        def __exit__(self, *exc_info):
            handled = self._ctx.__exit__(*exc_info)
            message = str(self._info.value)
            for p in patterns:
                assert re.search(p, message, re.S), (p, message)
            assert re.search(f'File "{HERE}", line \\d+', message), message
            return handled
    return _Check()


def test_reduce_sum_axis_out_of_range():
    with _raises(errors.InvalidArgumentError, r"Sum: axis 5 is out of range for a tensor of "
                 r"rank 2 \(input float32\[2, 3\]\)", r"tf\.reduce_sum\(x, axis=5\)"):
        x = tf.ones((2, 3))
        tf.reduce_sum(x, axis=5)


def test_non_persistent_tape_second_gradient():
    x = tf.Variable(2.0)
    with tf.GradientTape() as tape:
        y = x * x
    tape.gradient(y, x)  # first use
    with _raises(RuntimeError, r"non-persistent GradientTape", r"persistent=True",
                 r"tape\.gradient\(y, x\)  # first use", r"tape\.gradient\(y, x\)  # second"):
        tape.gradient(y, x)  # second


def test_fit_with_x_and_y_of_different_lengths():
    model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    with _raises(ValueError, r"x sizes: 10, y sizes: 8", r"model\.fit\("):
        model.fit(np.ones((10, 3), np.float32), np.ones((8, 1), np.float32), verbose=0)


def test_input_signature_wrong_shape_and_dtype():
    f = tf.function(lambda x: x * 2, input_signature=[tf.TensorSpec([None, 3], tf.float32)])
    with _raises(TypeError, r"argument 'x' has shape \[2, 4\]", r"shape \[\?, 3\]",
                 r"f\(tf\.ones\(\(2, 4\)\)\)"):
        f(tf.ones((2, 4)))
    with _raises(TypeError, r"argument 'x' has dtype float64 but the input_signature requires "
                 r"float32", r"f\(tf\.ones\(\(2, 3\), tf\.float64\)\)"):
        f(tf.ones((2, 3), tf.float64))


def test_one_hot_with_float_indices():
    with _raises(TypeError, r"OneHot: indices must be integers", r"float32 tensor of shape "
                 r"\(2,\)", r"tf\.cast", r"tf\.one_hot\(indices, 3\)"):
        indices = tf.constant([0.0, 1.0])
        tf.one_hot(indices, 3)


def test_dataset_batch_of_ragged_elements():
    ds = tf.data.Dataset.from_generator(lambda: iter([np.ones(2), np.ones(3)]),
                                        output_signature=tf.TensorSpec([None], tf.float64))
    batched = ds.batch(2)  # the line the error points at
    with _raises(errors.InvalidArgumentError, r"shape \[2\] and element 1 had shape \[3\]",
                 r"float64", r"padded_batch", r"batch\(\) was called at",
                 r"ds\.batch\(2\)  # the line"):
        list(batched)


def test_dense_with_the_wrong_input_width_names_the_layer_and_both_widths():
    model = tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(2, name="hidden")])
    with _raises(ValueError, r"layer 'hidden' \(Dense\)", r"to have value 3",
                 r"shape \(2, 4\) \(width 4, float32\)", r"model\(np\.ones"):
        model(np.ones((2, 4), np.float32))
    layer = tf.keras.layers.Dense(2, name="head")
    layer(np.ones((2, 3), np.float32))

    @tf.function
    def traced(x):
        return layer(x)

    with _raises(ValueError, r"layer 'head' \(Dense\)", r"value 3", r"width 5",
                 r"return layer\(x\)"):
        traced(tf.ones((4, 5)))


def test_while_loop_body_changing_a_shape_raises_in_graph_mode():
    @tf.function
    def grow(x):
        return tf.while_loop(lambda i, x: i < 3, lambda i, x: (i + 1, tf.concat([x, x], 0)),
                             [tf.constant(0), x])

    with _raises(ValueError, r"loop variable 1 enters the loop with shape \(2,\), but has "
                 r"shape \(4,\) after one iteration", r"shape_invariants",
                 r"return tf\.while_loop"):
        grow(tf.ones((2,)))

    @tf.function
    def grow_declared(x):
        return tf.while_loop(lambda i, x: i < 3, lambda i, x: (i + 1, tf.concat([x, x], 0)),
                             [tf.constant(0), x],
                             shape_invariants=[tf.TensorShape([]), tf.TensorShape([None])])

    _, out = grow_declared(tf.ones((2,)))
    assert out.shape == (16,)

    @tf.function
    def wrong_rank(x):
        return tf.while_loop(lambda x: tf.reduce_sum(x) < 9.0, lambda x: tf.expand_dims(x, 0),
                             [x], shape_invariants=[tf.TensorShape([None])])

    with _raises(ValueError, r"loop variable 0 has the shape invariant \(None,\), but has "
                 r"shape \(1, None\) after one iteration", r"return tf\.while_loop"):
        wrong_rank(tf.ones((2,)))

    @tf.function
    def bad_invariant(x):
        return tf.while_loop(lambda x: tf.reduce_sum(x) < 9.0, lambda x: x * 2.0, [x],
                             shape_invariants=[tf.TensorShape([None, 2])])

    with _raises(ValueError, r"shape invariant \(None, 2\) of loop variable 0 is not "
                 r"compatible with the shape it enters the loop with, \(2,\)"):
        bad_invariant(tf.ones((2,)))
