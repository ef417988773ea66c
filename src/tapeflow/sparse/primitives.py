"""Index kernels for sparse ops (kernel + shape rule; only to_dense carries values, and so a
gradient). The values themselves move through dense ops in sparse/ops.py."""

from __future__ import annotations

import numpy as np

from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework.dispatch import op
from tapeflow.ops.gather_ops import gather_nd

_I64 = _dtypes.int64


def _linear(indices: np.ndarray, shape: np.ndarray) -> np.ndarray:
    if indices.shape[0] == 0:
        return np.zeros(0, np.int64)
    return np.ravel_multi_index(tuple(indices.T), tuple(int(d) for d in shape))


def _to_dense_shape(indices, values, shape, default):
    n = shape[0][0] if shape[0] else None
    return (None if n is None else (None,) * n), values[1]


@op("SparseToDense", shape=_to_dense_shape)
def to_dense_kernel(indices, values, shape, default):
    dims = tuple(int(d) for d in shape)
    out = np.full(dims, default, dtype=values.dtype)
    if indices.size:
        bad = np.any((indices < 0) | (indices >= np.asarray(dims)), axis=1)
        if bad.any():
            raise ValueError(f"index {indices[bad][0].tolist()} is out of bounds for dense "
                             f"shape {list(dims)}")
        out[tuple(indices.T)] = values
    return out


@to_dense_kernel.def_grad
def _(g, out, indices, values, shape, default):
    return None, gather_nd(g, indices), None, None


@op("SparseReorderOrder", shape=lambda indices, shape: ((indices[0][0],) if indices[0] else
                                                        (None,), _I64))
def row_major_order(indices, shape):
    """The permutation that sorts entries in row-major order."""
    return np.argsort(_linear(indices, shape), kind="stable").astype(np.int64)


@op("SparseReshapeIndices", multi_output=True,
    shape=lambda indices, shape, new_shape: [((indices[0][0] if indices[0] else None,
                                               new_shape[0][0] if new_shape[0] else None), _I64),
                                             (new_shape[0], _I64)])
def reshape_indices(indices, shape, new_shape):
    size = int(np.prod(shape))
    target = np.asarray(new_shape, np.int64).copy()
    unknown = np.nonzero(target == -1)[0]
    if len(unknown) > 1:
        raise ValueError(f"at most one -1 in the new shape, got {target.tolist()}")
    if len(unknown):
        rest = int(np.prod(np.delete(target, unknown[0])))
        target[unknown[0]] = size // rest if rest else 0
    if int(np.prod(target)) != size:
        raise ValueError(f"cannot reshape a SparseTensor of dense shape {shape.tolist()} "
                         f"({size} elements) to {np.asarray(new_shape).tolist()}")
    flat = _linear(indices, shape)
    new = np.stack(np.unravel_index(flat, tuple(target)), axis=1) if flat.size else \
        np.zeros((0, len(target)), np.int64)
    return new.astype(np.int64), target


@op("SparseUnionIndices", multi_output=True,
    shape=lambda a, b, shape: [((None, a[0][1] if a[0] else None), _I64), ((None,), _I64),
                               ((), _I64)])
def union_indices(a, b, shape):
    """Row-major union of two index sets; `ids` maps each entry of a then b to its row."""
    la, lb = _linear(a, shape), _linear(b, shape)
    merged, ids = np.unique(np.concatenate([la, lb]), return_inverse=True)
    dims = tuple(int(d) for d in shape)
    indices = np.stack(np.unravel_index(merged, dims), axis=1) if merged.size else \
        np.zeros((0, len(dims)), np.int64)
    return indices.astype(np.int64), ids.astype(np.int64), np.asarray(len(merged), np.int64)


@op("SparseLinearIds", multi_output=True,
    shape=lambda indices, shape, *, kept: [((None,), _I64), ((len(kept),), _I64)])
def linear_ids(indices, shape, *, kept):
    """Each entry's row-major position among the `kept` dims, and those dims' sizes."""
    kept_shape = np.asarray([shape[d] for d in kept], np.int64)
    if not kept:
        return np.zeros(len(indices), np.int64), kept_shape
    ids = _linear(indices[:, list(kept)], kept_shape)
    return np.asarray(ids, np.int64), kept_shape
