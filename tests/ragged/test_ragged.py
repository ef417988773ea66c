"""tf.RaggedTensor: constructors, ops vs per-row NumPy, gradients, eager vs tf.function."""

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.testing import check_grads

ROWS = [[1.0, 2.0, 3.0], [], [4.0, 5.0], [6.0]]
SPLITS = [0, 3, 3, 5, 6]


def rt():
    return tf.ragged.constant(ROWS)


def test_constructors_agree():
    flat = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    want = ROWS
    assert tf.RaggedTensor.from_row_splits(flat, SPLITS).to_list() == want
    assert tf.RaggedTensor.from_row_lengths(flat, [3, 0, 2, 1]).to_list() == want
    assert tf.RaggedTensor.from_value_rowids(flat, [0, 0, 0, 2, 2, 3], nrows=4).to_list() == want
    assert tf.RaggedTensor.from_row_starts(flat, [0, 3, 3, 5]).to_list() == want
    assert tf.RaggedTensor.from_row_limits(flat, [3, 3, 5, 6]).to_list() == want
    dense = [[1, 2, 0], [0, 0, 0], [4, 5, 0]]
    assert tf.RaggedTensor.from_tensor(dense, padding=0).to_list() == [[1, 2], [], [4, 5]]
    assert tf.RaggedTensor.from_tensor(dense, lengths=[1, 0, 3]).to_list() == [[1], [],
                                                                               [4, 5, 0]]
    nested = tf.RaggedTensor.from_nested_row_splits(flat, [[0, 2, 3], [0, 3, 3, 6]])
    assert nested.to_list() == [[[1, 2, 3], []], [[4, 5, 6]]]
    assert nested.ragged_rank == 2 and nested.shape.as_list() == [2, None, None]
    with pytest.raises(tf.errors.InvalidArgumentError, match="row_splits"):
        tf.RaggedTensor.from_row_splits(flat, [0, 3, 2, 6])


def test_partition_queries_and_conversions():
    r = rt()
    assert r.dtype == tf.float32 and r.shape.as_list() == [4, None]
    np.testing.assert_array_equal(r.row_lengths().numpy(), [3, 0, 2, 1])
    np.testing.assert_array_equal(r.value_rowids().numpy(), [0, 0, 0, 2, 2, 3])
    np.testing.assert_array_equal(r.bounding_shape().numpy(), [4, 3])
    assert int(r.nrows()) == 4
    dense = r.to_tensor(default_value=-1.0)
    np.testing.assert_array_equal(dense.numpy(), [[1, 2, 3], [-1, -1, -1], [4, 5, -1],
                                                  [6, -1, -1]])
    np.testing.assert_array_equal(r.to_tensor(shape=[2, 2]).numpy(), [[1, 2], [0, 0]])
    assert r.with_flat_values(r.flat_values * 0).to_list() == [[0, 0, 0], [], [0, 0], [0]]
    r3 = tf.ragged.constant([[[1, 2], [3]], [[4, 5, 6]]])
    assert r3.merge_dims(0, 1).to_list() == [[1, 2], [3], [4, 5, 6]]
    assert tf.ragged.map_flat_values(tf.negative, r3).to_list() == [[[-1, -2], [-3]],
                                                                    [[-4, -5, -6]]]
    np.testing.assert_array_equal(tf.ragged.row_splits_to_segment_ids(SPLITS).numpy(),
                                  [0, 0, 0, 2, 2, 3])
    np.testing.assert_array_equal(
        tf.ragged.segment_ids_to_row_splits([0, 0, 0, 2, 2, 3]).numpy(), SPLITS)


def _per_row(fn, rows):
    return [fn(np.array(r, np.float32)).tolist() for r in rows]


def test_elementwise_matches_numpy_per_row():
    r = rt()
    assert (r + 1).to_list() == _per_row(lambda a: a + 1, ROWS)
    assert (r * r).to_list() == _per_row(lambda a: a * a, ROWS)
    np.testing.assert_allclose(tf.exp(r).flat_values.numpy(), np.exp(np.float32(
        [1, 2, 3, 4, 5, 6])), rtol=1e-6)
    assert (r > 2.5).to_list() == _per_row(lambda a: a > 2.5, ROWS)
    col = tf.constant([[1.0], [2.0], [3.0], [4.0]])
    assert (r * col).to_list() == [[1, 2, 3], [], [12, 15], [24]]
    with pytest.raises(tf.errors.InvalidArgumentError, match="different row lengths"):
        r + tf.ragged.constant([[1.0], [2.0], [3.0], [4.0]])


@pytest.mark.parametrize("name,ref,empty", [
    ("reduce_sum", np.sum, 0.0), ("reduce_max", np.max, np.finfo(np.float32).min),
    ("reduce_min", np.min, np.finfo(np.float32).max), ("reduce_prod", np.prod, 1.0),
    ("reduce_mean", np.mean, np.nan)])
def test_reductions_match_numpy(name, ref, empty):
    r = rt()
    fn = getattr(tf, name) if hasattr(tf, name) else getattr(tf.math, name)
    rows = fn(r, axis=1).numpy()
    want = [ref(np.float32(row)) if row else empty for row in ROWS]
    np.testing.assert_allclose(rows, want, rtol=1e-6)
    cols = fn(r, axis=0).numpy()
    by_col = [[row[j] for row in ROWS if len(row) > j] for j in range(3)]
    np.testing.assert_allclose(cols, [ref(np.float32(c)) for c in by_col], rtol=1e-6)
    np.testing.assert_allclose(fn(r).numpy(), ref(np.float32([1, 2, 3, 4, 5, 6])), rtol=1e-6)


