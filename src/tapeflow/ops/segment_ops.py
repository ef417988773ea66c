"""Segment reductions: ``tf.math.(unsorted_)segment_sum/max/min/prod/mean/sqrt_n``.

Row `i` of `data` goes to output row ``segment_ids[i]``; negative ids are dropped (TF's rule).
`num_segments` is a tensor input, so ragged and sparse reductions work when the number of rows
is known only at run time. Empty segments hold 0 (sum, mean), 1 (prod), or the dtype's lowest /
highest value (max / min), as in TensorFlow.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow._api import export
from tapeflow.framework.dispatch import apply, op
from tapeflow.kernels import scatter as _scatter
from tapeflow.ops.array_ops import _tensor


def _segment_shape(data, ids, num):
    if data[0] is None or ids[0] is None:
        return None, data[1]
    return (None,) + tuple(data[0][len(ids[0]):]), data[1]


def _reduce_at(ufunc, data, ids, num, fill):
    n = int(num)
    flat_ids = ids.reshape(-1)
    rows = data.reshape((flat_ids.size,) + data.shape[ids.ndim:])
    keep = flat_ids >= 0
    if not keep.all():
        rows, flat_ids = rows[keep], flat_ids[keep]
    if flat_ids.size and flat_ids.max() >= n:
        raise ValueError(f"segment id {int(flat_ids.max())} is out of range [0, {n})")
    out = np.full((n,) + rows.shape[1:], fill, dtype=data.dtype)
    if ufunc is np.add:  # a compiled row loop where it applies (np.add.at is slow)
        _scatter.add_rows(out, flat_ids, rows)
    else:
        ufunc.at(out, flat_ids, rows)
    return out


def _lowest(dtype):
    return np.finfo(dtype).min if dtype.kind == "f" else np.iinfo(dtype).min


def _highest(dtype):
    return np.finfo(dtype).max if dtype.kind == "f" else np.iinfo(dtype).max


@op("UnsortedSegmentSum", shape=_segment_shape)
def _segment_sum(data, ids, num):
    return _reduce_at(np.add, data, ids, num, 0)


@op("UnsortedSegmentMax", shape=_segment_shape)
def _segment_max(data, ids, num):
    return _reduce_at(np.maximum, data, ids, num, _lowest(data.dtype))


@op("UnsortedSegmentMin", shape=_segment_shape)
def _segment_min(data, ids, num):
    return _reduce_at(np.minimum, data, ids, num, _highest(data.dtype))


@op("UnsortedSegmentProd", shape=_segment_shape)
def _segment_prod(data, ids, num):
    return _reduce_at(np.multiply, data, ids, num, 1)


@op("SegmentProdOfOthers", shape=lambda data, ids, num: data)
def _prod_of_others(data, ids, num):
    """For each element, the product of the other elements of its segment (prod's gradient)."""
    flat_ids = ids.reshape(-1)
    rows = data.reshape((flat_ids.size,) + data.shape[ids.ndim:])
    out = np.zeros_like(rows)
    for s in np.unique(flat_ids[flat_ids >= 0]):
        where = np.nonzero(flat_ids == s)[0]
        block = rows[where]
        for k, i in enumerate(where):
            out[i] = np.prod(np.delete(block, k, axis=0), axis=0)
    return out.reshape(data.shape)


def _gather_rows(g, ids):
    """g[ids] with negative ids reading zeros (they were dropped going forward)."""
    from tapeflow.ops import array_ops, gather_ops, math_ops

    safe = math_ops.maximum(ids, array_ops.zeros_like(ids))
    rows = gather_ops.gather(g, safe)
    keep = math_ops.cast(math_ops.greater_equal(ids, array_ops.zeros_like(ids)), g.dtype)
    extra = len(rows.shape) - len(keep.shape) if rows.shape.rank is not None else 0
    for _ in range(extra):
        keep = array_ops.expand_dims(keep, -1)
    return rows * keep


@_segment_sum.def_grad
def _(g, out, data, ids, num):
    return _gather_rows(g, ids), None, None


def _minmax_grad(g, out, data, ids, num):
    from tapeflow.ops import math_ops

    chosen = math_ops.cast(math_ops.equal(data, _gather_rows(out, ids)), g.dtype)
    count = apply(_segment_sum, chosen, ids, num)
    return _gather_rows(math_ops.divide_no_nan(g, count), ids) * chosen


@_segment_max.def_grad
def _(g, out, data, ids, num):
    return _minmax_grad(g, out, data, ids, num), None, None


@_segment_min.def_grad
def _(g, out, data, ids, num):
    return _minmax_grad(g, out, data, ids, num), None, None


@_segment_prod.def_grad
def _(g, out, data, ids, num):
    return _gather_rows(g, ids) * apply(_prod_of_others, data, ids, num), None, None


def _args(data: Any, segment_ids: Any, num_segments: Any):
    from tapeflow.ops import math_ops

    x = _tensor(data)
    ids = _tensor(segment_ids)
    if not ids.dtype.is_integer:
        raise TypeError(f"segment_ids must be integers, got {ids.dtype.name}")
    if num_segments is None:  # sorted segments: the last id + 1
        from tapeflow.ops import reduce_ops

        num = reduce_ops.reduce_max(ids) + 1 if ids.shape.rank != 0 else ids + 1
        num = math_ops.maximum(num, 0)
    else:
        num = _tensor(num_segments)
    return x, ids, num


def _counts(x, ids, num):
    from tapeflow.ops import array_ops, math_ops

    ones = math_ops.cast(array_ops.ones_like(ids), x.dtype)
    count = apply(_segment_sum, ones, ids, num)
    for _ in range((x.shape.rank or 0) - (ids.shape.rank or 0)):
        count = array_ops.expand_dims(count, -1)
    return count


@export("math.unsorted_segment_sum")
def unsorted_segment_sum(data: Any, segment_ids: Any, num_segments: Any, name: str | None = None):
    """Sum of the rows of `data` in each of `num_segments` segments."""
    return apply(_segment_sum, *_args(data, segment_ids, num_segments))


@export("math.unsorted_segment_max")
def unsorted_segment_max(data: Any, segment_ids: Any, num_segments: Any, name: str | None = None):
    return apply(_segment_max, *_args(data, segment_ids, num_segments))


@export("math.unsorted_segment_min")
def unsorted_segment_min(data: Any, segment_ids: Any, num_segments: Any, name: str | None = None):
    return apply(_segment_min, *_args(data, segment_ids, num_segments))


@export("math.unsorted_segment_prod")
def unsorted_segment_prod(data: Any, segment_ids: Any, num_segments: Any,
                          name: str | None = None):
    return apply(_segment_prod, *_args(data, segment_ids, num_segments))


@export("math.unsorted_segment_mean")
def unsorted_segment_mean(data: Any, segment_ids: Any, num_segments: Any,
                          name: str | None = None):
    """Mean of each segment (empty segments give 0)."""
    from tapeflow.ops import math_ops

    x, ids, num = _args(data, segment_ids, num_segments)
    return math_ops.divide_no_nan(apply(_segment_sum, x, ids, num), _counts(x, ids, num))


@export("math.unsorted_segment_sqrt_n")
def unsorted_segment_sqrt_n(data: Any, segment_ids: Any, num_segments: Any,
                            name: str | None = None):
    """Sum of each segment divided by the square root of its size."""
    from tapeflow.ops import math_ops

    x, ids, num = _args(data, segment_ids, num_segments)
    return math_ops.divide_no_nan(apply(_segment_sum, x, ids, num),
                                  math_ops.sqrt(_counts(x, ids, num)))


@export("math.segment_sum")
def segment_sum(data: Any, segment_ids: Any, name: str | None = None):
    """Sum over sorted `segment_ids` (output has max(id) + 1 rows)."""
    return apply(_segment_sum, *_args(data, segment_ids, None))


def _empty_as_zero(out, x, ids, num):
    """Sorted segment max/min give 0 for empty segments (the unsorted ones give the extreme)."""
    from tapeflow.ops import array_ops, math_ops

    count = _counts(x, ids, num)
    return math_ops.where(math_ops.greater(count, 0), out, array_ops.zeros_like(out))


@export("math.segment_max")
def segment_max(data: Any, segment_ids: Any, name: str | None = None):
    args = _args(data, segment_ids, None)
    return _empty_as_zero(apply(_segment_max, *args), *args)


@export("math.segment_min")
def segment_min(data: Any, segment_ids: Any, name: str | None = None):
    args = _args(data, segment_ids, None)
    return _empty_as_zero(apply(_segment_min, *args), *args)


@export("math.segment_prod")
def segment_prod(data: Any, segment_ids: Any, name: str | None = None):
    return apply(_segment_prod, *_args(data, segment_ids, None))


@export("math.segment_mean")
def segment_mean(data: Any, segment_ids: Any, name: str | None = None):
    x, ids, num = _args(data, segment_ids, None)
    return unsorted_segment_mean(x, ids, num)
