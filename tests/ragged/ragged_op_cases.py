"""Ragged ops that ordinary programs reach for, as one case table: run under TF 2.21 by
record_tf_ragged_ops.py (fixture fixtures/tf_ragged_ops.json) and under tapeflow by
test_ragged_ops.py. A case takes the `tf` module and returns its result as JSON (ragged
results as nested lists, errors as {"error": class name})."""

import numpy as np

ROWS = [[1.0, -2.0, 3.0], [4.0], [0.5, -0.5], []]
ROWS3 = [[[1.0, 2.0], [3.0, -4.0], [5.0, 6.0]], [[7.0, -8.0]], [[0.5, -1.0], [2.0, 1.0]]]
IDS = [[1, 2, 3], [0], [2, 2]]


def rt2(tf, dtype="float32"):
    return tf.ragged.constant(ROWS, dtype=dtype)


def rt3(tf):
    return tf.ragged.constant(ROWS3, ragged_rank=1)


def _plain(v):
    """Nested lists with bytes as str (JSON has no bytes)."""
    if isinstance(v, list):
        return [_plain(e) for e in v]
    return v.decode() if isinstance(v, bytes) else v


def as_json(tf, x):
    if isinstance(x, (list, tuple)):
        return [as_json(tf, v) for v in x]
    if isinstance(x, dict):
        return {k: as_json(tf, v) for k, v in x.items()}
    if isinstance(x, tf.RaggedTensor):
        return {"ragged": _plain(x.to_list())}
    if isinstance(x, tf.SparseTensor):
        return {"indices": x.indices.numpy().tolist(), "values": x.values.numpy().tolist(),
                "dense_shape": x.dense_shape.numpy().tolist()}
    value = x.numpy() if hasattr(x, "numpy") else np.asarray(x)
    return value.tolist()


def _f(tf, fn, *args):
    """fn traced by tf.function (ragged arguments and results cross the boundary)."""
    return tf.function(fn)(*args)


