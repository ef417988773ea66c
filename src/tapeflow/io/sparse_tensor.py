"""A minimal `tf.SparseTensor` (indices, values, dense_shape), as VarLenFeature parsing returns."""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow.framework.tensor import EagerTensor, wrap


class SparseTensor:
    """Non-zero `values` at `indices` ([N, rank] int64) of a tensor of shape `dense_shape`."""

    _is_composite = True  # passes through tf.data element structures as one unit

    def __init__(self, indices: Any, values: Any, dense_shape: Any):
        self.indices = wrap(np.asarray(_np(indices), dtype=np.int64).reshape(-1, len(_np(
            dense_shape))))
        self.values = values if isinstance(values, EagerTensor) else wrap(np.asarray(values))
        self.dense_shape = wrap(np.asarray(_np(dense_shape), dtype=np.int64))

    @property
    def dtype(self):
        return self.values.dtype

    @property
    def shape(self):
        from tapeflow.framework.shapes import TensorShape
        return TensorShape(self.dense_shape._value.tolist())

    def __repr__(self) -> str:
        return (f"SparseTensor(indices={self.indices!r}, values={self.values!r}, "
                f"dense_shape={self.dense_shape!r})")


def _np(x: Any) -> np.ndarray:
    return x._value if isinstance(x, EagerTensor) else np.asarray(x)


def to_dense(sp: SparseTensor, default_value: Any = None) -> EagerTensor:
    """`tf.sparse.to_dense`: scatter the values into a dense tensor."""
    values = sp.values._value
    if default_value is None:
        default_value = b"" if values.dtype == object else 0
    out = np.full(tuple(sp.dense_shape._value), default_value, dtype=values.dtype)
    idx = sp.indices._value
    if idx.size:
        out[tuple(idx.T)] = values
    return wrap(out)
