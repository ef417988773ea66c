"""``tf.sparse``: SparseTensor and the ops on it (see sparse/tensor.py, sparse/ops.py)."""

from tapeflow.sparse import ctc as _ctc  # tf.nn.ctc_*
from tapeflow.sparse import nn as _nn  # tf.nn's sparse functions
from tapeflow.sparse import sequences as _sequences  # tf.edit_distance, mask, sampled_addmm
from tapeflow.sparse.extras import bincount, maximum, minimum, reset_shape, softmax, split
from tapeflow.sparse.ops import (
    add,
    concat,
    expand_dims,
    eye,
    fill_empty_rows,
    from_dense,
    map_values,
    reduce_max,
    reduce_sum,
    reorder,
    reshape,
    retain,
    segment_mean,
    segment_sqrt_n,
    segment_sum,
    slice,
    sparse_dense_matmul,
    to_dense,
    to_indicator,
    transpose,
)
from tapeflow.sparse.tensor import SparseTensor, SparseTensorSpec

matmul = sparse_dense_matmul

__all__ = ["SparseTensor", "SparseTensorSpec", "add", "bincount", "concat", "expand_dims", "eye",
           "fill_empty_rows", "from_dense", "map_values", "matmul", "maximum", "minimum",
           "reduce_max", "reduce_sum", "reorder", "reset_shape", "reshape", "retain",
           "segment_mean", "segment_sqrt_n", "segment_sum", "slice", "softmax",
           "sparse_dense_matmul", "split", "to_dense", "to_indicator", "transpose"]

from tapeflow.ops import bitwise_set_ops as _bitwise_set_ops  # noqa: E402

_bitwise_set_ops.sparse_tensor = SparseTensor  # tf.sets.* results (ops/, a layer below)
_bitwise_set_ops.sparse_reduce_sum = reduce_sum
