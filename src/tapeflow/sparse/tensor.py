"""``tf.SparseTensor``: the non-zero `values` at `indices` of a tensor of shape `dense_shape`.

Three ordinary tensors (indices int64 [N, rank], values [N], dense_shape int64 [rank]), eager
or symbolic, so sparse ops compose dense ones and work in ``tf.function`` with gradients to
the values. It is a composite: ``tf.function`` and ``tf.data`` move its three components.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow._api import export
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework.composite import CompositeTensor, TypeSpec
from tapeflow.framework.constant import convert_to_tensor
from tapeflow.framework.shapes import TensorShape, as_shape
from tapeflow.framework.tensor import EagerTensor, Tensor
from tapeflow.framework.tensor_spec import TensorSpec


def _as(x: Any, dtype: Any = None) -> Tensor:
    if isinstance(x, Tensor):
        return x
    if dtype is not None:
        return convert_to_tensor(np.asarray(x, dtype=dtype._np) if not hasattr(x, "_value")
                                 else x, dtype)
    return convert_to_tensor(x)


@export("SparseTensor", "sparse.SparseTensor")
class SparseTensor(CompositeTensor):
    """Non-zero `values` at `indices` ([N, rank] int64) of a tensor of shape `dense_shape`."""

    def __init__(self, indices: Any, values: Any, dense_shape: Any):
        shape = _as(dense_shape, _dtypes.int64)
        if shape.dtype is not _dtypes.int64:
            from tapeflow.ops.math_ops import cast

            shape = cast(shape, _dtypes.int64)
        rank = shape.shape[0]
        idx = indices
        if not isinstance(idx, Tensor):
            arr = np.asarray(idx, dtype=np.int64)
            idx = convert_to_tensor(arr.reshape(-1, rank if rank is not None else arr.shape[-1]))
        elif idx.dtype is not _dtypes.int64:
            from tapeflow.ops.math_ops import cast

            idx = cast(idx, _dtypes.int64)
        self._indices = idx
        self._values = _as(values)
        self._dense_shape = shape

    indices = property(lambda self: self._indices)
    values = property(lambda self: self._values)
    dense_shape = property(lambda self: self._dense_shape)

    @property
    def dtype(self) -> _dtypes.DType:
        return self._values.dtype

    @property
    def shape(self) -> TensorShape:
        if isinstance(self._dense_shape, EagerTensor):
            return TensorShape(self._dense_shape._value.tolist())
        n = self._dense_shape.shape[0]
        return TensorShape(None if n is None else [None] * n)

    def get_shape(self) -> TensorShape:
        return self.shape

    @property
    def _type_spec(self) -> SparseTensorSpec:
        return SparseTensorSpec(self.shape, self.dtype)

    def with_values(self, new_values: Any) -> SparseTensor:
        return SparseTensor(self._indices, new_values, self._dense_shape)

    def __repr__(self) -> str:
        return (f"SparseTensor(indices={self._indices!r}, values={self._values!r}, "
                f"dense_shape={self._dense_shape!r})")

    @classmethod
    def _apply_elementwise(cls, op: Any, inputs: tuple, attrs: dict) -> Any:
        from tapeflow.sparse import ops

        return ops.elementwise(op, inputs, attrs)


@export("SparseTensorSpec")
class SparseTensorSpec(TypeSpec):
    """The type of a SparseTensor: its dense shape (dims may be None) and dtype."""

    value_type = SparseTensor

    def __init__(self, shape: Any = None, dtype: Any = _dtypes.float32):
        self._shape = as_shape(shape)
        self._dtype = _dtypes.as_dtype(dtype)

    shape = property(lambda self: self._shape)
    dtype = property(lambda self: self._dtype)

    def _key(self) -> tuple:
        return (SparseTensorSpec, self._dtype, self._shape.rank)

    def _component_specs(self) -> list:
        rank = self._shape.rank
        return [TensorSpec([None, rank], _dtypes.int64), TensorSpec([None], self._dtype),
                TensorSpec([rank], _dtypes.int64)]

    def _to_components(self, value: Any) -> list:
        return [value.indices, value.values, value.dense_shape]

    def _from_components(self, components: list) -> SparseTensor:
        return SparseTensor(*components)

    @classmethod
    def from_value(cls, value: SparseTensor) -> SparseTensorSpec:
        return value._type_spec

    def __repr__(self) -> str:
        return f"SparseTensorSpec({self._shape}, tf.{self._dtype.name})"
