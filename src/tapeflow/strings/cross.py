"""Feature crosses: ``tf.sparse.cross`` / ``cross_hashed`` and ``tf.ragged.cross`` /
``cross_hashed``. Per batch row, every combination of one value from each input (the first
input varying slowest), joined by the separator ("_X_") or hashed as TensorFlow hashes them:
FingerprintCat64 over the features' hashes (Fingerprint64 of a string, an int64 as itself),
starting from hash_key (0xDECAFCAFFE), modulo num_buckets (or 2**63 - 1 without buckets).
tf.sparse.cross takes the SparseTensor inputs before the dense ones, as TF's op does."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from tapeflow._api import export
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework.constant import convert_to_tensor
from tapeflow.framework.dispatch import apply, op
from tapeflow.ops import array_ops, math_ops
from tapeflow.ragged.tensor import RaggedTensor
from tapeflow.sparse.tensor import SparseTensor
from tapeflow.strings.hashing import fingerprint64

_DEFAULT_HASH_KEY = 0xDECAFCAFFE
_MUL = 0xC6A4A7935BD1E995
_MASK = (1 << 64) - 1


def _shift_mix(v: int) -> int:
    return v ^ (v >> 47)


def _fingerprint_cat(fp1: int, fp2: int) -> int:
    result = fp1 ^ _MUL
    result ^= (_shift_mix((fp2 * _MUL) & _MASK) * _MUL) & _MASK
    result = (result * _MUL) & _MASK
    result = (_shift_mix(result) * _MUL) & _MASK
    return _shift_mix(result)


def _text(v: Any) -> bytes:
    return v if isinstance(v, bytes) else str(int(v)).encode()


def _feature_hash(v: Any) -> int:
    return fingerprint64(v) if isinstance(v, bytes) else int(v) & _MASK


def _cross_rule(*pairs, separator, hashed, num_buckets, hash_key):
    dtype = _dtypes.int64 if hashed else _dtypes.string
    return [((None,), dtype), ((None,), _dtypes.int64)]


@op("FeatureCross", multi_output=True, shape=_cross_rule)
def _cross(*pairs, separator, hashed, num_buckets, hash_key):
    """(values, row_splits) of the crosses of inputs given as (values, row_splits) pairs."""
    columns = [(pairs[i], pairs[i + 1]) for i in range(0, len(pairs), 2)]
    rows = len(columns[0][1]) - 1
    out, splits = [], [0]
    for r in range(rows):
        features = [values[splits_[r]:splits_[r + 1]].tolist() for values, splits_ in columns]
        for combo in itertools.product(*features):
            if hashed:
                h = hash_key
                for v in combo:
                    h = _fingerprint_cat(h, _feature_hash(v))
                out.append(h % num_buckets if num_buckets > 0 else h % (2**63 - 1))
            else:
                out.append(separator.join(_text(v) for v in combo))
        splits.append(len(out))
    if hashed:
        values = np.asarray(out, np.uint64).astype(np.int64)
    else:
        values = np.empty(len(out), dtype=object)
        values[:] = out
    return values, np.asarray(splits, np.int64)


def _pair(x: Any) -> list:
    """An input as [values, row_splits] (int64 values or strings)."""
    if isinstance(x, RaggedTensor):
        values, splits = x.flat_values, math_ops.cast(x.row_splits, _dtypes.int64)
    elif isinstance(x, SparseTensor):
        values, splits = x.values, apply(_row_splits, x.indices, x.dense_shape)
    else:
        t = convert_to_tensor(x)
        if t.shape.rank != 2:
            raise ValueError(f"cross: dense inputs must be 2-D, got shape {t.shape}")
        values = array_ops.reshape(t, [-1])
        splits = apply(_dense_splits_op, t)
    if values.dtype not in (_dtypes.string, _dtypes.int64):
        values = math_ops.cast(values, _dtypes.int64)
    return [values, splits]


@op("RowSplitsOfIndices", shape=lambda indices, shape: ((None,), _dtypes.int64))
def _row_splits(indices, shape):
    counts = np.bincount(indices[:, 0].astype(np.int64), minlength=int(shape[0]))
    return np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)


@op("RowSplitsOfDense", shape=lambda x: ((None,), _dtypes.int64), shape_only=(0,))
def _dense_splits_op(x):
    rows, width = x.shape
    return (np.arange(rows + 1) * width).astype(np.int64)


def _run(inputs: list, hashed: bool, num_buckets: int, hash_key: Any,
         separator: str | None) -> tuple:
    if not inputs:
        raise ValueError("cross: inputs must be a non-empty list")
    flat = [t for x in inputs for t in _pair(x)]
    sep = "_X_" if separator is None else separator
    return apply(_cross, *flat, separator=sep.encode(), hashed=hashed,
                 num_buckets=int(num_buckets), hash_key=int(hash_key or _DEFAULT_HASH_KEY))


def _sparse_first(inputs: list) -> list:
    return [x for x in inputs if isinstance(x, SparseTensor)] + \
        [x for x in inputs if not isinstance(x, SparseTensor)]


def _as_sparse(values: Any, splits: Any) -> SparseTensor:
    return RaggedTensor.from_row_splits(values, splits, validate=False).to_sparse()


@export("sparse.cross")
def cross(inputs: list, name: str | None = None, separator: str | None = None) -> SparseTensor:
    """The string crosses of 2-D SparseTensor and dense inputs, as a SparseTensor."""
    return _as_sparse(*_run(_sparse_first(list(inputs)), False, 0, None, separator))


@export("sparse.cross_hashed")
def cross_hashed(inputs: list, num_buckets: int = 0, hash_key: int | None = None,
                 name: str | None = None) -> SparseTensor:
    """The hashed crosses (int64 buckets) of 2-D SparseTensor and dense inputs."""
    return _as_sparse(*_run(_sparse_first(list(inputs)), True, num_buckets, hash_key, None))


@export("ragged.cross")
def ragged_cross(inputs: list, name: str | None = None) -> RaggedTensor:
    """The string crosses of RaggedTensor, SparseTensor and dense inputs (in their order)."""
    return RaggedTensor.from_row_splits(*_run(list(inputs), False, 0, None, None),
                                        validate=False)


@export("ragged.cross_hashed")
def ragged_cross_hashed(inputs: list, num_buckets: int = 0, hash_key: int | None = None,
                        name: str | None = None) -> RaggedTensor:
    """The hashed crosses of RaggedTensor, SparseTensor and dense inputs."""
    return RaggedTensor.from_row_splits(*_run(list(inputs), True, num_buckets, hash_key, None),
                                        validate=False)
