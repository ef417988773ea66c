"""``tf.sparse``: ops on SparseTensors, composed from dense ops on their components.

Values flow through differentiable dense ops (gather, segment sums, boolean masks), so every
op that TensorFlow differentiates has gradients with respect to the values (and the dense
operand of ``sparse_dense_matmul``). The index bookkeeping (sorting, merging, reshaping) runs
in the small index kernels of primitives.py.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework import errors
from tapeflow.framework.composite import dispatch_for_api
from tapeflow.framework.constant import convert_to_tensor
from tapeflow.framework.dispatch import apply
from tapeflow.framework.tensor import Tensor
from tapeflow.ops import (
    array_ops,
    gather_ops,
    indexing_ops,
    math_ops,
    reduce_ops,
    scatter_ops,
    segment_ops,
)
from tapeflow.sparse import primitives as prim
from tapeflow.sparse.tensor import SparseTensor

_I64 = _dtypes.int64


def _t(x: Any, dtype: Any = None) -> Tensor:
    return x if isinstance(x, Tensor) else convert_to_tensor(x, dtype)


def _check_sparse(x: Any, what: str) -> SparseTensor:
    if not isinstance(x, SparseTensor):
        raise TypeError(f"{what}: expected a SparseTensor, got {type(x).__name__}")
    return x


# --- conversions ------------------------------------------------------------------------------


def from_dense(tensor: Any, name: str | None = None) -> SparseTensor:
    """The non-zero entries of a dense tensor (b'' counts as zero for strings)."""
    t = _t(tensor)
    zero = b"" if t.dtype is _dtypes.string else 0
    indices = math_ops.where(math_ops.not_equal(t, convert_to_tensor(zero, t.dtype)))
    return SparseTensor(indices, gather_ops.gather_nd(t, indices),
                        array_ops.shape(t, out_type=_I64))


def to_dense(sp_input: SparseTensor, default_value: Any = None, validate_indices: bool = True,
             name: str | None = None) -> Tensor:
    """Scatter the values into a dense tensor filled with `default_value` (0 / b'')."""
    sp = _check_sparse(sp_input, "tf.sparse.to_dense")
    if default_value is None:
        default_value = b"" if sp.dtype is _dtypes.string else 0
    default = _t(default_value, sp.dtype)
    return apply(prim.to_dense_kernel, sp.indices, sp.values, sp.dense_shape, default)


def to_indicator(sp_input: SparseTensor, vocab_size: int, name: str | None = None) -> Tensor:
    """Dense bool [..., vocab_size]: True at each (row..., value) of an int SparseTensor."""
    sp = _check_sparse(sp_input, "tf.sparse.to_indicator")
    ids = math_ops.cast(sp.values, _I64)
    idx = array_ops.concat([sp.indices[:, :-1], array_ops.expand_dims(ids, 1)], 1)
    shape = array_ops.concat([sp.dense_shape[:-1], _t([vocab_size], _I64)], 0)
    ones = math_ops.cast(array_ops.ones_like(ids), _dtypes.int32)
    return math_ops.greater(scatter_ops.scatter_nd(idx, ones, shape), 0)


# --- structure --------------------------------------------------------------------------------


def reorder(sp_input: SparseTensor, name: str | None = None) -> SparseTensor:
    """Indices in row-major (canonical) order."""
    sp = _check_sparse(sp_input, "tf.sparse.reorder")
    order = apply(prim.row_major_order, sp.indices, sp.dense_shape)
    return SparseTensor(gather_ops.gather(sp.indices, order), gather_ops.gather(sp.values, order),
                        sp.dense_shape)


def reshape(sp_input: SparseTensor, shape: Any, name: str | None = None) -> SparseTensor:
    """The same values in a tensor of a new dense shape (one dim may be -1)."""
    sp = _check_sparse(sp_input, "tf.sparse.reshape")
    indices, new_shape = apply(prim.reshape_indices, sp.indices, sp.dense_shape,
                               _t(shape, _I64))
    return SparseTensor(indices, sp.values, new_shape)


def retain(sp_input: SparseTensor, to_retain: Any) -> SparseTensor:
    """Keep the entries where the bool vector `to_retain` is True."""
    sp = _check_sparse(sp_input, "tf.sparse.retain")
    keep = _t(to_retain)
    return SparseTensor(indexing_ops.boolean_mask(sp.indices, keep),
                        indexing_ops.boolean_mask(sp.values, keep), sp.dense_shape)


def slice(sp_input: SparseTensor, start: Any, size: Any,  # noqa: A001
          name: str | None = None) -> SparseTensor:
    """The entries inside the box [start, start + size), re-indexed from `start`."""
    sp = _check_sparse(sp_input, "tf.sparse.slice")
    lo = _t(start, _I64)
    hi = lo + _t(size, _I64)
    inside = reduce_ops.reduce_all(math_ops.logical_and(
        math_ops.greater_equal(sp.indices, lo), math_ops.less(sp.indices, hi)), axis=1)
    shape = math_ops.maximum(math_ops.minimum(hi, sp.dense_shape) - lo, array_ops.zeros_like(lo))
    return SparseTensor(indexing_ops.boolean_mask(sp.indices, inside) - lo,
                        indexing_ops.boolean_mask(sp.values, inside), shape)


def concat(axis: int, sp_inputs: list, expand_nonconcat_dims: bool = False,
           name: str | None = None) -> SparseTensor:
    """Concatenate SparseTensors along `axis` (other dims must match unless expanded)."""
    sps = [_check_sparse(s, "tf.sparse.concat") for s in sp_inputs]
    rank = sps[0].indices.shape[1]
    if rank is None:
        rank = int(sps[0].dense_shape.shape[0])
    axis = axis + rank if axis < 0 else axis
    hot = _t(np.eye(rank, dtype=np.int64)[axis])
    offset = None
    indices = []
    for sp in sps:
        indices.append(sp.indices if offset is None else sp.indices + offset * hot)
        step = sp.dense_shape[axis]
        offset = step if offset is None else offset + step
    shapes = array_ops.stack([s.dense_shape for s in sps])
    if not expand_nonconcat_dims:
        _check_concat_shapes(sps, axis)
    shape = reduce_ops.reduce_max(shapes, axis=0) * (1 - hot) + offset * hot
    out = SparseTensor(array_ops.concat(indices, 0),
                       array_ops.concat([s.values for s in sps], 0), shape)
    return reorder(out)


def _check_concat_shapes(sps: list, axis: int) -> None:
    from tapeflow.framework.tensor import EagerTensor

    shapes = [s.dense_shape.numpy() for s in sps if isinstance(s.dense_shape, EagerTensor)]
    if len(shapes) == len(sps):
        others = {tuple(np.delete(s, axis)) for s in shapes}
        if len(others) > 1:
            raise errors.InvalidArgumentError(
                f"tf.sparse.concat: dims other than axis {axis} must match, got shapes "
                f"{[s.tolist() for s in shapes]} (pass expand_nonconcat_dims=True)\n"
                f"{errors.user_line()}")


def add(a: Any, b: Any, threshold: Any = 0, name: str | None = None) -> Any:
    """Sparse + sparse -> sparse (entries summed); sparse + dense -> dense."""
    if not isinstance(a, SparseTensor):
        a, b = b, a
    if not isinstance(b, SparseTensor):
        dense = _t(b, a.dtype)
        return scatter_ops.tensor_scatter_nd_add(dense, a.indices, a.values)
    indices, ids, n = apply(prim.union_indices, a.indices, b.indices, a.dense_shape)
    values = segment_ops.unsorted_segment_sum(array_ops.concat([a.values, b.values], 0), ids, n)
    out = SparseTensor(indices, values, a.dense_shape)
    if _nonzero(threshold):  # TF thresholds only the entries that were summed
        count = segment_ops.unsorted_segment_sum(array_ops.ones_like(ids), ids, n)
        keep = math_ops.logical_or(
            math_ops.greater_equal(math_ops.abs(values), _t(threshold, values.dtype)),
            math_ops.equal(count, 1))
        out = retain(out, keep)
    return out


def _nonzero(threshold: Any) -> bool:
    return isinstance(threshold, Tensor) or threshold != 0


def map_values(op: Any, *args: Any, **kwargs: Any) -> SparseTensor:
    """Apply `op` to the values of the SparseTensor arguments (same indices)."""
    template = next(a for a in list(args) + list(kwargs.values()) if isinstance(a, SparseTensor))

    def values(x: Any) -> Any:
        return x.values if isinstance(x, SparseTensor) else x

    out = op(*[values(a) for a in args], **{k: values(v) for k, v in kwargs.items()})
    return template.with_values(out)


def transpose(sp_input: SparseTensor, perm: Any = None, name: str | None = None) -> SparseTensor:
    sp = _check_sparse(sp_input, "tf.sparse.transpose")
    rank = sp.indices.shape[1]
    perm = list(range(rank))[::-1] if perm is None else list(perm)
    out = SparseTensor(gather_ops.gather(sp.indices, perm, axis=1), sp.values,
                       gather_ops.gather(sp.dense_shape, perm))
    return reorder(out)


def expand_dims(sp_input: SparseTensor, axis: int = -1, name: str | None = None) -> SparseTensor:
    sp = _check_sparse(sp_input, "tf.sparse.expand_dims")
    rank = sp.indices.shape[1]
    axis = axis + rank + 1 if axis < 0 else axis
    zeros = array_ops.zeros_like(sp.indices[:, :1])
    indices = array_ops.concat([sp.indices[:, :axis], zeros, sp.indices[:, axis:]], 1)
    shape = array_ops.concat([sp.dense_shape[:axis], _t([1], _I64), sp.dense_shape[axis:]], 0)
    return SparseTensor(indices, sp.values, shape)


def eye(num_rows: int, num_columns: int | None = None, dtype: Any = _dtypes.float32,
        name: str | None = None) -> SparseTensor:
    cols = num_rows if num_columns is None else num_columns
    n = min(num_rows, cols)
    idx = np.stack([np.arange(n), np.arange(n)], 1)
    return SparseTensor(idx, np.ones(n, _dtypes.as_dtype(dtype)._np), [num_rows, cols])


def fill_empty_rows(sp_input: SparseTensor, default_value: Any,
                    name: str | None = None) -> tuple[SparseTensor, Tensor]:
    """Add (row, 0, ...) = default_value for each empty row; also the empty-row indicator."""
    sp = _check_sparse(sp_input, "tf.sparse.fill_empty_rows")
    nrows = sp.dense_shape[0]
    counts = segment_ops.unsorted_segment_sum(array_ops.ones_like(sp.indices[:, 0]),
                                              sp.indices[:, 0], nrows)
    empty = math_ops.equal(counts, 0)
    rows = array_ops.reshape(math_ops.where(empty), [-1])
    rank = sp.indices.shape[1]
    new_idx = array_ops.concat([array_ops.expand_dims(rows, 1),
                                array_ops.zeros([array_ops.shape(rows)[0], rank - 1], _I64)], 1)
    fill = array_ops.fill(array_ops.shape(rows), _t(default_value, sp.dtype))
    out = SparseTensor(array_ops.concat([sp.indices, new_idx], 0),
                       array_ops.concat([sp.values, fill], 0), sp.dense_shape)
    return reorder(out), empty


# --- reductions and products ------------------------------------------------------------------


def _reduce(kind: str, sp: SparseTensor, axis: Any, keepdims: bool) -> Tensor:
    """Reduce the stored values by the kept dims (implicit zeros are not values, as in TF)."""
    dense_reduce = {"sum": reduce_ops.reduce_sum, "max": reduce_ops.reduce_max}[kind]
    if axis is None:
        out = dense_reduce(sp.values)
        if keepdims:
            out = array_ops.reshape(out, array_ops.ones_like(sp.dense_shape))
        return out
    rank = sp.indices.shape[1]
    axes = [axis] if isinstance(axis, int) else list(axis)
    axes = sorted({a + rank if a < 0 else a for a in axes})
    kept = [d for d in range(rank) if d not in axes]
    ids, out_shape = apply(prim.linear_ids, sp.indices, sp.dense_shape, kept=tuple(kept))
    n = reduce_ops.reduce_prod(out_shape)
    seg = {"sum": segment_ops._segment_sum, "max": segment_ops._segment_max}[kind]
    flat = apply(seg, sp.values, ids, n)
    if kind == "max":  # no stored value: TF's sparse max gives 0
        counts = segment_ops.unsorted_segment_sum(array_ops.ones_like(ids), ids, n)
        flat = math_ops.where(math_ops.greater(counts, 0), flat, array_ops.zeros_like(flat))
    if keepdims:
        ones = _t(np.eye(rank, dtype=np.int64)[axes].sum(0))
        out_shape = sp.dense_shape * (1 - ones) + ones
    return array_ops.reshape(flat, out_shape)


def reduce_sum(sp_input: SparseTensor, axis: Any = None, keepdims: Any = None,
               output_is_sparse: bool = False, name: str | None = None) -> Any:
    out = _reduce("sum", _check_sparse(sp_input, "tf.sparse.reduce_sum"), axis, bool(keepdims))
    return from_dense(out) if output_is_sparse else out


def reduce_max(sp_input: SparseTensor, axis: Any = None, keepdims: Any = None,
               output_is_sparse: bool = False, name: str | None = None) -> Any:
    out = _reduce("max", _check_sparse(sp_input, "tf.sparse.reduce_max"), axis, bool(keepdims))
    return from_dense(out) if output_is_sparse else out


def sparse_dense_matmul(sp_a: Any, b: Any, adjoint_a: bool = False, adjoint_b: bool = False,
                        name: str | None = None) -> Tensor:
    """A (sparse, 2-D) @ B (dense): gather B's rows, scale by the values, sum per row of A."""
    if not isinstance(sp_a, SparseTensor):  # dense @ sparse: (B^T @ A^T)^T
        return array_ops.transpose(sparse_dense_matmul(
            b, array_ops.transpose(_t(sp_a)), adjoint_a=not adjoint_b, adjoint_b=False))
    dense = _t(b, sp_a.dtype)
    if adjoint_b:
        dense = array_ops.transpose(dense)
    rows, cols = sp_a.indices[:, 0], sp_a.indices[:, 1]
    nrows = sp_a.dense_shape[0]
    if adjoint_a:
        rows, cols, nrows = cols, rows, sp_a.dense_shape[1]
    picked = gather_ops.gather(dense, cols) * array_ops.expand_dims(sp_a.values, 1)
    return segment_ops.unsorted_segment_sum(picked, rows, nrows)


