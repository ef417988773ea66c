"""More of ``tf.sparse``: maximum/minimum, softmax, split, reset_shape, bincount
(TensorFlow's semantics: missing entries are zeros; softmax over each row's present entries)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework.constant import convert_to_tensor
from tapeflow.framework.dispatch import apply, op
from tapeflow.ops import array_ops, gather_ops, math_ops, reduce_ops, segment_ops
from tapeflow.sparse.ops import _check_sparse, _t
from tapeflow.sparse.ops import slice as sparse_slice
from tapeflow.sparse.tensor import SparseTensor

_I64 = _dtypes.int64


@op("SparseSparseExtremum", multi_output=True,
    shape=lambda ai, av, bi, bv, *, use_max: [((None, ai[0][1] if ai[0] else None), _I64),
                                              ((None,), av[1])])
def _extremum(a_indices, a_values, b_indices, b_values, *, use_max):
    keys = {}
    for idx, v in zip(map(tuple, a_indices.tolist()), a_values):
        keys[idx] = [v, 0]
    for idx, v in zip(map(tuple, b_indices.tolist()), b_values):
        keys.setdefault(idx, [0, 0])[1] = v
    order = sorted(keys)
    pairs = np.asarray([keys[k] for k in order], dtype=a_values.dtype).reshape(-1, 2)
    pick = np.maximum if use_max else np.minimum
    indices = np.asarray(order, np.int64).reshape(-1, a_indices.shape[1])
    return indices, pick(pairs[:, 0], pairs[:, 1]).astype(a_values.dtype)


def _extreme(sp_a: Any, sp_b: Any, use_max: bool) -> SparseTensor:
    a = _check_sparse(sp_a, "tf.sparse.maximum")
    b = _check_sparse(sp_b, "tf.sparse.maximum")
    indices, values = apply(_extremum, a.indices, a.values, b.indices, b.values,
                            use_max=use_max)
    return SparseTensor(indices, values, a.dense_shape)


def maximum(sp_a: Any, sp_b: Any, name: str | None = None) -> SparseTensor:
    """Elementwise max over the union of entries (a missing entry counts as 0)."""
    return _extreme(sp_a, sp_b, True)


def minimum(sp_a: Any, sp_b: Any, name: str | None = None) -> SparseTensor:
    """Elementwise min over the union of entries (a missing entry counts as 0)."""
    return _extreme(sp_a, sp_b, False)


def softmax(sp_input: Any, name: str | None = None) -> SparseTensor:
    """Softmax over the present entries of each innermost row (differentiable in the values)."""
    sp = _check_sparse(sp_input, "tf.sparse.softmax")
    lead = sp.indices[:, :-1]
    dims = sp.dense_shape[:-1]
    strides = math_ops.cast(reduce_ops.cumprod(dims, exclusive=True, reverse=True), _I64)
    rows = reduce_ops.reduce_sum(lead * strides, axis=1)
    count = reduce_ops.reduce_prod(dims)
    top = array_ops.stop_gradient(segment_ops.unsorted_segment_max(sp.values, rows, count))
    e = math_ops.exp(sp.values - gather_ops.gather(top, rows))
    total = gather_ops.gather(segment_ops.unsorted_segment_sum(e, rows, count), rows)
    return SparseTensor(sp.indices, e / total, sp.dense_shape)


def split(sp_input: Any = None, num_split: int | None = None, axis: int | None = None,
          name: str | None = None, keyword_required: Any = None) -> list:
    """`num_split` SparseTensors along `axis` (the first dim % num_split pieces one larger)."""
    sp = _check_sparse(sp_input, "tf.sparse.split")
    shape = sp.dense_shape.numpy().tolist()
    rank = len(shape)
    axis = int(axis) % rank
    base, extra = divmod(shape[axis], int(num_split))
    out, begin = [], 0
    for k in range(int(num_split)):
        size = base + (1 if k < extra else 0)
        start = [0] * rank
        start[axis] = begin
        sizes = list(shape)
        sizes[axis] = size
        out.append(sparse_slice(sp, start, sizes))
        begin += size
    return out


def reset_shape(sp_input: Any, new_shape: Any = None) -> SparseTensor:
    """The same entries with a new dense shape (None: the tightest one holding them)."""
    sp = _check_sparse(sp_input, "tf.sparse.reset_shape")
    if new_shape is None:
        shape = reduce_ops.reduce_max(sp.indices, axis=0) + 1
    else:
        shape = _t(new_shape, _I64)
    return SparseTensor(sp.indices, sp.values, shape)


@op("SparseBincount", multi_output=True,
    shape=lambda x, w, *, rows, size, binary: [((None, 2 if rows else 1), _I64),
                                                ((None,), w[1]), ((2 if rows else 1,), _I64)])
def _bincount(x, w, *, rows, size, binary):
    flat = x.reshape(x.shape[0], -1) if rows else x.reshape(1, -1)
    weights = None if w.size == 0 else w.reshape(flat.shape)
    found = {}
    for r in range(flat.shape[0]):
        for c, v in enumerate(flat[r].tolist()):
            if v < 0 or v >= size:
                continue
            add = 1 if weights is None else weights[r, c]
            found[(r, v)] = 1 if binary else found.get((r, v), 0) + add
    keys = sorted(found)
    dtype = w.dtype if w.size else x.dtype
    values = np.asarray([found[k] for k in keys], dtype=dtype)
    if rows:
        indices = np.asarray(keys, np.int64).reshape(-1, 2)
        return indices, values, np.asarray([flat.shape[0], size], np.int64)
    return (np.asarray([k[1] for k in keys], np.int64).reshape(-1, 1), values,
            np.asarray([size], np.int64))


def bincount(values: Any, weights: Any = None, axis: int = 0, minlength: int | None = None,
             maxlength: int | None = None, binary_output: bool = False,
             name: str | None = None) -> SparseTensor:
    """Counts of each value as a SparseTensor (axis=-1: per row of a 2-D input)."""
    x = _t(values)
    data = x.numpy()
    size = int(data.max()) + 1 if data.size else 0
    if minlength is not None:
        size = max(size, int(minlength))
    if maxlength is not None:
        size = min(size, int(maxlength))
    rows = axis in (-1, 1) and x.shape.rank == 2
    w = convert_to_tensor(np.zeros(0, x.dtype._np)) if weights is None else _t(weights)
    indices, counts, shape = apply(_bincount, x, w, rows=rows, size=size,
                                   binary=bool(binary_output))
    return SparseTensor(indices, counts, shape)
