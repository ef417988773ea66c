"""`tf.io.parse_single_example` / `parse_example`: serialized tf.train.Example -> tensors."""

from __future__ import annotations

import functools
import itertools
from typing import Any, NamedTuple

import numpy as np

from tapeflow.data import structure, vectorize
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework import errors
from tapeflow.framework.constant import convert_to_tensor
from tapeflow.framework.dispatch import apply, op
from tapeflow.framework.tensor import EagerTensor
from tapeflow.io import example_scan
from tapeflow.io.example_pb import Example
from tapeflow.sparse.tensor import SparseTensor


class FixedLenFeature(NamedTuple):
    """A feature with a known shape; `default_value` fills in when it is missing."""

    shape: Any
    dtype: Any
    default_value: Any = None


class VarLenFeature(NamedTuple):
    """A feature of any length, parsed to a SparseTensor."""

    dtype: Any


class RaggedFeature(NamedTuple):
    """A feature of any length, parsed to a RaggedTensor (a 1-D tensor for one Example).
    Only the flat form: `partitions` (nested row splits from other keys) are not supported."""

    dtype: Any
    value_key: str | None = None
    partitions: tuple = ()
    row_splits_dtype: Any = _dtypes.int64
    validate: bool = False


class SparseFeature(NamedTuple):
    """A SparseTensor assembled from an Example's index feature(s) and value feature: value i
    sits at position index[i] (one index key per dense dim; `size` gives the dense shape)."""

    index_key: Any
    value_key: str
    dtype: Any
    size: Any
    already_sorted: bool = False


def _expand_sparse_features(features: dict) -> dict:
    """The VarLenFeatures that SparseFeatures read (their index and value keys), next to the
    other features; a key asked for twice must be asked for the same way."""
    out = {k: v for k, v in features.items() if not isinstance(v, SparseFeature)}
    for key, spec in features.items():
        if not isinstance(spec, SparseFeature):
            continue
        keys = [spec.index_key] if isinstance(spec.index_key, str) else list(spec.index_key)
        needed = [(k, VarLenFeature(_dtypes.int64)) for k in keys]
        needed.append((spec.value_key, VarLenFeature(spec.dtype)))
        for k, want in needed:
            have = out.setdefault(k, want)
            if _dtypes.as_dtype(have.dtype) != _dtypes.as_dtype(want.dtype) or not isinstance(
                    have, VarLenFeature):
                raise ValueError(f"SparseFeature {key!r} reads {k!r} as {want}, but the "
                                 f"features also ask for it as {have}")
    return out


def _assemble_sparse_features(features: dict, parsed: dict, single: bool) -> dict:
    """Each SparseFeature's SparseTensor from the VarLen SparseTensors it read."""
    from tapeflow.ops import array_ops, math_ops
    from tapeflow.sparse.ops import reorder

    out = {}
    for key, spec in features.items():
        if not isinstance(spec, SparseFeature):
            out[key] = parsed[key]
            continue
        keys = [spec.index_key] if isinstance(spec.index_key, str) else list(spec.index_key)
        sizes = [spec.size] if np.ndim(spec.size) == 0 else list(spec.size)
        if len(sizes) != len(keys):
            raise ValueError(f"SparseFeature {key!r}: {len(keys)} index keys but size "
                             f"{spec.size}")
        values = parsed[spec.value_key]
        columns = [array_ops.expand_dims(parsed[k].values, 1) for k in keys]
        if not single:
            columns.insert(0, values.indices[:, :1])
        indices = array_ops.concat(columns, 1)
        shape = convert_to_tensor(np.asarray(sizes, np.int64))
        if not single:
            shape = array_ops.concat([values.dense_shape[:1], shape], 0)
        sp = SparseTensor(math_ops.cast(indices, _dtypes.int64), values.values, shape)
        out[key] = sp if spec.already_sorted else reorder(sp)
    return out


