"""Map-then-batch fusion: `map(f).batch(n)` calls `f` on whole batches only where that gives the
same elements as mapping one by one (checked), and falls back otherwise."""

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.data import vectorize
from tapeflow.io.parsing import serialized_example


def no_fusion(ds):
    options = tf.data.Options()
    options.experimental_optimization.map_and_batch_fusion = False
    return ds.with_options(options)


def batches(ds):
    return [tuple(np.asarray(v) for v in (b if isinstance(b, tuple) else (b,)))
            for b in ds.as_numpy_iterator()]


def assert_same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        for u, v in zip(x, y):
            assert u.dtype == v.dtype and u.shape == v.shape
            np.testing.assert_array_equal(u, v)


class Counting:
    """A map function that records the leading dimension of every call."""

    def __init__(self, fn):
        self.fn, self.calls = fn, []

    def __call__(self, x, y):
        self.calls.append(tuple(x.shape))
        return self.fn(x, y)


@pytest.mark.parametrize("parallel", [None, 2])
def test_elementwise_function_runs_on_whole_batches(parallel):
    source = tf.data.Dataset.from_tensor_slices((np.arange(70.0).reshape(35, 2),
                                                 np.arange(35)))
    fn = Counting(lambda x, y: (tf.cast(x, tf.float32) * 2.0 + 1.0, y % 3))
    fused = source.map(fn, num_parallel_calls=parallel).batch(8)
    expected = no_fusion(source.map(lambda x, y: (tf.cast(x, tf.float32) * 2.0 + 1.0, y % 3),
                                     num_parallel_calls=parallel).batch(8))
    assert_same(batches(fused), batches(expected))
    fn.calls.clear()
    batches(fused)
    assert sorted(fn.calls) == sorted([(8, 2)] * 4 + [(3, 2)])   # 5 calls, no element-wise ones


def test_non_elementwise_function_is_not_fused_and_stays_correct():
    source = tf.data.Dataset.from_tensor_slices(np.arange(12.0).reshape(6, 2))

    def centre(x):   # the mean over the whole argument: a batch mean would differ
        return x - tf.reduce_mean(x)

    fused = source.map(centre).batch(4)
    assert_same(batches(fused), batches(no_fusion(source.map(centre).batch(4))))
    assert np.allclose(batches(fused)[0][0][0], [-0.5, 0.5])


def test_scalar_output_and_random_functions_fall_back():
    source = tf.data.Dataset.range(10)
    const = batches(source.map(lambda x: tf.constant(3)).batch(4))
    assert [b[0].tolist() for b in const] == [[3] * 4, [3] * 4, [3] * 2]
    tf.random.set_seed(5)
    a = batches(source.map(lambda x: tf.random.uniform([])).batch(5))
    tf.random.set_seed(5)
    b = batches(no_fusion(source.map(lambda x: tf.random.uniform([])).batch(5)))
    assert_same(a, b)


def test_parse_single_example_in_map_parses_whole_batches():
    records = [serialized_example({"v": [float(i), -float(i)], "k": [i]}) for i in range(20)]
    spec = {"v": tf.io.FixedLenFeature([2], tf.float32), "k": tf.io.FixedLenFeature([], tf.int64)}
    seen = []

    def parse(r):
        seen.append(tuple(r.shape))
        d = tf.io.parse_single_example(r, spec)
        return d["v"], d["k"]

    ds = tf.data.Dataset.from_tensor_slices(np.array(records, dtype=object))
    got = batches(ds.map(parse, num_parallel_calls=tf.data.AUTOTUNE).batch(8))
    assert [b[1].tolist() for b in got] == [list(range(8)), list(range(8, 16)),
                                            list(range(16, 20))]
    assert got[2][0][3].tolist() == [19.0, -19.0]
    seen.clear()
    batches(ds.map(parse, num_parallel_calls=tf.data.AUTOTUNE).batch(8))
    assert sorted(seen) == [(4,), (8,), (8,)]


def test_vectorize_flag_is_per_thread_and_restored():
    assert not vectorize.active()
    with vectorize.batched_call():
        assert vectorize.active()
    assert not vectorize.active()


def test_map_errors_still_surface_per_element():
    ds = tf.data.Dataset.from_tensor_slices(np.array([b"ok", b"bad"], dtype=object))
    spec = {"x": tf.io.FixedLenFeature([], tf.int64)}
    with pytest.raises(tf.errors.InvalidArgumentError):
        list(ds.map(lambda r: tf.io.parse_single_example(r, spec)).batch(2))
