"""Ragged and sparse components in pipelines: slicing, batching, specs, ``ragged_batch``.

Composite components travel through the pipeline as one unit (see structure.to_array); these
helpers are what batching and ``from_tensor_slices`` do with them, as TensorFlow does:
batching RaggedTensors adds a uniform outer dim, batching SparseTensors prefixes a batch index
(dense shape: the largest element's), and slicing takes rows.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from tapeflow.data.dataset import Dataset
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework.composite import CompositeTensor
from tapeflow.framework.shapes import TensorShape
from tapeflow.framework.tensor import EagerTensor


def is_composite(x: Any) -> bool:
    return isinstance(x, CompositeTensor)


def nrows(x: Any) -> int:
    return int(x.shape[0]) if x.shape[0] is not None else int(x.nrows())


def row(x: Any, i: int) -> Any:
    """Element i along the first dim of a ragged or sparse component."""
    from tapeflow.sparse.tensor import SparseTensor

    if isinstance(x, SparseTensor):
        idx = x.indices.numpy()
        keep = idx[:, 0] == i
        return SparseTensor(idx[keep][:, 1:], x.values.numpy()[keep], x.dense_shape.numpy()[1:])
    out = x[i]
    return out._value if isinstance(out, EagerTensor) else out


def element_spec(x: Any) -> Any:
    """The spec of one row of `x` (ragged rows of ragged_rank 1 are dense tensors)."""
    from tapeflow.framework.tensor_spec import TensorSpec
    from tapeflow.ragged.tensor import RaggedTensor, RaggedTensorSpec
    from tapeflow.sparse.tensor import SparseTensorSpec

    if isinstance(x, RaggedTensor):
        if x.ragged_rank == 1:
            return TensorSpec(x.shape[1:], x.dtype)
        return RaggedTensorSpec(x.shape[1:], x.dtype, x.ragged_rank - 1, x.row_splits_dtype)
    return SparseTensorSpec(x.shape[1:], x.dtype)


def stack(elements: list) -> Any:
    """Batch composite elements (all ragged, or all sparse)."""
    from tapeflow.ragged.dispatch import stack as ragged_stack
    from tapeflow.sparse.tensor import SparseTensor

    if isinstance(elements[0], SparseTensor):
        shapes = np.stack([e.dense_shape.numpy() for e in elements])
        indices = [np.concatenate([np.full((len(e.indices.numpy()), 1), b), e.indices.numpy()],
                                  1) for b, e in enumerate(elements)]
        values = np.concatenate([e.values.numpy() for e in elements])
        dense_shape = np.concatenate([[len(elements)], shapes.max(0)])
        return SparseTensor(np.concatenate(indices).astype(np.int64), values, dense_shape)
    return ragged_stack(elements)


def batched_spec(spec: Any, batch: int | None) -> Any:
    from tapeflow.ragged.tensor import RaggedTensorSpec
    from tapeflow.sparse.tensor import SparseTensorSpec

    shape = TensorShape([batch]).concatenate(spec.shape)
    if isinstance(spec, SparseTensorSpec):
        return SparseTensorSpec(shape, spec.dtype)
    return RaggedTensorSpec(shape, spec.dtype, spec.ragged_rank + 1, spec.row_splits_dtype)


class RaggedBatchDataset(Dataset):
    """``ragged_batch``: batch elements of different lengths into RaggedTensors (no padding)."""

    def __init__(self, input_dataset: Dataset, batch_size: int, drop_remainder: bool,
                 row_splits_dtype: Any):
        self._inputs = (input_dataset,)
        self._batch_size = batch_size
        self._drop_remainder = drop_remainder
        self._splits_dtype = _dtypes.as_dtype(row_splits_dtype)

    def _iterate(self, ctx: Any) -> Iterator[Any]:
        from tapeflow.data import structure

        pending: list = []
        dense = self._dense_columns()
        source = self._inputs[0]._iterate(ctx)
        try:
            for element in source:
                pending.append(element)
                if len(pending) == self._batch_size:
                    yield self._batch(pending, structure, dense)
                    pending = []
            if pending and not self._drop_remainder:
                yield self._batch(pending, structure, dense)
        finally:
            source.close()

    def _dense_columns(self) -> list[bool]:
        """Which dense components stay dense. TF keeps those of a fully known static shape;
        here a spec may come from probing one element (a map), so a component stays dense
        when its spec is fully defined and the first batch's elements agree on its shape."""
        from tapeflow.data import structure
        from tapeflow.data.iterator import IterContext

        if getattr(self, "_dense", None) is None:
            source = self._inputs[0]
            dense = [_fixed_shape(spec) for spec in structure.flatten(source.element_spec)]
            if any(dense):
                gen = source._iterate(IterContext(source.options()))
                try:
                    first = [structure.flatten(e) for _, e in zip(range(self._batch_size), gen)]
                finally:
                    gen.close()
                dense = [d and all(np.shape(e[i]) == np.shape(first[0][i]) for e in first)
                         for i, d in enumerate(dense)]
            self._dense = dense
        return self._dense

    def _batch(self, elements: list, structure: Any, dense: list[bool]) -> Any:
        columns = zip(*(structure.flatten(e) for e in elements))
        return structure.pack_like(elements[0], [self._column(list(c), d)
                                                 for c, d in zip(columns, dense)])

    def _column(self, leaves: list, dense: bool) -> Any:
        from tapeflow.framework.constant import convert_to_tensor
        from tapeflow.ragged.tensor import RaggedTensor

        if is_composite(leaves[0]):
            return stack(leaves)
        if leaves[0].ndim == 0 or dense:
            return np.stack(leaves)
        lengths = np.asarray([len(a) for a in leaves], self._splits_dtype._np)
        values = convert_to_tensor(np.concatenate(leaves))
        return RaggedTensor.from_row_lengths(values, convert_to_tensor(lengths), validate=False)

    def _compute_spec(self) -> Any:
        from tapeflow.data import structure
        from tapeflow.ragged.tensor import RaggedTensorSpec

        def one(s: Any, dense: bool) -> Any:
            if is_composite_spec(s):
                return batched_spec(s, None)
            if dense or s.shape.rank == 0:
                return structure.batched_spec(s, None)
            return RaggedTensorSpec(TensorShape([None, None]).concatenate(s.shape[1:]), s.dtype,
                                    1, self._splits_dtype)

        spec = self._inputs[0].element_spec
        flat = [one(s, d) for s, d in zip(structure.flatten(spec), self._dense_columns())]
        return structure.pack_like(spec, flat)


def _fixed_shape(spec: Any) -> bool:
    """A dense component whose every dimension is known (ragged_batch keeps it dense)."""
    return not is_composite_spec(spec) and spec.shape.is_fully_defined()


def is_composite_spec(spec: Any) -> bool:
    from tapeflow.framework.composite import TypeSpec

    return isinstance(spec, TypeSpec)
