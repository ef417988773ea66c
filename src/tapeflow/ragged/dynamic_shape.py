"""`tf.shape` of a RaggedTensor: a `DynamicRaggedShape` (TensorFlow's
`tf.experimental.DynamicRaggedShape`), the row partitions of the ragged dimensions plus the
dense shape of the flat values' inner dimensions.

`shape[0]` is the number of rows and a uniform inner dimension is a scalar tensor; indexing a
ragged dimension raises ValueError, as in TensorFlow. Built from tensors (the splits and
`tf.shape` of the flat values), so it works eagerly and traced.
"""

from __future__ import annotations

from typing import Any

from tapeflow._api import export
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework.tensor import EagerTensor, Tensor
from tapeflow.ops import array_ops, math_ops


@export("experimental.RowPartition")
class RowPartition:
    """How a dimension is split into rows (TensorFlow's `tf.experimental.RowPartition`)."""

    def __init__(self, row_splits: Tensor):
        self._row_splits = row_splits

    @classmethod
    def from_row_splits(cls, row_splits: Any, validate: bool = True,
                        dtype: Any = None) -> RowPartition:
        from tapeflow.framework.constant import convert_to_tensor

        return cls(convert_to_tensor(row_splits, dtype or _dtypes.int64))

    def row_splits(self) -> Tensor:
        return self._row_splits

    def row_lengths(self) -> Tensor:
        return self._row_splits[1:] - self._row_splits[:-1]

    def nrows(self) -> Tensor:
        return array_ops.shape(self._row_splits, out_type=self._row_splits.dtype)[0] - 1

    def nvals(self) -> Tensor:
        return self._row_splits[-1]

    @property
    def dtype(self) -> _dtypes.DType:
        return self._row_splits.dtype

    def __repr__(self) -> str:
        splits = self._row_splits
        shown = splits.numpy() if isinstance(splits, EagerTensor) else splits
        return f"tf.RowPartition(row_splits={shown})"


@export("experimental.DynamicRaggedShape")
class DynamicRaggedShape:
    """The shape of a (ragged) tensor: row partitions, then the inner dense shape."""

    def __init__(self, row_partitions: tuple, inner_shape: Tensor, dtype: Any = None):
        self._partitions = tuple(row_partitions)
        self._dtype = _dtypes.as_dtype(dtype) if dtype is not None else inner_shape.dtype
        self._inner = math_ops.cast(inner_shape, self._dtype)

    @classmethod
    def from_tensor(cls, t: Any, dtype: Any = None) -> DynamicRaggedShape:
        """The shape of a Tensor or RaggedTensor (`dtype`: int32 or int64, default int64)."""
        dtype = _dtypes.as_dtype(dtype or _dtypes.int64)
        if hasattr(t, "nested_row_splits"):
            partitions = tuple(RowPartition(math_ops.cast(s, dtype))
                               for s in t.nested_row_splits)
            return cls(partitions, array_ops.shape(t.flat_values, out_type=dtype), dtype)
        from tapeflow.framework.constant import convert_to_tensor

        return cls((), array_ops.shape(convert_to_tensor(t), out_type=dtype), dtype)

    @property
    def dtype(self) -> _dtypes.DType:
        return self._dtype

    @property
    def row_partitions(self) -> tuple:
        return self._partitions

    @property
    def num_row_partitions(self) -> int:
        return len(self._partitions)

    @property
    def inner_shape(self) -> Tensor:
        return self._inner

    @property
    def rank(self) -> int | None:
        inner = self._inner.shape[0]
        return None if inner is None else int(inner) + len(self._partitions)

    def is_uniform(self, axis: int) -> bool:
        return axis == 0 or axis > len(self._partitions)

    def __getitem__(self, index: Any) -> Tensor:
        if not isinstance(index, int):
            raise TypeError(f"DynamicRaggedShape: only integer indices are supported, got "
                            f"{index!r}")
        rank = self.rank
        if index < 0:
            if rank is None:
                raise ValueError("DynamicRaggedShape: negative index with an unknown rank")
            index += rank
        if rank is not None and not 0 <= index < rank:
            raise IndexError(f"Index {index} is out of range for a shape of rank {rank}")
        if not self._partitions:
            return self._inner[index]
        if index == 0:
            return math_ops.cast(self._partitions[0].nrows(), self._dtype)
        if index <= len(self._partitions):
            raise ValueError(f"Index {index} is not uniform")
        return self._inner[index - len(self._partitions)]

    def static_lengths(self) -> list:
        """Dimension sizes; a ragged dimension is the tuple of its row lengths (eager)."""
        out: list = []
        if self._partitions:
            out.append(_static(self._partitions[0].nrows()))
            for p in self._partitions:
                lengths = p.row_lengths()
                out.append(tuple(lengths.numpy().tolist()) if isinstance(lengths, EagerTensor)
                           else None)
            inner = self._inner[1:]
        else:
            inner = self._inner
        out.extend(inner.numpy().tolist() if isinstance(inner, EagerTensor)
                   else [None] * (inner.shape[0] or 0))
        return out

    def __repr__(self) -> str:
        lengths = ", ".join(str(d) for d in self.static_lengths())
        return (f"<DynamicRaggedShape lengths=[{lengths}] "
                f"num_row_partitions={self.num_row_partitions}>")


def _static(t: Any) -> Any:
    return int(t.numpy()) if isinstance(t, EagerTensor) else None
