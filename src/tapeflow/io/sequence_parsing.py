"""`tf.io.parse_single_sequence_example` / `parse_sequence_example`: tf.train.SequenceExample
records (context features + feature lists) -> tensors.

The context is parsed as an Example's features are (io/parsing.py). A feature list is a sequence
of Features, one per step: `FixedLenSequenceFeature` stacks the steps ([steps, *shape], padded
across a batch, with the lengths in a third dict), `VarLenFeature` gives a SparseTensor indexed
by (step, position), `RaggedFeature` a RaggedTensor of steps. One primitive op parses a batch, so
it runs eagerly, in tf.data maps and inside tf.function.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework import errors
from tapeflow.framework.constant import convert_to_tensor
from tapeflow.framework.dispatch import apply, op
from tapeflow.io import parsing
from tapeflow.io.example_pb import SequenceExample
from tapeflow.io.parsing import FixedLenSequenceFeature, RaggedFeature, VarLenFeature

_SPLITS = _dtypes.int64


class _Steps(NamedTuple):
    """One feature list across a batch: flat values, values per step, steps per record."""

    values: np.ndarray
    counts: np.ndarray
    steps: np.ndarray
    present: np.ndarray


def _steps(records: list, key: str, dtype: _dtypes.DType) -> _Steps:
    parts, counts, steps, present = [], [], [], []
    for rec in records:
        lists = rec.feature_lists.feature_list
        found = key in lists
        present.append(found)
        features = lists[key].feature if found else []
        steps.append(len(features))
        for feature in features:
            values = parsing.feature_values(feature, key, dtype)
            parts.append(values)
            counts.append(len(values))
    values = np.concatenate(parts) if parts else np.asarray([], dtype=dtype._np)
    if dtype is _dtypes.string and values.dtype != object:
        values = values.astype(object)
    return _Steps(values.astype(dtype._np, copy=False), np.asarray(counts, np.int64),
                  np.asarray(steps, np.int64), np.asarray(present, bool))


def _fixed_steps(key: str, spec: FixedLenSequenceFeature, col: _Steps, single: bool) -> list:
    dtype = _dtypes.as_dtype(spec.dtype)
    inner = tuple(int(d) for d in spec.shape)
    size = int(np.prod(inner)) if inner else 1
    if not spec.allow_missing and not col.present.all():
        raise errors.InvalidArgumentError(
            f"Name: <unknown>, Feature list '{key}' is required but could not be found "
            f"(example {int(np.argmin(col.present))} of the batch)")
    if (col.counts != size).any():
        step = int(np.argmax(col.counts != size))
        raise errors.InvalidArgumentError(
            f"Name: <unknown>, Key: {key}, Index: {step}. Number of values != expected. "
            f"values size: {int(col.counts[step])} but output shape: {list(inner)}")
    longest = int(col.steps.max()) if len(col.steps) else 0
    pad = b"" if dtype is _dtypes.string else (spec.default_value or 0)
    out = np.full((len(col.steps), longest) + inner, pad, dtype=dtype._np)
    out[np.arange(longest)[None, :] < col.steps[:, None]] = col.values.reshape((-1,) + inner)
    if single:
        return [out[0]]
    return [out, col.steps.copy()]


def _sparse_steps(col: _Steps, single: bool) -> list:
    step_of_value = np.repeat(np.arange(len(col.counts), dtype=np.int64), col.counts)
    first_value = np.cumsum(col.counts) - col.counts
    position = np.arange(len(col.values), dtype=np.int64) - np.repeat(first_value, col.counts)
    record_of_step = np.repeat(np.arange(len(col.steps), dtype=np.int64), col.steps)
    first_step = np.cumsum(col.steps) - col.steps
    step_in_record = step_of_value - np.repeat(first_step, col.steps)[step_of_value]
    width = int(col.counts.max()) if len(col.counts) else 0
    longest = int(col.steps.max()) if len(col.steps) else 0
    if single:
        return [np.stack([step_in_record, position], axis=1).reshape(-1, 2), col.values,
                np.asarray([longest, width], np.int64)]
    indices = np.stack([record_of_step[step_of_value], step_in_record, position], axis=1)
    return [indices.reshape(-1, 3), col.values,
            np.asarray([len(col.steps), longest, width], np.int64)]


def _ragged_steps(col: _Steps, spec: RaggedFeature, single: bool) -> list:
    splits_dtype = _dtypes.as_dtype(spec.row_splits_dtype)._np
    inner = np.zeros(len(col.counts) + 1, splits_dtype)
    np.cumsum(col.counts, out=inner[1:])
    if single:
        return [col.values, inner]
    outer = np.zeros(len(col.steps) + 1, splits_dtype)
    np.cumsum(col.steps, out=outer[1:])
    return [col.values, outer, inner]


def _list_arrays(key: str, spec: Any, col: _Steps, single: bool) -> list:
    if isinstance(spec, FixedLenSequenceFeature):
        return _fixed_steps(key, spec, col, single)
    if isinstance(spec, VarLenFeature):
        return _sparse_steps(col, single)
    if isinstance(spec, RaggedFeature):
        return _ragged_steps(col, spec, single)
    raise TypeError(f"sequence_features[{key!r}]: expected FixedLenSequenceFeature, "
                    f"VarLenFeature or RaggedFeature, got {type(spec).__name__}")


def _list_specs(spec: Any, batch: tuple) -> list:
    dtype = _dtypes.as_dtype(spec.dtype)
    if isinstance(spec, FixedLenSequenceFeature):
        shape = batch + (None,) + tuple(int(d) for d in spec.shape)
        return [(shape, dtype)] + ([(batch, _dtypes.int64)] if batch else [])
    if isinstance(spec, VarLenFeature):
        rank = len(batch) + 2
        return [((None, rank), _dtypes.int64), ((None,), dtype), ((rank,), _dtypes.int64)]
    splits = _dtypes.as_dtype(spec.row_splits_dtype)
    outer = [((None if batch[0] is None else batch[0] + 1,), splits)] if batch else []
    return [((None,), dtype)] + outer + [((None,), splits)]


def _kernel(serialized, *, context, sequence, single):
    if serialized.ndim != (0 if single else 1):
        raise errors.InvalidArgumentError(
            f"parse_{'single_' if single else ''}sequence_example: serialized must be "
            f"{'a scalar' if single else 'a vector'}, got shape {list(serialized.shape)}")
    records = parsing.decode_records(serialized.ravel().tolist(), SequenceExample)
    columns = parsing.columns_of([r.context.feature for r in records], dict(context))
    out = [a for key, spec in context
           for a in parsing.feature_arrays(key, spec, columns[key], single)]
    for key, spec in sequence:
        col = _steps(records, key, _dtypes.as_dtype(spec.dtype))
        out.extend(_list_arrays(key, spec, col, single))
    return tuple(out)


def _shape(serialized, *, context, sequence, single):
    shape = serialized[0]
    batch = () if single else ((None,) if not shape else (shape[0],))
    return ([s for _, spec in context for s in parsing.feature_specs(spec, batch)]
            + [s for _, spec in sequence for s in _list_specs(spec, batch)])


_parse = op("ParseSequenceExample", multi_output=True, shape=_shape)(_kernel)


def _rebuild(spec: Any, arrays: list) -> tuple:
    """(value, length or None) of one feature list from its arrays."""
    from tapeflow.ragged.tensor import RaggedTensor
    from tapeflow.sparse.tensor import SparseTensor

    if isinstance(spec, VarLenFeature):
        return SparseTensor(*arrays), None
    if isinstance(spec, RaggedFeature):
        rt = RaggedTensor.from_row_splits(arrays[0], arrays[-1], validate=False)
        if len(arrays) == 3:
            rt = RaggedTensor.from_row_splits(rt, arrays[1], validate=False)
        return rt, None
    return arrays[0], (arrays[1] if len(arrays) == 2 else None)


def _run(serialized: Any, context_features: dict | None, sequence_features: dict | None,
         single: bool) -> tuple:
    context = tuple(sorted((context_features or {}).items()))
    sequence = tuple(sorted((sequence_features or {}).items()))
    for key, spec in context:
        if isinstance(spec, FixedLenSequenceFeature):
            raise TypeError(f"context_features[{key!r}]: FixedLenSequenceFeature belongs in "
                            f"sequence_features")
    x = convert_to_tensor(serialized, _dtypes.string)
    flat = apply(_parse, x, context=context, sequence=sequence, single=single)
    batch = () if single else (None,)
    ctx, i = {}, 0
    for key, spec in context:
        n = len(parsing.feature_specs(spec, batch))
        ctx[key] = parsing.rebuild(spec, list(flat[i:i + n]))
        i += n
    lists, lengths = {}, {}
    for key, spec in sequence:
        n = len(_list_specs(spec, batch))
        lists[key], length = _rebuild(spec, list(flat[i:i + n]))
        if length is not None:
            lengths[key] = length
        i += n
    return ctx, lists, lengths


def parse_single_sequence_example(serialized: Any, context_features: dict | None = None,
                                  sequence_features: dict | None = None,
                                  example_name: Any = None, name: str | None = None) -> tuple:
    """(context dict, feature-list dict) of one serialized SequenceExample."""
    ctx, lists, _ = _run(serialized, context_features, sequence_features, single=True)
    return ctx, lists


def parse_sequence_example(serialized: Any, context_features: dict | None = None,
                           sequence_features: dict | None = None, example_names: Any = None,
                           name: str | None = None) -> tuple:
    """(context, feature lists, lengths of the FixedLenSequenceFeature lists) of a batch."""
    return _run(serialized, context_features, sequence_features, single=False)
