"""`tf.io.parse_single_example` / `parse_example`: serialized tf.train.Example -> tensors."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from tapeflow.data import structure
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework import errors
from tapeflow.framework.tensor import EagerTensor, wrap
from tapeflow.io.example_pb import Example
from tapeflow.io.sparse_tensor import SparseTensor


class FixedLenFeature(NamedTuple):
    """A feature with a known shape; `default_value` fills in when it is missing."""

    shape: Any
    dtype: Any
    default_value: Any = None


class VarLenFeature(NamedTuple):
    """A feature of any length, parsed to a SparseTensor."""

    dtype: Any


class FixedLenSequenceFeature(NamedTuple):
    """A feature whose leading dimension varies (shape gives the rest)."""

    shape: Any
    dtype: Any
    allow_missing: bool = False
    default_value: Any = None


_KIND = {"bytes_list": _dtypes.string, "float_list": _dtypes.float32,
         "int64_list": _dtypes.int64}


def _values(example: Any, key: str, dtype: _dtypes.DType) -> np.ndarray | None:
    """The values of feature `key`, checked against the requested dtype; None if absent."""
    fmap = example.features.feature
    if key not in fmap:
        return None
    feature = fmap[key]
    kind = feature.WhichOneof("kind")
    if kind is None:
        return np.asarray([], dtype=dtype._np)
    if _KIND[kind] is not dtype:
        raise errors.InvalidArgumentError(
            f"Feature {key!r}: data type {_KIND[kind].name} in the Example does not match the "
            f"requested dtype {dtype.name}")
    values = getattr(feature, kind).value
    if dtype is _dtypes.string:
        out = np.empty(len(values), dtype=object)
        out[:] = list(values)
        return out
    return np.asarray(values, dtype=dtype._np)


def _serialized(value: Any) -> np.ndarray:
    arr = structure.to_array(value)
    if arr.dtype != object:
        raise TypeError(f"serialized must be a string tensor, got dtype {arr.dtype}")
    return arr


def _parse_one(data: bytes, features: dict, index: int | None) -> dict:
    example = Example.FromString(data)
    out = {}
    where = "" if index is None else f" (example {index} of the batch)"
    for key, spec in features.items():
        dtype = _dtypes.as_dtype(spec.dtype)
        values = _values(example, key, dtype)
        if isinstance(spec, VarLenFeature):
            out[key] = np.asarray([], dtype=dtype._np) if values is None else values
        elif isinstance(spec, FixedLenSequenceFeature):
            inner = tuple(spec.shape)
            if values is None:
                if not spec.allow_missing:
                    raise errors.InvalidArgumentError(f"Feature {key!r} is required{where}")
                values = np.asarray([], dtype=dtype._np)
            out[key] = values.reshape((-1,) + inner)
        else:
            shape = tuple(spec.shape)
            if values is None:
                if spec.default_value is None:
                    raise errors.InvalidArgumentError(
                        f"Feature: {key} (data type: {dtype.name}) is required but could not be "
                        f"found{where}.")
                values = np.broadcast_to(structure.to_array(spec.default_value, dtype),
                                         shape).copy()
            size = int(np.prod(shape)) if shape else 1
            if values.size != size:
                raise errors.InvalidArgumentError(
                    f"Key: {key}. Can't parse serialized Example{where}: expected {size} values "
                    f"for shape {list(shape)}, got {values.size}")
            out[key] = values.reshape(shape)
    return out


def parse_single_example(serialized: Any, features: dict, name: str | None = None,
                         example_names: Any = None) -> dict:
    """Parse one serialized Example into a dict of tensors (SparseTensor for VarLenFeature)."""
    data = _serialized(serialized)
    if data.ndim != 0:
        raise errors.InvalidArgumentError(
            f"parse_single_example: serialized must be a scalar, got shape {list(data.shape)}; "
            f"use parse_example for batches\n{errors.user_line()}")
    parsed = _parse_one(data[()], features, None)
    out = {}
    for key, spec in features.items():
        v = parsed[key]
        if isinstance(spec, VarLenFeature):
            out[key] = SparseTensor(np.arange(len(v)).reshape(-1, 1), v, [len(v)])
        else:
            out[key] = wrap(v)
    return out


def parse_example(serialized: Any, features: dict, name: str | None = None,
                  example_names: Any = None) -> dict:
    """Parse a vector of serialized Examples into batched tensors."""
    data = _serialized(serialized)
    if data.ndim != 1:
        raise errors.InvalidArgumentError(
            f"parse_example: serialized must be a vector, got shape {list(data.shape)}\n"
            f"{errors.user_line()}")
    rows = [_parse_one(d, features, i) for i, d in enumerate(data)]
    out: dict[str, Any] = {}
    for key, spec in features.items():
        dtype = _dtypes.as_dtype(spec.dtype)
        column = [r[key] for r in rows]
        if isinstance(spec, VarLenFeature):
            indices = [(b, i) for b, v in enumerate(column) for i in range(len(v))]
            values = (np.concatenate(column) if column else np.asarray([], dtype=dtype._np))
            width = max((len(v) for v in column), default=0)
            out[key] = SparseTensor(np.asarray(indices, dtype=np.int64).reshape(-1, 2), values,
                                    [len(column), width])
        elif isinstance(spec, FixedLenSequenceFeature):
            longest = max((len(v) for v in column), default=0)
            pad = b"" if dtype is _dtypes.string else (spec.default_value or 0)
            batch = np.full((len(column), longest) + tuple(spec.shape), pad, dtype=dtype._np)
            for b, v in enumerate(column):
                batch[b, :len(v)] = v
            out[key] = wrap(batch)
        else:
            out[key] = wrap(np.stack(column) if column else
                            np.zeros((0,) + tuple(spec.shape), dtype=dtype._np))
    return out


def serialized_example(features: dict) -> bytes:
    """Build and serialize an Example from {name: list of floats, ints or bytes} (test helper)."""
    from tapeflow.io.example_pb import BytesList, Feature, Features, FloatList, Int64List

    fmap = {}
    for key, values in features.items():
        arr = np.asarray(values.numpy() if isinstance(values, EagerTensor) else values)
        if arr.dtype.kind in "SUO":
            items = [v.encode() if isinstance(v, str) else bytes(v) for v in arr.ravel()]
            fmap[key] = Feature(bytes_list=BytesList(value=items))
        elif arr.dtype.kind == "f":
            fmap[key] = Feature(float_list=FloatList(value=arr.ravel().tolist()))
        else:
            fmap[key] = Feature(int64_list=Int64List(value=arr.ravel().astype(np.int64).tolist()))
    return Example(features=Features(feature=fmap)).SerializeToString()
