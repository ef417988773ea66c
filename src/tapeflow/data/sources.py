"""Datasets that create elements: tensor slices, a single tensor, ranges, Python generators, zip."""

from __future__ import annotations

import glob
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from tapeflow.data import chunks, composite, structure
from tapeflow.data.dataset import INFINITE, UNKNOWN, Dataset
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework import errors
from tapeflow.framework.shapes import TensorShape, as_shape
from tapeflow.framework.tensor_spec import TensorSpec


class TensorSliceDataset(Dataset):
    """`from_tensor_slices`: element i is component[i] of every component."""

    def __init__(self, tensors: Any):
        value = structure.normalize(tensors)
        self._struct = value
        self._leaves = structure.flatten(value)
        sizes = {composite.nrows(a) if composite.is_composite(a) else
                 a.shape[0] if a.ndim else None for a in self._leaves}
        if None in sizes:
            raise errors.InvalidArgumentError(
                "from_tensor_slices(): every component needs at least one dimension to slice\n"
                f"{errors.user_line()}")
        if len(sizes) != 1:
            shapes = [a.shape for a in self._leaves]
            raise errors.InvalidArgumentError(
                f"from_tensor_slices(): all components must have the same size in their first "
                f"dimension, got shapes {shapes}\n{errors.user_line()}")
        self._n = sizes.pop()

    def _iterate(self, ctx: Any) -> Iterator[Any]:
        if any(composite.is_composite(a) for a in self._leaves):
            for i in range(self._n):
                yield structure.pack_like(self._struct, [
                    composite.row(a, i) if composite.is_composite(a) else a[i, ...]
                    for a in self._leaves])
            return
        if len(self._leaves) == 1 and not structure.is_nested(self._struct):
            leaf = self._leaves[0]
            for i in range(self._n):
                yield leaf[i, ...]
            return
        struct, leaves = self._struct, self._leaves
        for i in range(self._n):
            yield structure.pack_like(struct, [a[i, ...] for a in leaves])

    def _chunks(self, ctx: Any) -> Iterator[Any] | None:
        if any(composite.is_composite(a) for a in self._leaves):
            return None
        return self._slices()

    def _slices(self) -> Iterator[Any]:
        struct, leaves = self._struct, self._leaves
        for start in range(0, self._n, chunks.CHUNK):
            yield structure.pack_like(struct, [a[start:start + chunks.CHUNK] for a in leaves])

    def _compute_spec(self) -> Any:
        return structure.map_structure(
            lambda a: composite.element_spec(a) if composite.is_composite(a) else
            TensorSpec(a.shape[1:], _dtypes.from_numpy(a.dtype)), self._struct)

    def _cardinality(self) -> int:
        return self._n


class TensorDataset(Dataset):
    """`from_tensors`: a single element."""

    def __init__(self, tensors: Any):
        self._value = structure.normalize(tensors)

    def _iterate(self, ctx: Any) -> Iterator[Any]:
        yield self._value

    def _compute_spec(self) -> Any:
        return structure.spec_of(self._value)

    def _cardinality(self) -> int:
        return 1


class RangeDataset(Dataset):
    """`Dataset.range(start, stop, step)` as int64 scalars."""

    def __init__(self, *args: Any, dtype: Any = None):
        if not 1 <= len(args) <= 3:
            raise TypeError(f"range() takes 1 to 3 arguments, got {len(args)}")
        self._range = range(*(int(a) for a in args))
        self._dtype = _dtypes.int64 if dtype is None else _dtypes.as_dtype(dtype)

    def _iterate(self, ctx: Any) -> Iterator[Any]:
        np_dtype = self._dtype._np
        for i in self._range:
            yield np.asarray(i, dtype=np_dtype)

    def _compute_spec(self) -> Any:
        return TensorSpec([], self._dtype)

    def _cardinality(self) -> int:
        return len(self._range)


class GeneratorDataset(Dataset):
    """`from_generator`: calls `generator(*args)` for every iteration and checks what it yields."""

    def __init__(self, generator: Callable, output_types: Any, output_shapes: Any, args: Any,
                 output_signature: Any):
        if not callable(generator):
            raise TypeError(f"from_generator(): generator must be callable, got "
                            f"{type(generator).__name__}\n{errors.user_line()}")
        if output_signature is not None:
            if output_types is not None or output_shapes is not None:
                raise TypeError("from_generator(): give output_signature or output_types/"
                                f"output_shapes, not both\n{errors.user_line()}")
            spec = structure.map_structure(_as_spec, output_signature)
        elif output_types is not None:
            spec = _specs_from_types(output_types, output_shapes)
        else:
            raise TypeError("from_generator(): output_signature (or output_types) is required\n"
                            f"{errors.user_line()}")
        self._generator = generator
        self._spec_value = spec
        self._args = () if args is None else tuple(
            _arg_value(structure.to_array(a)) for a in args)
        self._name = getattr(generator, "__qualname__", repr(generator))

    def _iterate(self, ctx: Any) -> Iterator[Any]:
        gen = self._generator(*self._args)
        spec = self._spec_value
        dtypes = structure.map_structure(lambda s: s.dtype, spec)
        try:
            for value in gen:
                element = _convert_up_to(spec, dtypes, value, self._name)
                yield element
        finally:
            close = getattr(gen, "close", None)
            if close is not None:
                close()

    def _compute_spec(self) -> Any:
        return self._spec_value