def test_reduce_inner_ragged_axes():
    r3 = tf.ragged.constant([[[1, 2], [3]], [[4, 5, 6]]])
    assert tf.reduce_sum(r3, axis=2).to_list() == [[3, 3], [15]]
    assert tf.reduce_sum(r3, axis=1).to_list() == [[4, 2], [4, 5, 6]]


def test_concat_stack_gather_mask_where_slicing():
    r = rt()
    assert tf.concat([r, r[:2]], axis=0).to_list() == ROWS + ROWS[:2]
    assert tf.concat([r, r], axis=1).to_list() == [row + row for row in ROWS]
    assert tf.ragged.stack([r[:2], r[2:]]).to_list() == [ROWS[:2], ROWS[2:]]
    assert tf.gather(r, [3, 0, 0]).to_list() == [ROWS[3], ROWS[0], ROWS[0]]
    emb = tf.constant([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]])
    ids = tf.ragged.constant([[2, 1], [0]])
    assert tf.gather(emb, ids).to_list() == [[[2, 2], [1, 1]], [[0, 0]]]
    assert tf.ragged.boolean_mask(r, [True, False, True, False]).to_list() == [ROWS[0], ROWS[2]]
    assert tf.ragged.boolean_mask(r, r > 2.5).to_list() == [[3.0], [], [4.0, 5.0], [6.0]]
    assert tf.where(r > 2.5, r, tf.zeros_like(r)).to_list() == [[0, 0, 3], [], [4, 5], [6]]
    assert r[2].numpy().tolist() == [4.0, 5.0]
    assert r[-1].numpy().tolist() == [6.0]
    assert r[1:3].to_list() == ROWS[1:3]
    assert r[::2].to_list() == ROWS[::2]
    assert r[:, :2].to_list() == [row[:2] for row in ROWS]
    assert r[:, -1:].to_list() == [row[-1:] for row in ROWS]
    assert r[0, 1].numpy() == 2.0
    assert tf.ragged.range([1, 3], [4, 5]).to_list() == [[1, 2, 3], [3, 4]]
    assert tf.cast(r, tf.int32).dtype == tf.int32


def _graph_equal(fn, *args):
    eager = fn(*args)
    traced = tf.function(fn)(*args)
    if isinstance(eager, tf.RaggedTensor):
        assert traced.to_list() == eager.to_list()
    else:
        np.testing.assert_allclose(traced.numpy(), eager.numpy())


@pytest.mark.parametrize("fn", [
    lambda r: r * 2 + 1,
    lambda r: tf.reduce_sum(r, axis=1),
    lambda r: tf.reduce_max(r, axis=0),
    lambda r: r.to_tensor(),
    lambda r: tf.concat([r, r], axis=1),
    lambda r: tf.gather(r, [2, 0]),
    lambda r: r[:, :2],
    lambda r: r[1:3],
    lambda r: tf.ragged.boolean_mask(r, r > 2.0),
    lambda r: r.row_lengths(),
])
def test_traced_matches_eager(fn):
    _graph_equal(fn, rt())


def test_input_signature_with_ragged_spec():
    spec = tf.RaggedTensorSpec([None, None], tf.float32)
    f = tf.function(lambda x: tf.reduce_sum(x, axis=1), input_signature=[spec])
    np.testing.assert_allclose(f(rt()).numpy(), [6, 0, 9, 6])
    np.testing.assert_allclose(f(tf.ragged.constant([[1.0], [2.0, 3.0]])).numpy(), [1, 5])
    assert f.experimental_get_tracing_count() == 1
    assert spec.is_compatible_with(rt())


@pytest.mark.parametrize("fn", [
    lambda v: tf.reduce_sum(tf.RaggedTensor.from_row_splits(v, SPLITS), axis=1),
    lambda v: tf.reduce_max(tf.RaggedTensor.from_row_splits(v, [0, 3, 5, 6]), axis=1),
    lambda v: tf.reduce_mean(tf.RaggedTensor.from_row_splits(v, [0, 3, 5, 6]), axis=1),
    lambda v: tf.RaggedTensor.from_row_splits(v, SPLITS).to_tensor(),
    lambda v: tf.concat([tf.RaggedTensor.from_row_splits(v, SPLITS)] * 2, axis=1).flat_values,
    lambda v: tf.gather(tf.RaggedTensor.from_row_splits(v, SPLITS), [3, 0]).flat_values,
    lambda v: tf.RaggedTensor.from_row_splits(v, SPLITS)[:, 1:].flat_values,
    lambda v: tf.reduce_prod(tf.RaggedTensor.from_row_splits(v, SPLITS), axis=0),
])
def test_gradients_match_finite_differences(fn):
    check_grads(fn, [np.array([1.0, 2.5, 3.0, 4.0, 0.5, 6.0])])


def test_io_ragged_feature():
    from tapeflow.io.parsing import serialized_example

    records = [serialized_example({"t": [1, 2, 3]}), serialized_example({"t": [4]})]
    spec = {"t": tf.io.RaggedFeature(tf.int64), "u": tf.io.RaggedFeature(tf.int64, value_key="t")}
    out = tf.io.parse_example(records, spec)
    assert out["t"].to_list() == [[1, 2, 3], [4]] and out["u"].to_list() == [[1, 2, 3], [4]]
    one = tf.io.parse_single_example(records[0], {"t": tf.io.RaggedFeature(tf.int64)})
    assert one["t"].numpy().tolist() == [1, 2, 3]
