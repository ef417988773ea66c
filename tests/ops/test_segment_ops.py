"""Segment reductions: forward vs NumPy, gradients vs finite differences, graph vs eager."""

import numpy as np

import tapeflow as tf
from tapeflow.testing import OpCase, op_table_tests

IDS = np.array([2, 0, 2, -1, 1, 0])
SORTED = np.array([0, 0, 1, 3, 3, 3])


def _data(rng):
    return [rng.standard_normal((6, 3)) + 3.0, IDS]


def _sorted(rng):
    return [rng.standard_normal((6, 3)) + 3.0, SORTED]


def _ref(reduce, fill, n=3):
    def ref(x, ids):
        out = np.full((n,) + x.shape[1:], fill, dtype=x.dtype)
        for s in range(n):
            rows = x[ids == s]
            if len(rows):
                out[s] = reduce(rows, axis=0)
        return out
    return ref


def _mean(rows, axis):
    return rows.mean(axis)


def _sqrt_n(rows, axis):
    return rows.sum(axis) / np.sqrt(len(rows))


LOW, HIGH = np.finfo(np.float32).min, np.finfo(np.float32).max

CASES = [
    OpCase("unsorted_sum", lambda x, i: tf.math.unsorted_segment_sum(x, i, 3),
           _ref(np.sum, 0), _data),
    OpCase("unsorted_max", lambda x, i: tf.math.unsorted_segment_max(x, i, 3),
           _ref(np.max, LOW), _data),
    OpCase("unsorted_min", lambda x, i: tf.math.unsorted_segment_min(x, i, 3),
           _ref(np.min, HIGH), _data),
    OpCase("unsorted_prod", lambda x, i: tf.math.unsorted_segment_prod(x, i, 3),
           _ref(np.prod, 1), _data),
    OpCase("unsorted_mean", lambda x, i: tf.math.unsorted_segment_mean(x, i, 3),
           _ref(_mean, 0), _data),
    OpCase("unsorted_sqrt_n", lambda x, i: tf.math.unsorted_segment_sqrt_n(x, i, 3),
           _ref(_sqrt_n, 0), _data),
    OpCase("segment_sum", tf.math.segment_sum, _ref(np.sum, 0, 4), _sorted),
    OpCase("segment_max", tf.math.segment_max, _ref(np.max, 0, 4), _sorted),
    OpCase("segment_min", tf.math.segment_min, _ref(np.min, 0, 4), _sorted),
    OpCase("segment_prod", tf.math.segment_prod, _ref(np.prod, 1, 4), _sorted),
    OpCase("segment_mean", tf.math.segment_mean, _ref(_mean, 0, 4), _sorted),
]

test_forward, test_gradient, test_vs_torch, test_graph_matches_eager = op_table_tests(CASES)


def test_max_gradient_splits_between_ties():
    x = tf.constant([1.0, 3.0, 3.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.math.segment_max(x, [0, 0, 0, 1])
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), [0, 0.5, 0.5, 1])