def _arg_value(a: np.ndarray) -> Any:
    return a[()] if a.ndim == 0 else a


def _as_spec(s: Any) -> TensorSpec:
    if isinstance(s, TensorSpec):
        return s
    raise TypeError(f"from_generator(): output_signature must contain tf.TensorSpec objects, "
                    f"got {s!r}\n{errors.user_line()}")


def _specs_from_types(types: Any, shapes: Any) -> Any:
    """Pair an output_types structure with output_shapes (up to the types' nesting)."""
    if isinstance(types, dict):
        return {k: _specs_from_types(types[k], None if shapes is None else shapes[k])
                for k in types}
    if isinstance(types, tuple):
        shapes = (None,) * len(types) if shapes is None else tuple(shapes)
        return tuple(_specs_from_types(t, s) for t, s in zip(types, shapes))
    return TensorSpec(TensorShape(None) if shapes is None else as_shape(shapes),
                      _dtypes.as_dtype(types))


def _convert_up_to(spec: Any, dtypes: Any, value: Any, name: str) -> Any:
    """Convert a generator's value following the declared structure, checking shapes."""
    if isinstance(spec, dict):
        if not isinstance(value, dict):
            raise TypeError(f"generator {name} yielded {type(value).__name__}, expected a dict")
        return {k: _convert_up_to(spec[k], dtypes[k], value[k], name) for k in spec}
    if isinstance(spec, tuple):
        if not isinstance(value, (tuple, list)) or len(value) != len(spec):
            raise TypeError(f"generator {name} yielded {value!r}, which does not match the "
                            f"declared structure of {len(spec)} components")
        return tuple(_convert_up_to(s, d, v, name) for s, d, v in zip(spec, dtypes, value))
    try:
        arr = structure.to_array(value, dtypes)
    except (TypeError, ValueError) as e:
        raise TypeError(f"generator {name} yielded {value!r}, which cannot be converted to "
                        f"{dtypes.name}: {e}") from None
    if not spec.shape.is_compatible_with(arr.shape):
        raise TypeError(f"generator {name} yielded an element of shape {list(arr.shape)} where "
                        f"an element of shape {spec.shape} was expected")
    return arr


class ZipDataset(Dataset):
    """`Dataset.zip`: the inputs' elements in lockstep, nested like the given structure."""

    def __init__(self, datasets: Any):
        leaves = structure.flatten(datasets if structure.is_nested(datasets) else (datasets,))
        for d in leaves:
            if not isinstance(d, Dataset):
                raise TypeError(f"zip(): expected datasets, got {type(d).__name__}\n"
                                f"{errors.user_line()}")
        self._struct = datasets
        self._inputs = tuple(leaves)

    def _iterate(self, ctx: Any) -> Iterator[Any]:
        iterators = [d._iterate(ctx) for d in self._inputs]
        try:
            while True:
                flat = []
                for it in iterators:
                    try:
                        flat.append(next(it))
                    except StopIteration:
                        return
                yield structure.pack_like(self._struct, flat)
        finally:
            for it in iterators:
                it.close()

    def _compute_spec(self) -> Any:
        return structure.pack_like(self._struct, [d.element_spec for d in self._inputs])

    def _cardinality(self) -> int:
        cards = [d._cardinality() for d in self._inputs]
        finite = [c for c in cards if c >= 0]
        if finite:
            return min(finite)
        return UNKNOWN if UNKNOWN in cards else INFINITE


def list_files(file_pattern: Any, shuffle: bool | None, seed: int | None) -> Dataset:
    """The files matching `file_pattern`, sorted, then shuffled unless `shuffle=False`."""
    patterns = structure.to_array(file_pattern)
    names = sorted({m for p in np.atleast_1d(patterns).ravel()
                    for m in glob.glob(p.decode() if isinstance(p, bytes) else str(p))})
    if not names:
        raise errors.InvalidArgumentError(
            f"list_files(): no files matched pattern {patterns!r}\n{errors.user_line()}")
    ds: Dataset = TensorSliceDataset(np.asarray([n.encode() for n in names], dtype=object))
    if shuffle is None or shuffle:
        ds = ds.shuffle(len(names), seed=seed)
    return ds
