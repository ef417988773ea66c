"""``tf.ragged.cross``: per row, every combination of one value from each input, as strings
joined by ``_X_`` (the first input's value varies slowest), as TF's feature crossing."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework.constant import convert_to_tensor
from tapeflow.framework.dispatch import apply, op
from tapeflow.framework.tensor import Tensor
from tapeflow.ragged.tensor import RaggedTensor


def _text(v: Any) -> bytes:
    return v if isinstance(v, bytes) else str(v).encode() if not isinstance(v, str) \
        else v.encode()


@op("RaggedCross", multi_output=True,
    shape=lambda *inputs, separator: [((None,), _dtypes.string), ((None,), _dtypes.int64)])
def _cross_kernel(*inputs, separator):
    """inputs: (values, splits) of each feature; out: (crossed strings, row splits)."""
    pairs = [(inputs[i], inputs[i + 1]) for i in range(0, len(inputs), 2)]
    nrows = len(pairs[0][1]) - 1
    out, lengths = [], []
    for r in range(nrows):
        rows = [[_text(v) for v in values[splits[r]:splits[r + 1]]] for values, splits in pairs]
        crossed = [separator.join(combo) for combo in itertools.product(*rows)]
        out.extend(crossed)
        lengths.append(len(crossed))
    values = np.empty(len(out), dtype=object)
    values[:] = out
    return values, np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)


def _as_rows(x: Any) -> tuple[Tensor, Tensor]:
    if isinstance(x, RaggedTensor):
        if x.ragged_rank != 1:
            raise ValueError(f"tf.ragged.cross: inputs must be 2-D, got shape {x.shape}")
        return x.values, x.row_splits
    if hasattr(x, "indices") and hasattr(x, "dense_shape"):  # a SparseTensor
        return _as_rows(RaggedTensor.from_sparse(x))
    t = x if isinstance(x, Tensor) else convert_to_tensor(x)
    if t.shape.rank != 2:
        raise ValueError(f"tf.ragged.cross: inputs must be 2-D, got shape {t.shape}")
    return _as_rows(RaggedTensor.from_tensor(t))


def cross(inputs: list, name: str | None = None) -> RaggedTensor:
    """Row i: the crosses of row i of every input (RaggedTensor, Tensor or SparseTensor)."""
    parts: list = []
    for x in inputs:
        values, splits = _as_rows(x)
        parts.extend([values, splits])
    values, splits = apply(_cross_kernel, *parts, separator=b"_X_")
    return RaggedTensor.from_row_splits(values, splits, validate=False)