def segment_sum(data: Any, indices: Any, segment_ids: Any, num_segments: Any = None,
                name: str | None = None) -> Tensor:
    """Segment sum over the rows of `data` picked by `indices`."""
    rows = gather_ops.gather(_t(data), _t(indices))
    if num_segments is None:
        return segment_ops.segment_sum(rows, segment_ids)
    return segment_ops.unsorted_segment_sum(rows, segment_ids, num_segments)


def segment_mean(data: Any, indices: Any, segment_ids: Any, num_segments: Any = None,
                 name: str | None = None) -> Tensor:
    rows = gather_ops.gather(_t(data), _t(indices))
    if num_segments is None:
        return segment_ops.segment_mean(rows, segment_ids)
    return segment_ops.unsorted_segment_mean(rows, segment_ids, num_segments)


def segment_sqrt_n(data: Any, indices: Any, segment_ids: Any, num_segments: Any = None,
                   name: str | None = None) -> Tensor:
    rows = gather_ops.gather(_t(data), _t(indices))
    if num_segments is None:
        ids = _t(segment_ids)
        num_segments = reduce_ops.reduce_max(ids) + 1
    return segment_ops.unsorted_segment_sqrt_n(rows, segment_ids, num_segments)


# --- elementwise ------------------------------------------------------------------------------