class FixedLenSequenceFeature(NamedTuple):
    """A feature whose leading dimension varies (shape gives the rest)."""

    shape: Any
    dtype: Any
    allow_missing: bool = False
    default_value: Any = None


_KIND = {"bytes_list": _dtypes.string, "float_list": _dtypes.float32,
         "int64_list": _dtypes.int64}
_SCAN_KIND = {example_scan.BYTES: _dtypes.string, example_scan.FLOAT: _dtypes.float32,
              example_scan.INT64: _dtypes.int64}


class _Column(NamedTuple):
    """The values of one feature across a batch: flat values, per-record counts, presence."""

    values: np.ndarray
    counts: np.ndarray
    present: np.ndarray


def _mismatch(key: str, found: _dtypes.DType, dtype: _dtypes.DType) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(
        f"Feature {key!r}: data type {found.name} in the Example does not match the "
        f"requested dtype {dtype.name}")


def values_of(fmap: Any, key: str, dtype: _dtypes.DType) -> np.ndarray | None:
    """The values of feature `key` in a Features map, checked against the requested dtype;
    None if absent."""
    if key not in fmap:
        return None
    return feature_values(fmap[key], key, dtype)


def feature_values(feature: Any, key: str, dtype: _dtypes.DType) -> np.ndarray:
    """The values of one tf.train.Feature as a NumPy array of `dtype` (checked)."""
    kind = feature.WhichOneof("kind")
    if kind is None:
        return np.asarray([], dtype=dtype._np)
    if _KIND[kind] is not dtype:
        raise _mismatch(key, _KIND[kind], dtype)
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


def decode_records(records: list, message: Any) -> list:
    """Each serialized record as a `message` (protobuf class), with TF's error for bad data."""
    out = []
    for i, data in enumerate(records):
        try:
            out.append(message.FromString(data))
        except Exception as e:  # noqa: BLE001 - protobuf's DecodeError and friends
            raise errors.InvalidArgumentError(
                f"Could not parse example input (example {i} of the batch): {e}") from None
    return out


def _columns_protobuf(records: list, features: dict) -> dict:
    """Columns by parsing each record with protobuf (records the scanner leaves to it)."""
    return columns_of([e.features.feature for e in decode_records(records, Example)], features)


def columns_of(fmaps: list, features: dict) -> dict:
    """{key: _Column} from one Features map per record."""
    per_key: dict = {key: [values_of(fmap, key, _dtypes.as_dtype(spec.dtype)) for fmap in fmaps]
                     for key, spec in features.items()}
    out = {}
    for key, spec in features.items():
        dtype = _dtypes.as_dtype(spec.dtype)
        found = per_key[key]
        present = np.asarray([v is not None for v in found], dtype=bool)
        parts = [v for v in found if v is not None]
        values = np.concatenate(parts) if parts else np.asarray([], dtype=dtype._np)
        if dtype is _dtypes.string and values.dtype != object:
            values = values.astype(object)
        counts = np.asarray([0 if v is None else len(v) for v in found], dtype=np.int64)
        out[key] = _Column(values, counts, present)
    return out


