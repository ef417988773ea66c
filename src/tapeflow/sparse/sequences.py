"""`tf.edit_distance` (Levenshtein distance between the sequences of two SparseTensors),
`tf.sparse.mask` (IndexedSlices without some indices) and `tf.sparse.sampled_addmm`
(alpha * (mat1 @ mat2) at a sparse pattern + beta * its values), as TensorFlow defines them."""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow._api import export
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework.dispatch import apply, op
from tapeflow.ops import array_ops, gather_ops, math_ops
from tapeflow.ops.array_ops import _tensor
from tapeflow.sparse.tensor import SparseTensor


def _groups(indices: np.ndarray, values: np.ndarray) -> dict:
    """{leading index tuple: [values in order of the last index]}."""
    out: dict = {}
    order = np.lexsort(indices.T[::-1]) if len(indices) else []
    for k in order:
        out.setdefault(tuple(indices[k, :-1].tolist()), []).append(values[k])
    return out


def _levenshtein(a: list, b: list) -> int:
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, y in enumerate(b, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y))
        prev = cur
    return prev[-1]


@op("EditDistance", shape=lambda hi, hv, hs, ti, tv, ts, *, normalize: (
    None if hs[0] is None or hs[0][0] is None else (None,) * (hs[0][0] - 1), _dtypes.float32))
def _edit_distance(h_idx, h_val, h_shape, t_idx, t_val, t_shape, *, normalize):
    out_shape = np.maximum(h_shape[:-1], t_shape[:-1]).astype(np.int64)
    hyp, truth = _groups(h_idx, h_val), _groups(t_idx, t_val)
    out = np.zeros(out_shape, np.float32)
    for pos in np.ndindex(*out_shape):
        a, b = hyp.get(pos, []), truth.get(pos, [])
        d = float(_levenshtein(a, b))
        if normalize:
            d = d / len(b) if b else (np.inf if a else 0.0)
        out[pos] = d
    return out


@export("edit_distance")
def edit_distance(hypothesis: SparseTensor, truth: SparseTensor, normalize: bool = True,
                  name: str = "edit_distance") -> Any:
    """Levenshtein distance between the sequences (last dimension) of two SparseTensors, per
    position of the other dimensions; with `normalize`, divided by the truth's length."""
    for what, sp in (("hypothesis", hypothesis), ("truth", truth)):
        if not isinstance(sp, SparseTensor):
            raise TypeError(f"edit_distance: {what} must be a SparseTensor, got "
                            f"{type(sp).__name__}")
    if hypothesis.values.dtype != truth.values.dtype:
        raise TypeError(f"edit_distance: hypothesis and truth must share a dtype, got "
                        f"{hypothesis.values.dtype.name} and {truth.values.dtype.name}")
    return apply(_edit_distance, hypothesis.indices, hypothesis.values, hypothesis.dense_shape,
                 truth.indices, truth.values, truth.dense_shape, normalize=bool(normalize))


@export("sparse.mask")
def mask(a: Any, mask_indices: Any, name: str | None = None) -> Any:
    """The IndexedSlices `a` without the slices whose index is in mask_indices."""
    from tapeflow.ops.indexed_slices import IndexedSlices

    keep = array_ops.reshape(math_ops.where(_not_in(a.indices, _tensor(mask_indices))), [-1])
    return IndexedSlices(gather_ops.gather(a.values, keep), gather_ops.gather(a.indices, keep),
                         a.dense_shape)


@op("NotIn", shape=lambda x, drop: (x[0], _dtypes.bool))
def _not_in_op(x, drop):
    return ~np.isin(x, drop)


def _not_in(x: Any, drop: Any) -> Any:
    return apply(_not_in_op, x, math_ops.cast(drop, x.dtype))


@export("sparse.sampled_addmm")
def sampled_addmm(indices: Any, values: Any, dense_shape: Any, mat1: Any, mat2: Any,
                  beta: float = 1.0, alpha: float = 1.0,
                  output_type: Any = _dtypes.float32) -> tuple:
    """(indices, alpha * (mat1 @ mat2) at indices + beta * values, dense_shape): a matrix
    product computed only where the sparse pattern has entries (batched when rank > 2)."""
    from tapeflow.ops.linalg_ops import matmul

    dtype = _dtypes.as_dtype(output_type)
    a = math_ops.cast(_tensor(mat1), dtype)
    b = math_ops.cast(_tensor(mat2), dtype)
    idx = _tensor(indices)
    product = matmul(a, b)
    picked = gather_ops.gather_nd(product, idx)
    out = alpha * picked + beta * math_ops.cast(_tensor(values), dtype)
    return idx, out, _tensor(dense_shape)