def elementwise(op: Any, inputs: tuple, attrs: dict) -> Any:
    """As TensorFlow: unary ops on the values; sparse + sparse -> sparse, sparse + dense ->
    dense, sparse * dense and sparse / dense at the stored entries. Other binary ops raise."""
    if not op.elementwise:
        return NotImplemented
    if len(inputs) == 1:
        return inputs[0].with_values(apply(op, inputs[0].values, **attrs))
    a, b = inputs
    if op is math_ops._add:
        return add(a, b)
    sp, other = (a, b) if isinstance(a, SparseTensor) else (b, a)
    if isinstance(other, SparseTensor) or op not in (math_ops._mul, math_ops._div) or (
            op is math_ops._div and sp is b):
        raise TypeError(f"{op.name} is not defined between these SparseTensor operands "
                        f"(TensorFlow has sparse + sparse/dense, sparse * dense and "
                        f"sparse / dense)")
    other = _t(other, sp.dtype)
    if other.shape.rank == 0:
        picked = other
    else:
        full = array_ops.broadcast_to(other, sp.dense_shape)
        picked = gather_ops.gather_nd(full, sp.indices)
    args = (sp.values, picked) if sp is a else (picked, sp.values)
    return sp.with_values(apply(op, *args, **attrs))


def _install_operators() -> None:
    """TensorFlow's SparseTensor operators: * and / by dense, + (sparse add), -x, abs."""
    for name in ("__mul__", "__rmul__", "__add__", "__radd__", "__neg__", "__abs__"):
        setattr(SparseTensor, name, getattr(Tensor, name))


_install_operators()


def truediv(x: Any, y: Any, name: str | None = None) -> SparseTensor:
    """sparse / dense at the stored entries."""
    return apply(math_ops._div, x, y)


dispatch_for_api(math_ops.truediv, SparseTensor)(truediv)
dispatch_for_api(math_ops.divide, SparseTensor)(truediv)
dispatch_for_api(math_ops.multiply, SparseTensor)(lambda x, y, name=None: apply(math_ops._mul,
                                                                                 x, y))
SparseTensor.__truediv__ = truediv