def _columns_scanned(records: list, features: dict) -> dict | None:
    """Columns from the compiled scanner; None when some record needs protobuf's merging."""
    joined = b"".join(records)
    buf = np.frombuffer(joined, dtype=np.uint8)
    n = len(records)
    offsets = np.fromiter(itertools.accumulate(map(len, records), initial=0), np.int64, n + 1)
    keys, key_off = _key_bytes(tuple(features))
    kind = np.zeros((n, len(features)), dtype=np.int8)
    span = np.zeros((n, len(features), 2), dtype=np.int64)
    status = np.zeros(n, dtype=np.int8)
    seen = example_scan.scan(buf, offsets, keys, key_off, kind, span, status)
    if seen & (1 << example_scan.FALLBACK):
        return None
    if seen:
        bad = int(np.argmax(status == example_scan.MALFORMED))
        raise errors.InvalidArgumentError(
            f"Could not parse example input (example {bad} of the batch): malformed "
            f"tf.train.Example ({len(records[bad])} bytes)")
    out = {}
    kinds_present = set(np.unique(kind).tolist())
    for k, (key, spec) in enumerate(features.items()):
        dtype = _dtypes.as_dtype(spec.dtype)
        column_kind = kind[:, k]
        for code, found in _SCAN_KIND.items():
            if found is not dtype and code in kinds_present and (column_kind == code).any():
                raise _mismatch(key, found, dtype)
        counts = np.empty(n, dtype=np.int64)
        first = np.empty(n, dtype=np.int64)
        total = example_scan.count(buf, kind, span, k, counts, first)
        if total < 0:
            raise errors.InvalidArgumentError(
                f"Could not parse example input (example {-1 - total} of the batch): "
                f"malformed list in feature {key!r}")
        if dtype is _dtypes.string:
            spans = np.empty((total, 2), dtype=np.int64)
            example_scan.string_spans(buf, kind, span, k, first, spans)
            values = np.empty(total, dtype=object)
            values[:] = [joined[s:e] for s, e in spans.tolist()]
        else:
            raw = np.empty(4 * total if dtype is _dtypes.float32 else 0, dtype=np.uint8)
            ints = np.empty(total if dtype is _dtypes.int64 else 0, dtype=np.int64)
            example_scan.fill_numbers(buf, kind, span, k, first, raw, ints)
            values = raw.view("<f4").astype(np.float32) if dtype is _dtypes.float32 else ints
        out[key] = _Column(values, counts, column_kind != example_scan.ABSENT)
    return out


@functools.lru_cache(maxsize=64)
def _key_bytes(names: tuple) -> tuple[np.ndarray, np.ndarray]:
    """The requested feature names joined, and their offsets (the scanner's key table)."""
    encoded = [k.encode() for k in names]
    keys = np.frombuffer(b"".join(encoded) or b"\0", dtype=np.uint8)
    key_off = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(k) for k in encoded], out=key_off[1:])
    return keys, key_off   # (read, never written, by the kernels)


def _columns(records: list, features: dict) -> dict:
    columns = _columns_scanned(records, features) if example_scan.AVAILABLE else None
    return _columns_protobuf(records, features) if columns is None else columns


def _fixed(key: str, spec: FixedLenFeature, col: _Column, dtype: _dtypes.DType) -> np.ndarray:
    shape = tuple(int(d) for d in spec.shape)
    size = int(np.prod(shape)) if shape else 1
    n = len(col.counts)
    wrong = col.present & (col.counts != size)
    if wrong.any():
        i = int(np.argmax(wrong))
        raise errors.InvalidArgumentError(
            f"Key: {key}. Can't parse serialized Example (example {i} of the batch): expected "
            f"{size} values for shape {list(shape)}, got {int(col.counts[i])}")
    if col.present.all():
        return col.values.reshape((n,) + shape)
    if spec.default_value is None:
        i = int(np.argmin(col.present))
        raise errors.InvalidArgumentError(
            f"Feature: {key} (data type: {dtype.name}) is required but could not be found "
            f"(example {i} of the batch).")
    out = np.empty((n,) + shape, dtype=dtype._np)
    out[:] = np.broadcast_to(structure.to_array(spec.default_value, dtype), shape)
    out[col.present] = col.values.reshape((-1,) + shape)
    return out


def _sequence(key: str, spec: FixedLenSequenceFeature, col: _Column,
              dtype: _dtypes.DType) -> np.ndarray:
    inner = tuple(int(d) for d in spec.shape)
    size = int(np.prod(inner)) if inner else 1
    if not spec.allow_missing and not col.present.all():
        i = int(np.argmin(col.present))
        raise errors.InvalidArgumentError(f"Feature {key!r} is required (example {i} of the "
                                          f"batch)")
    if (col.counts % size).any():
        i = int(np.argmax(col.counts % size != 0))
        raise errors.InvalidArgumentError(
            f"Key: {key}, example {i} of the batch: {int(col.counts[i])} values are not a "
            f"multiple of the inner shape {list(inner)}")
    rows = col.counts // size
    longest = int(rows.max()) if len(rows) else 0
    pad = b"" if dtype is _dtypes.string else (spec.default_value or 0)
    out = np.full((len(rows), longest) + inner, pad, dtype=dtype._np)
    mask = np.arange(longest)[None, :] < rows[:, None]
    out[mask] = col.values.reshape((-1,) + inner)
    return out


