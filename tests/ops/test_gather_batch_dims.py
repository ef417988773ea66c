"""tf.gather with batch_dims: a loop over the batch as reference, gradients against finite
differences (float64), eager vs graph with an unknown batch, and errors naming the op."""

import numpy as np
import pytest

import tapeflow as tf

rng = np.random.default_rng(8)

CASES = [  # params shape, indices shape, axis, batch_dims, index range
    ((2, 5, 3), (2, 4), 1, 1, 5),
    ((2, 3, 5, 2), (2, 4), 2, 1, 5),  # a dim between the batch and the axis
    ((2, 3, 5), (2, 3, 2), 2, 2, 5),  # two batch dims
    ((3, 6), (3, 2, 2), 1, 1, 6),  # indices of higher rank
    ((2, 5, 3), (2, 4), 1, -1, 5),  # batch_dims counted from the end of the indices
]


def _reference(params, indices, axis, b):
    """TF's definition: each batch entry gathers from its own slice of params."""
    if b < 0:
        b += indices.ndim
    if b == 0:
        return np.take(params, indices, axis=axis)
    return np.stack([_reference(p, i, axis - 1, b - 1) for p, i in zip(params, indices)])


def _case(shape, ishape, high):
    return rng.standard_normal(shape), rng.integers(0, high, size=ishape)


@pytest.mark.parametrize("shape, ishape, axis, b, high", CASES)
def test_batched_gather_matches_a_loop_over_the_batch(shape, ishape, axis, b, high):
    params, indices = _case(shape, ishape, high)
    got = tf.gather(params, indices, axis=axis, batch_dims=b).numpy()
    np.testing.assert_array_equal(got, _reference(params, indices, axis, b))


def test_axis_defaults_to_batch_dims():
    params, indices = _case((2, 5, 3), (2, 4), 5)
    np.testing.assert_array_equal(tf.gather(params, indices, batch_dims=1).numpy(),
                                  _reference(params, indices, 1, 1))


@pytest.mark.parametrize("shape, ishape, axis, b, high", CASES)
def test_batched_gather_gradient_matches_finite_differences(shape, ishape, axis, b, high):
    params, indices = _case(shape, ishape, high)
    cot = rng.standard_normal(_reference(params, indices, axis, b).shape)
    p = tf.constant(params)
    with tf.GradientTape() as tape:
        tape.watch(p)
        y = tf.reduce_sum(tf.gather(p, indices, axis=axis, batch_dims=b) ** 2 * cot)
    grad = tape.gradient(y, p).numpy()
    numeric = np.zeros_like(params)
    for j in np.ndindex(params.shape):
        step = np.zeros_like(params)
        step[j] = 1e-6
        numeric[j] = (np.sum(_reference(params + step, indices, axis, b) ** 2 * cot)
                      - np.sum(_reference(params - step, indices, axis, b) ** 2 * cot)) / 2e-6
    np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-8)


def test_batched_gather_in_a_graph_with_an_unknown_batch_equals_eager():
    params, indices = _case((4, 6, 3), (4, 2), 6)
    params = params.astype(np.float32)

    def pick(p, i):
        with tf.GradientTape() as tape:
            tape.watch(p)
            y = tf.gather(p, i, axis=1, batch_dims=1)
            loss = tf.reduce_sum(y * y)
        return y, tape.gradient(loss, p)

    graph = tf.function(pick, input_signature=[tf.TensorSpec((None, 6, 3)),
                                               tf.TensorSpec((None, 2), tf.int64)])
    for a, b in zip(graph(params, indices), pick(tf.constant(params), tf.constant(indices))):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert graph.get_concrete_function().outputs[0].shape.as_list() == [None, 2, 3]


@pytest.mark.parametrize("params, indices, kwargs, match", [
    (np.zeros((2, 5)), np.zeros((3, 1), int), {"batch_dims": 1}, "first 1 dims of params"),
    (np.zeros((2, 5)), np.full((2, 1), 5), {"batch_dims": 1}, r"indices must be in \[0, 5\)"),
    (np.zeros((2, 5)), np.full((2, 1), -1), {"batch_dims": 1}, r"indices must be in \[0, 5\)"),
    (np.zeros((2, 5)), np.zeros((2, 1), int), {"batch_dims": 2}, "need 0 <= batch_dims"),
    (np.zeros((2, 5)), np.zeros((2, 1), int), {"batch_dims": 1, "axis": 0},
     "need 0 <= batch_dims"),
])
def test_batched_gather_errors_name_the_op(params, indices, kwargs, match):
    with pytest.raises(tf.errors.InvalidArgumentError, match=match) as info:
        tf.gather(params, indices, **kwargs)
    assert "GatherV2" in str(info.value)
