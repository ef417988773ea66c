"""`batch`, `padded_batch`, `unbatch` and `window`: grouping consecutive elements."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from typing import Any

import numpy as np

from tapeflow.data import chunks, composite, structure, vectorize
from tapeflow.data.dataset import INFINITE, Dataset
from tapeflow.framework import errors
from tapeflow.framework.shapes import as_shape
from tapeflow.framework.tensor_spec import TensorSpec


def _batched_cardinality(n: int, batch_size: int, drop_remainder: bool) -> int:
    if n < 0:
        return n
    return n // batch_size if drop_remainder else -(-n // batch_size)


def stack(elements: list, what: str = "batch") -> Any:
    """Stack a list of same-structured elements along a new first dimension."""
    first = elements[0]
    if isinstance(first, np.ndarray):
        return _stack_leaf(elements, 0, what)
    columns = zip(*(structure.flatten(e) for e in elements))
    return structure.pack_like(first, [_stack_leaf(list(c), i, what)
                                       for i, c in enumerate(columns)])


def _stack_leaf(arrays: list, component: int, what: str) -> np.ndarray:
    if composite.is_composite(arrays[0]):  # RaggedTensor / SparseTensor components
        return composite.stack(arrays)
    try:
        return np.stack(arrays)
    except ValueError:
        shapes = [list(a.shape) for a in arrays]
        bad = next(i for i, s in enumerate(shapes) if s != shapes[0])
        raise errors.InvalidArgumentError(
            None, what,
            f"Cannot {what} tensors with different shapes in component {component}. First "
            f"element had shape {shapes[0]} and element {bad} had shape {shapes[bad]} "
            f"({arrays[0].dtype}); use padded_batch() for variable-length elements.") from None


class BatchDataset(Dataset):
    def __init__(self, input_dataset: Dataset, batch_size: int, drop_remainder: bool):
        self._inputs = (input_dataset,)
        self._batch_size = batch_size
        self._drop_remainder = drop_remainder
        self._where = errors.user_line()  # batches are made later, maybe on another thread

    def _iterate(self, ctx: Any) -> Iterator[Any]:
        try:
            yield from self._batches(ctx)
        except errors.InvalidArgumentError as e:
            if e.op != "batch" or not self._where:
                raise
            raise errors.InvalidArgumentError(
                e.node_def, e.op, f"{e.message}\nThe dataset's batch() was called at:\n"
                f"{self._where}") from None

    def _batches(self, ctx: Any) -> Iterator[Any]:
        fused = vectorize.fused_batches(self, ctx)
        if fused is not None:
            try:
                yield from fused
            finally:
                fused.close()
            return
        n = self._batch_size
        source = chunks.chunks_of(self._inputs[0], ctx)
        if source is not None:
            try:
                yield from chunks.rebatch(source, n, self._drop_remainder)
            finally:
                source.close()
            return
        source = self._inputs[0]._iterate(ctx)
        try:
            pending: list = []
            for element in source:
                pending.append(element)
                if len(pending) == n:
                    yield stack(pending)
                    pending = []
            if pending and not self._drop_remainder:
                yield stack(pending)
        finally:
            source.close()

    def _compute_spec(self) -> Any:
        return structure.batched_spec(self._inputs[0].element_spec, self._static_batch())

    def _static_batch(self) -> int | None:
        n = self._inputs[0]._cardinality()
        if self._drop_remainder or (n >= 0 and n % self._batch_size == 0) or n == INFINITE:
            return self._batch_size
        return None

    def _cardinality(self) -> int:
        return _batched_cardinality(self._inputs[0]._cardinality(), self._batch_size,
                                    self._drop_remainder)


class PaddedBatchDataset(BatchDataset):
    """Batch whose components are padded to `padded_shapes` (None dims: the batch maximum)."""

    def __init__(self, input_dataset: Dataset, batch_size: int, padded_shapes: Any,
                 padding_values: Any, drop_remainder: bool):
        super().__init__(input_dataset, batch_size, drop_remainder)
        self._padded_shapes = padded_shapes
        self._padding_values = padding_values

    def _targets(self, template: Any) -> list:
        """One TensorShape (or None: pad to max) per flattened component."""
        n = len(structure.flatten(template))
        if self._padded_shapes is None:
            return [None] * n
        shapes = _up_to(template, self._padded_shapes)
        if len(shapes) != n:
            raise ValueError(f"padded_batch(): padded_shapes has {len(shapes)} components, the "
                             f"elements have {n}")
        return [as_shape(s) for s in shapes]

    def _pads(self, template: Any) -> list:
        leaves = structure.flatten(template)
        if self._padding_values is None:
            return [b"" if a.dtype == object else 0 for a in leaves]
        values = _up_to(template, self._padding_values)
        return [structure.to_array(v).reshape(()) for v in values]

    def _iterate(self, ctx: Any) -> Iterator[Any]:
        n = self._batch_size
        source = self._inputs[0]._iterate(ctx)
        targets = pads = None
        try:
            pending: list = []
            for element in source:
                if targets is None:
                    targets, pads = self._targets(element), self._pads(element)
                pending.append(element)
                if len(pending) == n:
                    yield self._pad(pending, targets, pads)
                    pending = []
            if pending and not self._drop_remainder:
                yield self._pad(pending, targets, pads)
        finally:
            source.close()

    def _pad(self, elements: list, targets: list, pads: list) -> Any:
        columns = list(zip(*(structure.flatten(e) for e in elements)))
        out = []
        for i, (column, target, pad) in enumerate(zip(columns, targets, pads)):
            rank = column[0].ndim
            if any(a.ndim != rank for a in column):
                raise errors.InvalidArgumentError(
                    f"padded_batch(): component {i} has elements of different ranks")
            longest = [max(a.shape[d] for a in column) for d in range(rank)]
            if target is not None:
                if target.rank != rank:
                    raise errors.InvalidArgumentError(
                        f"padded_batch(): padded shape {target} for component {i} does not "
                        f"match its rank {rank}")
                for d, want in enumerate(target):
                    if want is not None:
                        if longest[d] > want:
                            raise errors.InvalidArgumentError(
                                f"padded_batch(): component {i} has size {longest[d]} in "
                                f"dimension {d}, larger than the padded shape {target}")
                        longest[d] = want
            batch = np.full([len(column)] + longest, pad, dtype=column[0].dtype)
            for j, a in enumerate(column):
                batch[(j,) + tuple(slice(0, s) for s in a.shape)] = a
            out.append(batch)
        return structure.pack_like(elements[0], out)

    def _compute_spec(self) -> Any:
        spec = self._inputs[0].element_spec
        flat = structure.flatten(spec)
        if self._padded_shapes is None:  # each dim padded to the batch's longest: a dim all
            targets = [s.shape for s in flat]  # elements share (known statically) stays known
        else:
            targets = [as_shape(s) for s in _up_to(spec, self._padded_shapes)]
        padded = [TensorSpec(t, s.dtype) for t, s in zip(targets, flat)]
        return structure.batched_spec(structure.pack_like(spec, padded), self._static_batch())


def _up_to(template: Any, value: Any) -> list:
    """Flatten `value` following `template`'s nesting (its leaves may be lists, like shapes)."""
    if isinstance(template, dict):
        return [x for k in sorted(template) for x in _up_to(template[k], value[k])]
    if isinstance(template, tuple):
        return [x for t, v in zip(template, value) for x in _up_to(t, v)]
    return [value]