def _sparse(col: _Column, dtype: _dtypes.DType, single: bool) -> list:
    """[indices, values, dense_shape] of a VarLenFeature's SparseTensor."""
    n, total = len(col.counts), int(col.counts.sum())
    values = col.values.astype(dtype._np, copy=False)
    if single:
        return [np.arange(total, dtype=np.int64).reshape(-1, 1), values,
                np.asarray([total], dtype=np.int64)]
    batch = np.repeat(np.arange(n, dtype=np.int64), col.counts)
    starts = np.repeat(np.cumsum(col.counts) - col.counts, col.counts)
    indices = np.stack([batch, np.arange(total, dtype=np.int64) - starts], axis=1)
    width = int(col.counts.max()) if n else 0
    return [indices, values, np.asarray([n, width], dtype=np.int64)]


def _source(key: str, spec: Any) -> str:
    """The Example key a feature reads (a RaggedFeature may name another `value_key`)."""
    if isinstance(spec, RaggedFeature):
        if spec.partitions:
            raise NotImplementedError("tf.io.RaggedFeature with partitions")
        return spec.value_key or key
    return key


def feature_arrays(key: str, spec: Any, col: _Column, single: bool) -> list:
    """The arrays one parsed feature travels as (see `feature_specs` for their layout)."""
    dtype = _dtypes.as_dtype(spec.dtype)
    if isinstance(spec, VarLenFeature):
        return _sparse(col, dtype, single)
    if isinstance(spec, RaggedFeature):
        values = col.values.astype(dtype._np, copy=False)
        if single:
            return [values]
        splits = np.zeros(len(col.counts) + 1, _dtypes.as_dtype(spec.row_splits_dtype)._np)
        np.cumsum(col.counts, out=splits[1:])
        return [values, splits]
    out = _sequence(key, spec, col, dtype) if isinstance(spec, FixedLenSequenceFeature) \
        else _fixed(key, spec, col, dtype)
    return [out[0, ...] if single else out]


def feature_specs(spec: Any, batch: tuple) -> list:
    """Static (shape, dtype) of each array of `feature_arrays` (batch: () or (n,))."""
    dtype = _dtypes.as_dtype(spec.dtype)
    if isinstance(spec, VarLenFeature):
        rank = len(batch) + 1
        return [((None, rank), _dtypes.int64), ((None,), dtype), ((rank,), _dtypes.int64)]
    if isinstance(spec, RaggedFeature):
        splits = (None if batch[0] is None else batch[0] + 1,) if batch else None
        return [((None,), dtype)] + ([] if splits is None else
                                     [(splits, _dtypes.as_dtype(spec.row_splits_dtype))])
    shape = tuple(int(d) for d in spec.shape)
    if isinstance(spec, FixedLenSequenceFeature):
        shape = (None,) + shape
    return [(batch + shape, dtype)]


def rebuild(spec: Any, arrays: list) -> Any:
    """The user-facing value of one parsed feature from its arrays."""
    if isinstance(spec, VarLenFeature):
        return SparseTensor(*arrays)
    if isinstance(spec, RaggedFeature) and len(arrays) == 2:
        from tapeflow.ragged.tensor import RaggedTensor

        return RaggedTensor.from_row_splits(arrays[0], arrays[1], validate=False)
    return arrays[0]


def _features_attr(features: dict) -> tuple:
    return tuple(sorted(features.items()))


