"""Random ops: TF's seed semantics, distributions, dtypes, and the helpers for other modules."""

import subprocess
import sys

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.framework.context import state
from tapeflow.ops import random_ops


@pytest.fixture(autouse=True)
def no_global_seed():
    yield
    tf.random.set_seed(None)


def draw():
    return [tf.random.uniform([3]).numpy(), tf.random.normal([2], seed=7).numpy(),
            tf.random.truncated_normal([2]).numpy()]


def test_global_seed_makes_the_sequence_repeat():
    tf.random.set_seed(42)
    first = draw()
    tf.random.set_seed(42)
    second = draw()
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(first[0], draw()[0])  # the sequence moves on


def test_same_op_seed_continues_its_stream_until_set_seed():
    tf.random.set_seed(3)
    a = tf.random.uniform([4], seed=11).numpy()
    b = tf.random.uniform([4], seed=11).numpy()
    assert not np.array_equal(a, b)
    tf.random.set_seed(3)
    np.testing.assert_array_equal(tf.random.uniform([4], seed=11).numpy(), a)


def test_op_seed_alone_is_repeatable_across_processes():
    code = "import tapeflow as tf; print(tf.random.normal([3], seed=5).numpy().tolist())"
    outs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True).stdout for _ in range(2)]
    assert outs[0] == outs[1] and outs[0].strip()


def test_no_seed_gives_different_values():
    assert not np.array_equal(tf.random.uniform([8]).numpy(), tf.random.uniform([8]).numpy())


def test_uniform_range_and_dtypes():
    tf.random.set_seed(0)
    x = tf.random.uniform([1000], minval=-2.0, maxval=3.0)
    assert x.dtype == tf.float32 and x.shape == (1000,)
    assert -2.0 <= x.numpy().min() and x.numpy().max() < 3.0
    i = tf.random.uniform([1000], 0, 5, dtype=tf.int32)
    assert i.dtype == tf.int32 and set(np.unique(i.numpy())) == {0, 1, 2, 3, 4}
    assert tf.random.uniform([2], dtype=tf.float64).dtype == tf.float64
    with pytest.raises(ValueError, match="maxval"):
        tf.random.uniform([2], dtype=tf.int32)


def test_normal_and_truncated_normal_statistics():
    tf.random.set_seed(1)
    n = tf.random.normal([20000], mean=1.0, stddev=2.0).numpy()
    assert abs(n.mean() - 1.0) < 0.05 and abs(n.std() - 2.0) < 0.05
    t = tf.random.truncated_normal([20000], stddev=0.5).numpy()
    assert np.abs(t).max() <= 1.0
    assert 0.42 < t.std() < 0.45  # std of a normal truncated at 2 sigma: 0.88 sigma


def test_shuffle_and_categorical():
    tf.random.set_seed(2)
    s = tf.random.shuffle(tf.range(10)).numpy()
    assert sorted(s.tolist()) == list(range(10))
    c = tf.random.categorical(tf.math.log([[0.0, 1.0], [1.0, 0.0]]), 50)
    assert c.dtype == tf.int64 and c.shape == (2, 50)
    np.testing.assert_array_equal(c.numpy(), [[1] * 50, [0] * 50])


def test_next_seed_is_deterministic_under_a_global_seed():
    tf.random.set_seed(9)
    a = [random_ops.next_seed(), random_ops.next_seed(4)]
    tf.random.set_seed(9)
    assert [random_ops.next_seed(), random_ops.next_seed(4)] == a
    tf.random.set_seed(None)
    assert random_ops.next_seed() is None


def test_seed_offset_gives_each_element_its_own_reproducible_stream():
    tf.random.set_seed(5)

    def element(offset):
        state.seed_offset = offset
        try:
            return tf.random.uniform([2]).numpy(), tf.random.uniform([2]).numpy()
        finally:
            state.seed_offset = None

    a0, a1, a2 = element(0), element(1), element(2)
    b1, b0, b2 = element(1), element(0), element(2)  # the order of elements does not matter
    for x, y in zip(a0 + a1 + a2, b0 + b1 + b2):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(a0[0], a1[0])
    assert not np.array_equal(a0[0], a0[1])


def test_random_ops_are_stateful_with_explicit_shape_rules():
    from tapeflow.framework.dispatch import REGISTRY

    for name in ("RandomUniform", "RandomStandardNormal", "TruncatedNormal"):
        assert REGISTRY[name].random and REGISTRY[name].stateful
        assert REGISTRY[name].shape_fn is not None


def test_traced_function_draws_new_values_each_call(tf_function):
    tf.random.set_seed(4)
    f = tf_function(lambda: tf.random.uniform([3]))
    assert not np.array_equal(f().numpy(), f().numpy())