class UnbatchDataset(Dataset):
    def __init__(self, input_dataset: Dataset):
        self._inputs = (input_dataset,)

    def _iterate(self, ctx: Any) -> Iterator[Any]:
        source = self._inputs[0]._iterate(ctx)
        try:
            for element in source:
                if isinstance(element, np.ndarray):
                    for i in range(element.shape[0]):
                        yield element[i, ...]
                    continue
                leaves = structure.flatten(element)
                sizes = {a.shape[0] for a in leaves}
                if len(sizes) != 1:
                    raise errors.InvalidArgumentError(
                        f"unbatch(): components have different batch sizes {sorted(sizes)}")
                for i in range(sizes.pop()):
                    yield structure.pack_like(element, [a[i, ...] for a in leaves])
        finally:
            source.close()

    def _compute_spec(self) -> Any:
        return structure.unbatched_spec(self._inputs[0].element_spec)


class DatasetSpec:
    """The spec of a component that is itself a dataset (elements of `window`)."""

    def __init__(self, element_spec: Any):
        self.element_spec = element_spec

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, DatasetSpec) and other.element_spec == self.element_spec

    def __repr__(self) -> str:
        return f"DatasetSpec({self.element_spec!r})"


class WindowDataset(Dataset):
    """Each element is a structure of datasets over `size` consecutive input elements."""

    def __init__(self, input_dataset: Dataset, size: int, shift: int, stride: int,
                 drop_remainder: bool):
        self._inputs = (input_dataset,)
        self._size, self._shift, self._stride = size, shift, stride
        self._drop_remainder = drop_remainder

    def _iterate(self, ctx: Any) -> Iterator[Any]:
        from tapeflow.data.sources import TensorSliceDataset

        size, shift, stride = self._size, self._shift, self._stride
        span = (size - 1) * stride + 1
        buffer: deque = deque()   # (index, element)
        start = 0
        source = self._inputs[0]._iterate(ctx)

        def window(items: list) -> Any:
            columns = zip(*(structure.flatten(e) for e in items))
            return structure.pack_like(items[0], [TensorSliceDataset(np.stack(c))
                                                  for c in columns])
        try:
            for index, element in enumerate(source):
                if index < start:
                    continue
                buffer.append((index, element))
                if index == start + span - 1:
                    yield window([e for i, e in buffer if (i - start) % stride == 0])
                    start += shift
                    while buffer and buffer[0][0] < start:
                        buffer.popleft()
            while not self._drop_remainder and buffer:
                items = [e for i, e in buffer if i >= start and (i - start) % stride == 0]
                if not items:
                    break
                yield window(items)
                start += shift
                while buffer and buffer[0][0] < start:
                    buffer.popleft()
        finally:
            source.close()

    def _compute_spec(self) -> Any:
        return structure.map_structure(lambda s: DatasetSpec(s), self._inputs[0].element_spec)

    def _cardinality(self) -> int:
        n = self._inputs[0]._cardinality()
        if n < 0:
            return n
        span = (self._size - 1) * self._stride + 1
        if self._drop_remainder:
            return max(0, (n - span) // self._shift + 1) if n >= span else 0
        return -(-n // self._shift)