def _parse_example_kernel(serialized, *, features, single):
    data = _serialized(serialized)
    expected = 0 if single else 1
    if data.ndim != expected:
        raise errors.InvalidArgumentError(
            f"{'parse_single_example' if single else 'parse_example'}: serialized must be "
            f"{'a scalar' if single else 'a vector'}, got shape {list(data.shape)}")
    columns = _columns(data.ravel().tolist(), {_source(k, v): v for k, v in features})
    return tuple(a for key, spec in features
                 for a in feature_arrays(key, spec, columns[_source(key, spec)], single))


def _parse_example_shape(serialized, *, features, single):
    shape = serialized[0]
    batch = () if single else ((None,) if shape is None or not shape else (shape[0],))
    return [s for _, spec in features for s in feature_specs(spec, batch)]


_parse_example = op("ParseExampleV2", multi_output=True, shape=_parse_example_shape)(
    _parse_example_kernel)


def parse_single_example(serialized: Any, features: dict, name: str | None = None,
                         example_names: Any = None) -> dict:
    """Parse one serialized Example into a dict of tensors (SparseTensor for VarLenFeature).

    Inside a map that tf.data runs on whole batches (map-then-batch fusion), `serialized` is
    the batch's vector and this parses it as `parse_example` does."""
    x = convert_to_tensor(serialized, _dtypes.string)
    if vectorize.active() and x.shape.rank == 1:
        return parse_example(x, features)
    if x.shape.rank not in (0, None):
        raise errors.InvalidArgumentError(
            f"parse_single_example: serialized must be a scalar, got shape {x.shape}; "
            f"use parse_example for batches\n{errors.user_line()}")
    plain = _expand_sparse_features(features)
    parsed = _unpack(plain, apply(_parse_example, x, features=_features_attr(plain),
                                  single=True), single=True)
    return _assemble_sparse_features(features, parsed, single=True)


def parse_example(serialized: Any, features: dict, name: str | None = None,
                  example_names: Any = None) -> dict:
    """Parse a vector of serialized Examples into batched tensors."""
    x = convert_to_tensor(serialized, _dtypes.string)
    if x.shape.rank not in (1, None):
        raise errors.InvalidArgumentError(
            f"parse_example: serialized must be a vector, got shape {x.shape}\n"
            f"{errors.user_line()}")
    plain = _expand_sparse_features(features)
    parsed = _unpack(plain, apply(_parse_example, x, features=_features_attr(plain),
                                  single=False), single=False)
    return _assemble_sparse_features(features, parsed, single=False)


def _unpack(features: dict, tensors: tuple, single: bool) -> dict:
    """{key: value} from the op's flat outputs, in sorted-key order (the op's)."""
    out, i = {}, 0
    batch = () if single else (None,)
    for key, spec in _features_attr(features):
        n = len(feature_specs(spec, batch))
        out[key] = rebuild(spec, list(tensors[i:i + n]))
        i += n
    return {key: out[key] for key in features}


def serialized_example(features: dict) -> bytes:
    """Build and serialize an Example from {name: list of floats, ints or bytes} (test helper)."""
    from tapeflow.io.example_pb import BytesList, Feature, Features, FloatList, Int64List

    fmap = {}
    for key, values in features.items():
        arr = np.asarray(values.numpy() if isinstance(values, EagerTensor) else values)
        if arr.dtype.kind in "SU" and isinstance(values, (list, tuple)):
            arr = np.empty(len(values), dtype=object)  # NumPy's bytes dtype drops trailing NULs
            arr[:] = list(values)
        if arr.dtype.kind in "SUO":
            items = [v.encode() if isinstance(v, str) else bytes(v) for v in arr.ravel()]
            fmap[key] = Feature(bytes_list=BytesList(value=items))
        elif arr.dtype.kind == "f":
            fmap[key] = Feature(float_list=FloatList(value=arr.ravel().tolist()))
        else:
            fmap[key] = Feature(int64_list=Int64List(value=arr.ravel().astype(np.int64).tolist()))
    return Example(features=Features(feature=fmap)).SerializeToString()
