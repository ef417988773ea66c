"""Ragged ops against TF 2.21 (ragged_op_cases.py, fixtures/tf_ragged_ops.json), with float64
finite-difference gradients and eager-vs-tf.function equality for the differentiable ones."""

import json
from pathlib import Path

import numpy as np
import pytest
from ragged_op_cases import CASES, ROWS, run

import tapeflow as tf

REF = json.loads((Path(__file__).parent / "fixtures" / "tf_ragged_ops.json").read_text())


def _close(got, want, path):
    if isinstance(want, dict):
        assert isinstance(got, dict) and sorted(got) == sorted(want), f"{path}: {got!r}"
        for key in want:
            _close(got[key], want[key], f"{path}.{key}")
    elif isinstance(want, list) and any(isinstance(w, (list, dict)) for w in want):
        assert isinstance(got, list) and len(got) == len(want), f"{path}: {got!r}"
        for i, (g, w) in enumerate(zip(got, want)):
            _close(g, w, f"{path}[{i}]")
    elif isinstance(want, str) or (isinstance(want, list) and want and
                                   all(isinstance(w, str) for w in want)):
        assert got == want, path
    else:
        np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64),
                                   rtol=1e-5, atol=1e-6, err_msg=path)


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_tensorflow(name):
    _close(run(tf, name), REF[name], name)


SPLITS = np.array([0, 3, 4, 6, 6])
FLAT = np.array([v for row in ROWS for v in row])
GRADIENT_CASES = {
    "softmax_rows": lambda rt: tf.nn.softmax(rt),
    "reverse_rows": lambda rt: tf.reverse(rt, [1]) * tf.ragged.constant(ROWS, tf.float64),
    "tile": lambda rt: tf.tile(rt, [2, 3]),
    "segment_sum": lambda rt: tf.math.unsorted_segment_sum(rt, [1, 0, 1, 0], 2),
    "segment_mean": lambda rt: tf.math.unsorted_segment_mean(rt * rt, [1, 0, 1, 1], 2),
    "segment_max": lambda rt: tf.math.unsorted_segment_max(rt, [1, 0, 1, 1], 2),
    "gelu": lambda rt: tf.nn.gelu(rt),
    "per_row_slice": lambda rt: rt[:, 1:] * 2.0,
    "variance": lambda rt: tf.math.reduce_variance(rt[:3], axis=1),
    "logsumexp": lambda rt: tf.reduce_logsumexp(rt[:3], axis=1),
    "gather_nested": lambda rt: tf.gather(rt, [[0, 2], [2, 0]]).flat_values ** 2,
    "stack_axis_1": lambda rt: tf.ragged.stack([rt, rt * rt], axis=1),
    "gather_nd": lambda rt: tf.gather_nd(rt, [[0, 1], [2, 0], [0, 1]]) ** 2,
}


@pytest.mark.parametrize("name", sorted(GRADIENT_CASES))
def test_gradients_by_finite_differences(name):
    fn = GRADIENT_CASES[name]
    weights = {}

    def loss(flat):
        out = fn(tf.RaggedTensor.from_row_splits(flat, SPLITS))
        values = out.flat_values if isinstance(out, tf.RaggedTensor) else out
        if "w" not in weights:  # fixed random weights of the output's entries
            weights["w"] = np.random.RandomState(0).uniform(0.5, 1.5, values.shape.as_list())
        return tf.reduce_sum(values * weights["w"])

    def grad(flat):
        with tf.GradientTape() as tape:
            tape.watch(flat)
            value = loss(flat)
        return value, tape.gradient(value, flat)

    x = tf.constant(FLAT)
    value, analytic = grad(x)
    traced_value, traced = tf.function(grad)(x)
    np.testing.assert_allclose(traced_value.numpy(), value.numpy(), rtol=1e-12)
    np.testing.assert_allclose(traced.numpy(), analytic.numpy(), rtol=1e-10, atol=1e-12)
    eps, numeric = 1e-6, np.zeros_like(FLAT)
    for i in range(len(FLAT)):
        up, down = FLAT.copy(), FLAT.copy()
        up[i] += eps
        down[i] -= eps
        numeric[i] = (loss(tf.constant(up)).numpy() - loss(tf.constant(down)).numpy()) / (2 * eps)
    np.testing.assert_allclose(analytic.numpy(), numeric, rtol=1e-6, atol=1e-8)


def test_ragged_batch_keeps_static_shape_components_dense():
    x = tf.ragged.constant([[1, 2, 3], [4], [5, 6]])
    ds = tf.data.Dataset.from_tensor_slices((x, np.ones((3, 1), np.float32))).ragged_batch(2)
    spec = ds.element_spec
    assert isinstance(spec[0], tf.RaggedTensorSpec) and isinstance(spec[1], tf.TensorSpec)
    batches = list(ds)
    assert batches[1][0].to_list() == [[5, 6]] and batches[1][1].shape == (1, 1)


def test_map_fn_over_run_time_rows_has_gradients():
    """A traced map_fn over a ragged batch of unknown size: rows concatenated in a
    while_loop; the gradient reaches the flat values."""
    @tf.function(input_signature=[tf.TensorSpec([None], tf.float64),
                                  tf.TensorSpec([None], tf.int64)])
    def grad(flat, splits):
        with tf.GradientTape() as tape:
            tape.watch(flat)
            rt = tf.RaggedTensor.from_row_splits(flat, splits)
            out = tf.map_fn(lambda r: r * r, rt, fn_output_signature=tf.RaggedTensorSpec(
                [None], tf.float64, 0))
            loss = tf.reduce_sum(out.flat_values * tf.range(6, dtype=tf.float64))
        return tape.gradient(loss, flat)

    np.testing.assert_allclose(grad(tf.constant(FLAT), tf.constant(SPLITS)).numpy(),
                               2 * FLAT * np.arange(6))
