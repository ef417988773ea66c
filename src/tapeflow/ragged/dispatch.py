"""What TensorFlow ops do with RaggedTensor arguments.

Elementwise primitives run on the flat values (``elementwise``, called from ``dispatch.apply``);
reductions, concat/stack, gather, boolean_mask, where and cast are registered on the public
functions with ``dispatch_for_api``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework import errors
from tapeflow.framework.composite import dispatch_for_api
from tapeflow.framework.constant import convert_to_tensor
from tapeflow.framework.dispatch import apply
from tapeflow.framework.tensor import EagerTensor, Tensor
from tapeflow.ops import (
    array_ops,
    creation_ops,
    gather_ops,
    indexing_ops,
    math_ops,
    reduce_ops,
    segment_ops,
)
from tapeflow.ragged import primitives as prim
from tapeflow.ragged.indexing import take_rows
from tapeflow.ragged.tensor import RaggedTensor, _lengths_to_splits

# --- elementwise ----------------------------------------------------------------------------


def _same_splits(a: RaggedTensor, b: RaggedTensor, op_name: str) -> None:
    if a.ragged_rank != b.ragged_rank:
        raise errors.InvalidArgumentError(
            f"{op_name}: ragged operands have ragged_rank {a.ragged_rank} and {b.ragged_rank}"
            f"\n{errors.user_line()}")
    for sa, sb in zip(a.nested_row_splits, b.nested_row_splits):
        if isinstance(sa, EagerTensor) and isinstance(sb, EagerTensor) and (
                sa._value.shape != sb._value.shape or np.any(sa._value != sb._value)):
            raise errors.InvalidArgumentError(
                f"{op_name}: ragged operands have different row lengths ({a.shape} vs "
                f"{b.shape})\n{errors.user_line()}")


def _dense_on_values(rt: RaggedTensor, x: Any, op_name: str) -> Any:
    """A dense operand as seen by the flat values (broadcasting over rows)."""
    if not isinstance(x, Tensor) and not hasattr(x, "_as_tensor"):
        if isinstance(x, (int, float, bool, np.generic)):
            return x
        x = convert_to_tensor(x)
    rank = x.shape.rank
    flat_rank = rt.flat_values.shape.rank
    if rank is not None and flat_rank is not None and rank <= flat_rank - 1:
        return x  # broadcasts over the inner (uniform) dims only
    if rt.ragged_rank == 1 and rank == rt.shape.rank and x.shape[1] == 1:
        rows = x[:, 0]
        if x.shape[0] == 1:
            return rows
        return gather_ops.gather(rows, rt.value_rowids())
    raise errors.InvalidArgumentError(
        f"{op_name}: cannot broadcast a dense operand of shape {x.shape} against a "
        f"RaggedTensor of shape {rt.shape}\n{errors.user_line()}")


def elementwise(op: Any, inputs: tuple, attrs: dict) -> Any:
    if not op.elementwise:
        return NotImplemented
    first = next(x for x in inputs if isinstance(x, RaggedTensor))
    args = []
    for x in inputs:
        if isinstance(x, RaggedTensor):
            _same_splits(first, x, op.name)
            args.append(x.flat_values)
        else:
            args.append(_dense_on_values(first, x, op.name))
    return first.with_flat_values(apply(op, *args, **attrs))


# --- reductions -----------------------------------------------------------------------------

_SEGMENT = {"sum": segment_ops._segment_sum, "max": segment_ops._segment_max,
            "min": segment_ops._segment_min, "prod": segment_ops._segment_prod}
_DENSE = {"sum": reduce_ops.reduce_sum, "max": reduce_ops.reduce_max,
          "min": reduce_ops.reduce_min, "prod": reduce_ops.reduce_prod,
          "mean": reduce_ops.reduce_mean, "any": reduce_ops.reduce_any,
          "all": reduce_ops.reduce_all}


def _segment_reduce(kind: str, values: Tensor, ids: Tensor, num: Tensor) -> Tensor:
    if kind == "mean":
        total = apply(segment_ops._segment_sum, values, ids, num)
        ones = math_ops.cast(array_ops.ones_like(ids), values.dtype)
        count = apply(segment_ops._segment_sum, ones, ids, num)
        for _ in range((values.shape.rank or 1) - 1):
            count = array_ops.expand_dims(count, -1)
        return total / count
    if kind in ("any", "all"):
        as_int = math_ops.cast(values, _dtypes.int32)
        out = apply(_SEGMENT["max" if kind == "any" else "min"], as_int, ids, num)
        return math_ops.cast(out, _dtypes.bool)
    return apply(_SEGMENT[kind], values, ids, num)


def _reduce_one(kind: str, rt: Any, axis: int) -> Any:
    if not isinstance(rt, RaggedTensor):
        return _DENSE[kind](rt, axis=axis)
    if axis >= 2:
        return rt.with_values(_reduce_one(kind, rt.values, axis - 1))
    if rt.ragged_rank == 1:
        if axis == 1:
            return _segment_reduce(kind, rt.values, rt.value_rowids(), rt.nrows())
        positions = apply(prim.position_kernel, rt.row_splits)
        longest = reduce_ops.reduce_max(array_ops.concat(
            [positions + 1, array_ops.zeros([1], positions.dtype)], 0))
        return _segment_reduce(kind, rt.values, positions, longest)
    if axis == 1 and rt.ragged_rank == 2:
        inner = rt.values
        outer_ids = gather_ops.gather(rt.value_rowids(), inner.value_rowids())
        positions = apply(prim.position_kernel, inner.row_splits)
        lengths = inner.row_lengths()
        longest = apply(segment_ops._segment_max, array_ops.concat(
            [lengths, array_ops.zeros([1], lengths.dtype)], 0),
            array_ops.concat([rt.value_rowids(), array_ops.reshape(rt.nrows(), [1])], 0),
            rt.nrows() + 1)[:-1]
        splits = _lengths_to_splits(longest)
        keys = gather_ops.gather(splits[:-1], outer_ids) + positions
        out = _segment_reduce(kind, inner.values, keys, splits[-1])
        return RaggedTensor.from_row_splits(out, splits, validate=False)
    raise NotImplementedError(f"reduce_{kind} over axis {axis} of a RaggedTensor with "
                              f"ragged_rank {rt.ragged_rank}")


def _reduce(kind: str, rt: RaggedTensor, axis: Any, keepdims: bool) -> Any:
    rank = rt.shape.rank
    if axis is None:
        total = _DENSE[kind](rt.flat_values)
        return array_ops.reshape(total, [1] * rank) if keepdims else total
    axes = [axis] if isinstance(axis, int) else [int(a) for a in axis]
    axes = sorted({a + rank if a < 0 else a for a in axes}, reverse=True)
    out: Any = rt
    for a in axes:
        out = _reduce_one(kind, out, a)
    if keepdims:  # the reduced dims back as size 1, in increasing order (TF's result)
        import tapeflow  # the public expand_dims: its ragged dispatch

        for a in sorted(axes):
            out = tapeflow.expand_dims(out, a)
    return out


def _register_reduction(api: Any, kind: str) -> None:
    @dispatch_for_api(api, RaggedTensor)
    def handler(input_tensor: Any, axis: Any = None, keepdims: bool = False,
                name: str | None = None, **kwargs: Any) -> Any:
        return _reduce(kind, input_tensor, axis, keepdims)


for _api, _kind in [(reduce_ops.reduce_sum, "sum"), (reduce_ops.reduce_max, "max"),
                    (reduce_ops.reduce_min, "min"), (reduce_ops.reduce_prod, "prod"),
                    (reduce_ops.reduce_mean, "mean"), (reduce_ops.reduce_any, "any"),
                    (reduce_ops.reduce_all, "all")]:
    _register_reduction(_api, _kind)


# --- concat / stack -------------------------------------------------------------------------


def as_ragged(x: Any, ragged_rank: int = 1, splits_dtype: Any = _dtypes.int64) -> RaggedTensor:
    if isinstance(x, RaggedTensor):
        return x
    t = x if isinstance(x, Tensor) else convert_to_tensor(x)
    return RaggedTensor.from_tensor(t, ragged_rank=ragged_rank, row_splits_dtype=splits_dtype)


def _nvals(values: Any) -> Tensor:
    if isinstance(values, RaggedTensor):
        return values.nrows()
    return array_ops.shape(values, out_type=_dtypes.int64)[0]


def concat(values: list, axis: int = 0) -> RaggedTensor:
    rts = [as_ragged(v) for v in values]
    rank = rts[0].shape.rank
    axis = axis + rank if axis < 0 else axis
    if axis == 0:
        return _concat_rows(rts)
    if axis == 1 and all(r.ragged_rank == 1 for r in rts):
        n = len(rts)
        keys = [r.value_rowids() * n + i for i, r in enumerate(rts)]
        order = _stable_argsort(array_ops.concat(keys, 0))
        values_cat = array_ops.concat([r.values for r in rts], 0)
        lengths = rts[0].row_lengths()
        for r in rts[1:]:
            lengths = lengths + r.row_lengths()
        return RaggedTensor.from_row_lengths(gather_ops.gather(values_cat, order), lengths,
                                             validate=False)
    if axis > 1:
        return rts[0].with_values(concat([r.values for r in rts], axis - 1)) if all(
            isinstance(r.values, RaggedTensor) for r in rts) else _inner_concat(rts, axis)
    raise NotImplementedError(f"tf.concat of RaggedTensors on axis {axis}")


def _inner_concat(rts: list, axis: int) -> RaggedTensor:
    return rts[0].with_values(array_ops.concat([r.values for r in rts], axis - 1))


def _stable_argsort(keys: Tensor) -> Tensor:
    return array_ops.argsort(keys, stable=True)


def _concat_rows(rts: list) -> RaggedTensor:
    splits, offset = [rts[0].row_splits], None
    for prev, r in zip(rts, rts[1:]):
        step = math_ops.cast(_nvals(prev.values), r.row_splits.dtype)
        offset = step if offset is None else offset + step
        splits.append(r.row_splits[1:] + offset)
    values = [r.values for r in rts]
    if isinstance(values[0], RaggedTensor):
        merged = _concat_rows(values)
    else:
        merged = array_ops.concat(values, 0)
    return RaggedTensor.from_row_splits(merged, array_ops.concat(splits, 0), validate=False)


def stack(values: list, axis: int = 0) -> RaggedTensor:
    if axis == 1:  # row b of the result holds row b of every input, in input order
        rts = [as_ragged(v) for v in values]
        n = math_ops.cast(rts[0].nrows(), _dtypes.int64)
        order = array_ops.reshape(array_ops.transpose(array_ops.reshape(
            creation_ops.range_(0, n * len(rts), dtype=_dtypes.int64), [len(rts), -1])), [-1])
        return RaggedTensor.from_uniform_row_length(take_rows(_concat_rows(rts), order),
                                                    len(rts))
    if axis != 0:
        raise NotImplementedError("tf.ragged.stack on an axis other than 0 or 1")
    if not any(isinstance(v, RaggedTensor) for v in values):  # dense rows of any length
        dense = [v if isinstance(v, Tensor) else convert_to_tensor(v) for v in values]
        lengths = array_ops.stack([array_ops.shape(v, out_type=_dtypes.int64)[0] for v in dense])
        return RaggedTensor.from_row_lengths(array_ops.concat(dense, 0), lengths, validate=False)
    rts = [as_ragged(v) for v in values]
    lengths = array_ops.stack([math_ops.cast(r.nrows(), _dtypes.int64) for r in rts])
    return RaggedTensor.from_row_lengths(_concat_rows(rts), lengths, validate=False)


@dispatch_for_api(array_ops.concat, RaggedTensor)
def _concat_api(values: list, axis: int, name: str | None = None) -> RaggedTensor:
    return concat(values, axis)


@dispatch_for_api(array_ops.stack, RaggedTensor)
def _stack_api(values: list, axis: int = 0, name: str | None = None) -> RaggedTensor:
    return stack(values, axis)


# --- gather / boolean_mask / where / cast -----------------------------------------------------


@dispatch_for_api(gather_ops.gather, RaggedTensor)
def gather(params: Any, indices: Any, validate_indices: Any = None, axis: Any = None,
           batch_dims: int = 0, name: str | None = None) -> Any:
    if axis not in (None, 0) or batch_dims:
        raise NotImplementedError("tf.gather on a RaggedTensor with axis/batch_dims")
    if isinstance(indices, RaggedTensor):  # dense (or ragged) params, ragged ids: embeddings
        return indices.with_flat_values(gather(params, indices.flat_values))
    idx = indices if isinstance(indices, Tensor) else convert_to_tensor(indices)
    if not isinstance(params, RaggedTensor):
        return gather_ops.gather(params, idx)
    if idx.shape.rank == 0:
        return params[idx]
    flat = array_ops.reshape(idx, [-1])
    out = take_rows(params, flat)
    dims = idx.shape.as_list()
    if any(d is None for d in dims[1:]):
        raise NotImplementedError("tf.gather of a RaggedTensor with indices of rank > 1 "
                                  "whose inner dims are not known")
    for d in reversed(dims[1:]):  # the index shape as uniform outer dims
        out = RaggedTensor.from_uniform_row_length(out, d)
    return out


def boolean_mask(data: Any, mask: Any, name: str | None = None) -> Any:
    if isinstance(mask, RaggedTensor):
        rt = data if isinstance(data, RaggedTensor) else as_ragged(data)
        if mask.ragged_rank != 1 or rt.ragged_rank != 1:
            raise NotImplementedError("ragged boolean_mask with ragged_rank > 1")
        _same_splits(rt, mask, "BooleanMask")
        kept = math_ops.cast(mask.values, rt.row_splits.dtype)
        lengths = apply(segment_ops._segment_sum, kept, mask.value_rowids(), mask.nrows())
        values = indexing_ops.boolean_mask(rt.values, mask.values)
        return RaggedTensor.from_row_lengths(values, lengths, validate=False)
    m = mask if isinstance(mask, Tensor) else convert_to_tensor(mask)
    if m.shape.rank != 1:
        raise NotImplementedError("ragged boolean_mask with a dense mask of rank > 1")
    from tapeflow.ops.math_ops import where as where_

    index = array_ops.reshape(where_(m), [-1])
    return take_rows(data, index)


@dispatch_for_api(indexing_ops.boolean_mask, RaggedTensor)
def _boolean_mask_api(tensor: Any, mask: Any, axis: Any = None,
                      name: str = "boolean_mask") -> Any:
    if axis not in (None, 0):
        raise NotImplementedError("tf.boolean_mask of a RaggedTensor with axis")
    return boolean_mask(tensor, mask)


@dispatch_for_api(math_ops.where, RaggedTensor)
def where(condition: Any, x: Any = None, y: Any = None, name: str | None = None) -> Any:
    if x is None and y is None:  # the [n, rank] int64 coordinates of the True entries
        return indexing_ops.boolean_mask(condition.to_sparse().indices,
                                         array_ops.reshape(condition.flat_values, [-1]))
    rt = next(v for v in (condition, x, y) if isinstance(v, RaggedTensor))
    args = []
    for v in (condition, x, y):
        if isinstance(v, RaggedTensor):
            _same_splits(rt, v, "SelectV2")
            args.append(v.flat_values)
        else:
            args.append(_dense_on_values(rt, v, "SelectV2"))
    return rt.with_flat_values(math_ops.where(*args))


@dispatch_for_api(math_ops.cast, RaggedTensor)
def cast(x: RaggedTensor, dtype: Any, name: str | None = None) -> RaggedTensor:
    return x.with_flat_values(math_ops.cast(x.flat_values, dtype))


def _like(api: Any) -> None:
    @dispatch_for_api(api, RaggedTensor)
    def handler(input: Any, dtype: Any = None, name: str | None = None,  # noqa: A002
                **kwargs: Any) -> RaggedTensor:
        return input.with_flat_values(api(input.flat_values, dtype=dtype))


_like(array_ops.ones_like)
_like(array_ops.zeros_like)


@dispatch_for_api(array_ops.size, RaggedTensor)
def size(input: Any, out_type: Any = _dtypes.int32, name: str | None = None) -> Tensor:  # noqa: A002
    return array_ops.size(input.flat_values, out_type=out_type)


@dispatch_for_api(array_ops.shape, RaggedTensor)
def shape(input: Any, out_type: Any = _dtypes.int32, name: str | None = None) -> Any:  # noqa: A002
    """A DynamicRaggedShape, as TensorFlow's tf.shape of a RaggedTensor."""
    from tapeflow.ragged.dynamic_shape import DynamicRaggedShape

    return DynamicRaggedShape.from_tensor(input, out_type)


@dispatch_for_api(array_ops.rank, RaggedTensor)
def rank(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    return convert_to_tensor(input.shape.rank, _dtypes.int32)


@dispatch_for_api(math_ops.truediv, RaggedTensor)
def truediv(x: Any, y: Any, name: str | None = None) -> RaggedTensor:
    """x / y on ragged operands; integers are cast to float first, as for dense tensors."""
    def as_float(v: Any) -> Any:
        if isinstance(v, RaggedTensor) and v.dtype.is_integer:
            return v.with_flat_values(math_ops.cast(
                v.flat_values, _dtypes.float32 if v.dtype.size <= 2 else _dtypes.float64))
        return v

    return apply(math_ops._div, as_float(x), as_float(y))


dispatch_for_api(math_ops.divide, RaggedTensor)(truediv)
RaggedTensor.__truediv__ = truediv
RaggedTensor.__rtruediv__ = lambda x, y: truediv(y, x)