CASES = {
    # activations and softmax
    "relu": lambda tf: tf.nn.relu(rt2(tf)),
    "leaky_relu": lambda tf: tf.nn.leaky_relu(rt2(tf), alpha=0.1),
    "elu": lambda tf: tf.nn.elu(rt2(tf)),
    "softplus": lambda tf: tf.nn.softplus(rt3(tf)),
    "gelu": lambda tf: tf.nn.gelu(rt2(tf)),
    "softmax_inner_axis": lambda tf: tf.nn.softmax(rt3(tf), axis=-1),
    "softmax_rows": lambda tf: tf.nn.softmax(rt2(tf)),
    "log_softmax_rows": lambda tf: tf.nn.log_softmax(rt2(tf)),
    "softmax_rows_traced": lambda tf: _f(tf, lambda x: tf.nn.softmax(x, axis=1), rt2(tf)),
    # shape functions
    "reverse_rows": lambda tf: tf.reverse(rt2(tf), [1]),
    "reverse_outer": lambda tf: tf.reverse(rt3(tf), [0]),
    "reverse_inner": lambda tf: tf.reverse(rt3(tf), [2]),
    "reverse_both": lambda tf: tf.reverse(rt3(tf), [0, 1]),
    "reverse_traced": lambda tf: _f(tf, lambda x: tf.reverse(x, [1]), rt3(tf)),
    "expand_dims_0": lambda tf: tf.expand_dims(rt2(tf), 0),
    "expand_dims_1": lambda tf: tf.expand_dims(rt2(tf), 1),
    "expand_dims_last": lambda tf: tf.expand_dims(rt3(tf), -1),
    "squeeze_inner": lambda tf: tf.squeeze(tf.expand_dims(rt3(tf), -1), [-1]),
    "squeeze_ragged_axis": lambda tf: tf.squeeze(rt2(tf), [1]),
    "add_n": lambda tf: tf.add_n([rt2(tf), rt2(tf), rt2(tf)]),
    "tile_rows": lambda tf: tf.tile(tf.ragged.constant(IDS), [2, 1]),
    "tile_both": lambda tf: tf.tile(tf.ragged.constant(IDS), [1, 2]),
    # indexing
    "getitem_ellipsis": lambda tf: rt3(tf)[..., 0],
    "getitem_row_then_entry": lambda tf: rt3(tf)[0, 1],
    "getitem_inner_uniform": lambda tf: rt3(tf)[:, :, 1],
    "getitem_row_slice_step": lambda tf: rt2(tf)[::2],
    "getitem_negative_row": lambda tf: rt2(tf)[-2],
    "getitem_per_row_slice": lambda tf: rt2(tf)[1:, :-1],
    "getitem_int_on_ragged_dim": lambda tf: rt2(tf)[:, 0],
    "getitem_traced": lambda tf: _f(tf, lambda x: x[1:, 1:], rt2(tf)),
    # segment reductions of ragged data (rows of a segment combine position by position)
    "unsorted_segment_sum": lambda tf: tf.math.unsorted_segment_sum(rt2(tf), [1, 0, 1, 0], 3),
    "unsorted_segment_max": lambda tf: tf.math.unsorted_segment_max(rt2(tf), [1, 0, 1, 0], 2),
    "unsorted_segment_min": lambda tf: tf.math.unsorted_segment_min(rt3(tf), [0, 0, 1], 2),
    "unsorted_segment_mean": lambda tf: tf.math.unsorted_segment_mean(rt2(tf), [1, 0, 1, 1],
                                                                      2),
    "unsorted_segment_sqrt_n": lambda tf: tf.math.unsorted_segment_sqrt_n(
        rt2(tf), [1, 0, 1, 1], 2),
    "unsorted_segment_prod": lambda tf: tf.math.unsorted_segment_prod(rt2(tf), [0, 0, 1, 0],
                                                                      2),
    "segment_sum": lambda tf: tf.math.segment_sum(rt2(tf), [0, 0, 1, 1]),
    "reduce_keepdims_rows": lambda tf: tf.reduce_sum(rt2(tf), axis=1, keepdims=True),
    "reduce_keepdims_inner": lambda tf: tf.reduce_max(rt3(tf), axis=-1, keepdims=True),
    "reduce_keepdims_outer": lambda tf: tf.reduce_mean(rt2(tf), axis=0, keepdims=True),
    "reduce_keepdims_ragged_axis": lambda tf: tf.reduce_sum(rt3(tf), axis=1, keepdims=True),
    "reduce_keepdims_all": lambda tf: tf.reduce_sum(rt2(tf), keepdims=True),
    # more of TF's ragged dispatch
    "newaxis": lambda tf: rt2(tf)[:, tf.newaxis],
    "newaxis_inner": lambda tf: rt3(tf)[1:, :, None],
    "one_hot": lambda tf: tf.one_hot(tf.ragged.constant(IDS), 4),
    "bincount_rows": lambda tf: tf.math.bincount(tf.ragged.constant(IDS), axis=-1),
    "bincount_rows_binary_minlength": lambda tf: tf.math.bincount(
        tf.ragged.constant(IDS), axis=-1, minlength=6, binary_output=True),
    "bincount_all": lambda tf: tf.math.bincount(tf.ragged.constant(IDS)),
    "clip_by_value": lambda tf: tf.clip_by_value(rt2(tf), -1.0, 1.0),
    "gather_nested_indices": lambda tf: tf.gather(rt2(tf), [[0, 1], [2, 0]]),
    "gather_nd": lambda tf: tf.gather_nd(rt2(tf), [[0, 1], [2, 0]]),
    "gather_nd_rows": lambda tf: tf.gather_nd(rt3(tf), [[0, 2], [2, 1]]),
    "dynamic_partition": lambda tf: tf.dynamic_partition(rt2(tf), [0, 1, 0, 1], 2),
    "stack_dynamic_partitions": lambda tf: tf.ragged.stack_dynamic_partitions(
        tf.constant([1, 2, 3, 4]), tf.constant([0, 1, 0, 2]), 4),
    "stack_axis_1": lambda tf: tf.ragged.stack([tf.ragged.constant(IDS),
                                                tf.ragged.constant(IDS) * 2], axis=1),
    "reduce_variance_rows": lambda tf: tf.math.reduce_variance(rt2(tf), axis=1),
    "reduce_std_rows": lambda tf: tf.math.reduce_std(rt2(tf), axis=-1),
    "reduce_logsumexp_rows": lambda tf: tf.reduce_logsumexp(rt2(tf), axis=1),
    "cross": lambda tf: tf.ragged.cross([tf.ragged.constant([["a", "b"], ["c"], []]),
                                         tf.constant([["x"], ["y"], ["z"]])]),
    "cross_ints_traced": lambda tf: _f(tf, lambda a, b: tf.ragged.cross([a, b]),
                                       tf.ragged.constant([[1, 2], [3], [4]], tf.int64),
                                       tf.ragged.constant([[7], [8, 9], []], tf.int64)),
    # where, conversions, higher-order functions
    "where_coordinates": lambda tf: tf.where(rt2(tf) > 0.0),
    "to_sparse_traced": lambda tf: _f(tf, lambda x: x.to_sparse(), rt3(tf)),
    "from_sparse_traced": lambda tf: _f(
        tf, lambda s: tf.RaggedTensor.from_sparse(s),
        tf.SparseTensor([[0, 0], [0, 1], [2, 0]], [1.0, 2.0, 3.0], [4, 3])),
    "from_sparse_not_right_ragged": lambda tf: tf.RaggedTensor.from_sparse(
        tf.SparseTensor([[0, 0], [0, 2], [2, 1]], [1.0, 2.0, 3.0], [4, 3])),
    "map_flat_values": lambda tf: tf.ragged.map_flat_values(
        lambda v, w: v * w + 1.0, rt2(tf), rt2(tf)),
    "map_fn_ragged_out": lambda tf: _f(tf, lambda x: tf.map_fn(
        lambda r: r[::-1] * 2, x,
        fn_output_signature=tf.RaggedTensorSpec([None], tf.int32, 0)),
        tf.ragged.constant(IDS)),
    "map_fn_ragged_run_time_rows": lambda tf: tf.function(
        lambda x: tf.map_fn(lambda r: r[::-1] * 2, x,
                            fn_output_signature=tf.RaggedTensorSpec([None], tf.int32, 0)),
        input_signature=[tf.RaggedTensorSpec([None, None], tf.int32, 1)])(
        tf.ragged.constant(IDS)),
    "map_fn_rows_from_dense": lambda tf: tf.function(
        lambda n: tf.map_fn(lambda k: tf.range(k), n,
                            fn_output_signature=tf.RaggedTensorSpec([None], tf.int64, 0)),
        input_signature=[tf.TensorSpec([None], tf.int64)])(tf.constant([3, 0, 2], tf.int64)),
    "map_fn_dense_out": lambda tf: _f(tf, lambda x: tf.map_fn(
        tf.reduce_sum, x, fn_output_signature=tf.float32), rt2(tf)),
    "dataset_map_ragged_batch": lambda tf: list(
        tf.data.Dataset.from_tensor_slices(tf.ragged.constant(IDS)).map(lambda r: r + 1)
        .ragged_batch(2)),
    "dataset_batch_of_ragged_batches": lambda tf: list(
        tf.data.Dataset.from_tensor_slices(tf.ragged.constant(IDS)).ragged_batch(2)
        .map(lambda r: tf.reduce_sum(r, axis=1))),
}


def run(tf, name):
    try:
        return as_json(tf, CASES[name](tf))
    except Exception as e:  # noqa: BLE001 - the error class is the recorded answer
        return {"error": type(e).__name__}
