"""Ops that take a shape get it as a run-time tensor inside a traced function.

``tf.zeros(tf.shape(x))``, ``tf.random.normal([tf.shape(x)[0], 3])``: with an unknown batch the
shape exists only when the function runs. The shape tensor becomes the op's input, and what is
known of it when tracing (constants, static dims of the tensor whose shape was taken) becomes the
output's static shape.
"""

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.ops.shape_args import known_dims

BATCHLESS = [tf.TensorSpec((None, 4, 2))]


def test_fills_take_run_time_shapes_and_keep_what_is_known():
    seen = {}

    @tf.function(input_signature=BATCHLESS)
    def fills(x):
        out = (tf.zeros(tf.shape(x)), tf.ones([tf.shape(x)[0], 3], dtype=tf.int32),
               tf.fill(tf.concat([tf.shape(x)[:1], [5]], 0), 2.5))
        seen["static"] = [t.shape.as_list() for t in out]
        return out

    for batch in (3, 1):
        zeros, ones, filled = fills(tf.ones((batch, 4, 2)))
        np.testing.assert_array_equal(zeros.numpy(), np.zeros((batch, 4, 2), np.float32))
        np.testing.assert_array_equal(ones.numpy(), np.ones((batch, 3), np.int32))
        np.testing.assert_array_equal(filled.numpy(), np.full((batch, 5), 2.5, np.float32))
    assert seen["static"] == [[None, 4, 2], [None, 3], [None, 5]]
    assert fills.experimental_get_tracing_count() == 1


def test_random_ops_take_run_time_shapes():
    @tf.function(input_signature=BATCHLESS)
    def draws(x):
        return (tf.random.normal(tf.shape(x), mean=1.0, stddev=2.0),
                tf.random.uniform([tf.shape(x)[0], 1000], minval=-1.0, maxval=1.0),
                tf.random.truncated_normal(tf.shape(x)),
                tf.random.uniform([tf.shape(x)[0]], maxval=4, dtype=tf.int64))

    big = tf.ones((5000, 4, 2))
    normal, uniform, truncated, ints = draws(big)
    assert normal.shape == (5000, 4, 2) and uniform.shape == (5000, 1000)
    assert abs(float(np.mean(normal)) - 1.0) < 0.05 and abs(float(np.std(normal)) - 2.0) < 0.05
    assert -1.0 <= float(np.min(uniform)) and float(np.max(uniform)) < 1.0
    assert float(np.max(np.abs(truncated))) <= 2.0
    assert ints.dtype == tf.int64 and set(np.unique(ints.numpy())) == {0, 1, 2, 3}
    again = draws(big)[0]  # each call draws anew
    assert not np.array_equal(normal.numpy(), again.numpy())
    assert draws(tf.ones((2, 4, 2)))[0].shape == (2, 4, 2)


def test_seeded_run_time_draws_repeat_across_traces():
    def make():
        tf.random.set_seed(11)
        return tf.function(lambda x: tf.random.normal(tf.shape(x), seed=4),
                           input_signature=BATCHLESS)

    x = tf.ones((3, 4, 2))
    np.testing.assert_array_equal(make()(x).numpy(), make()(x).numpy())


def test_reshape_and_broadcast_keep_the_known_dims():
    seen = {}

    @tf.function(input_signature=BATCHLESS)
    def shaped(x):
        flat = tf.reshape(x, tf.concat([tf.shape(x)[:1], [8]], 0))
        wide = tf.broadcast_to(tf.ones((1, 4, 2)), tf.shape(x))
        seen["static"] = [flat.shape.as_list(), wide.shape.as_list()]
        return flat, wide

    flat, wide = shaped(tf.reshape(tf.range(48.0), (6, 4, 2)))
    np.testing.assert_array_equal(flat.numpy(), np.arange(48.0).reshape(6, 8))
    assert wide.shape == (6, 4, 2)
    assert seen["static"] == [[None, 8], [None, 4, 2]]


def test_known_dims_reads_constants_shapes_packs_concats_and_slices():
    seen = {}

    @tf.function(input_signature=BATCHLESS)
    def probe(x):
        s = tf.shape(x)
        seen.update(shape=known_dims(s), const=known_dims(tf.constant([2, 3])),
                    pack=known_dims(tf.stack([s[0], s[2], 7])),
                    concat=known_dims(tf.concat([s[1:], [9]], 0)),
                    opaque=known_dims(s * 2))
        return x

    probe(tf.ones((1, 4, 2)))
    assert seen == {"shape": (None, 4, 2), "const": (2, 3), "pack": (None, 2, 7),
                    "concat": (4, 2, 9), "opaque": (None, None, None)}


def test_gradients_flow_through_ops_with_run_time_shapes():
    """x * ones(shape(x)) + reshape: d/dx in graph equals eager, and finite differences."""
    def f(x):
        y = tf.reshape(x * tf.ones(tf.shape(x), dtype=x.dtype), [tf.shape(x)[0], -1])
        return tf.reduce_sum(y ** 2)

    x = tf.constant(np.random.default_rng(0).standard_normal((3, 4, 2)))

    def grad(fn):
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = fn(x)
        return tape.gradient(loss, x).numpy()

    graph = grad(tf.function(f, input_signature=[tf.TensorSpec((None, 4, 2), tf.float64)]))
    np.testing.assert_allclose(graph, grad(f), rtol=1e-12)
    np.testing.assert_allclose(graph, 2 * x.numpy(), rtol=1e-12)


@pytest.mark.parametrize("make, match", [
    (lambda s: tf.zeros(tf.cast(s, tf.float32)), "tf.zeros: a shape tensor must be a 1-D int"),
    (lambda s: tf.random.normal(tf.reshape(s, (1, 3))), "tf.random.normal: a shape tensor"),
])
def test_bad_shape_tensors_name_the_op(make, match):
    @tf.function(input_signature=BATCHLESS)
    def bad(x):
        return make(tf.shape(x))

    with pytest.raises(ValueError, match=match):
        bad(tf.ones((1, 4, 2)))


def test_unknown_static_dims_are_refused_by_name():
    with pytest.raises(ValueError, match=r"tf.random.uniform: the shape must be fully known"):
        tf.random.uniform([None, 3])
    with pytest.raises(ValueError, match=r"tf.ones: the shape must be fully known"):
        tf.ones([-1, 2])
