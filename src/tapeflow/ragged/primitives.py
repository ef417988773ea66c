"""The primitive ops ragged tensors need beyond the dense library (kernel + shape + gradient).

Everything else about ragged tensors is composed from dense ops on `flat_values` and the
`row_splits` vectors, so gradients and tracing come from those ops.
"""

from __future__ import annotations

import numpy as np

from tapeflow.framework.dispatch import apply, op


def dense_index(splits: tuple) -> tuple[list, tuple]:
    """For nested row splits: the dense index of each flat value, and the bounding shape."""
    nrows = len(splits[0]) - 1
    index = [np.arange(nrows)]
    bounding = [nrows]
    for sp in splits:
        lengths = np.diff(sp)
        rowid = np.repeat(np.arange(len(lengths)), lengths)
        pos = np.arange(int(sp[-1]) - int(sp[0])) + int(sp[0]) - sp[:-1][rowid]
        index = [i[rowid] for i in index] + [pos]
        bounding.append(int(lengths.max()) if lengths.size else 0)
    return index, tuple(bounding)


def _target_shape(bounding: tuple, shape: tuple | None) -> tuple:
    if shape is None:
        return bounding
    return tuple(b if s is None or s < 0 else s for b, s in zip(bounding, shape))


def _to_dense_shape(values, default, *splits, shape):
    k = len(splits)
    inner = None if values[0] is None else tuple(values[0][1:])
    outer = tuple(None if s is None or s < 0 else s for s in shape) if shape else (None,) * (k + 1)
    if shape is None and splits[0][0] is not None and splits[0][0][0] is not None:
        outer = (splits[0][0][0] - 1,) + outer[1:]
    return (None if inner is None else outer + inner), values[1]


@op("RaggedTensorToTensor", shape=_to_dense_shape)
def _to_dense(values, default, *splits, shape):
    index, bounding = dense_index(splits)
    target = _target_shape(bounding, shape)
    out = np.empty(target + values.shape[1:], dtype=values.dtype)
    out[...] = default
    keep = np.ones(len(values), dtype=bool)
    for idx, n in zip(index, target):
        keep &= idx < n
    out[tuple(i[keep] for i in index)] = values[keep]
    return out


@op("RaggedTensorToTensorGrad", shape=lambda g, values, *splits, shape: values)
def _to_dense_grad(g, values, *splits, shape):
    index, bounding = dense_index(splits)
    target = _target_shape(bounding, shape)
    keep = np.ones(len(values), dtype=bool)
    for idx, n in zip(index, target):
        keep &= idx < n
    out = np.zeros(values.shape, dtype=g.dtype)
    out[keep] = g[tuple(i[keep] for i in index)]
    return out


@_to_dense.def_grad
def _(g, out, values, default, *splits, shape):
    return (apply(_to_dense_grad, g, values, *splits, shape=shape), None) + (None,) * len(splits)


@_to_dense_grad.def_grad
def _(gg, out, g, values, *splits, shape):
    return (apply(_to_dense, gg, _zero_like_default(gg), *splits, shape=shape), None) + (
        None,) * len(splits)


def _zero_like_default(x):
    from tapeflow.ops import array_ops

    return array_ops.zeros([], x.dtype)


@op("RaggedRange", multi_output=True,
    shape=lambda starts, limits, deltas, *, splits_dtype: [((None,), splits_dtype),
                                                            ((None,), starts[1])])
def ragged_range_kernel(starts, limits, deltas, *, splits_dtype):
    starts, limits, deltas = np.broadcast_arrays(starts, limits, deltas)
    starts, limits, deltas = (np.atleast_1d(a) for a in (starts, limits, deltas))
    if np.any(deltas == 0):
        raise ValueError("tf.ragged.range: deltas must not be 0")
    counts = np.maximum(0, np.ceil((limits - starts) / deltas)).astype(np.int64)
    splits = np.concatenate([[0], np.cumsum(counts)]).astype(splits_dtype._np)
    rowid = np.repeat(np.arange(len(counts)), counts)
    pos = np.arange(splits[-1]) - splits[:-1][rowid]
    values = (starts[rowid] + pos * deltas[rowid]).astype(starts.dtype)
    return splits, values


@op("RaggedRowIds", shape=lambda splits: ((None,), splits[1]))
def row_ids_kernel(splits):
    """The row of each value (``value_rowids``)."""
    return np.repeat(np.arange(len(splits) - 1, dtype=splits.dtype), np.diff(splits))


@op("RaggedPositionInRow", shape=lambda splits: ((None,), splits[1]))
def position_kernel(splits):
    """Each value's index within its row."""
    rowid = np.repeat(np.arange(len(splits) - 1), np.diff(splits))
    return (np.arange(splits[-1] - splits[0]) + splits[0] - splits[:-1][rowid]).astype(
        splits.dtype)


@op("RaggedSplitsFromIds", shape=lambda ids, nrows: ((None,), ids[1]))
def splits_from_ids_kernel(ids, nrows):
    """Row splits from sorted row ids (``segment_ids_to_row_splits``)."""
    counts = np.bincount(ids.astype(np.int64), minlength=int(nrows)) if ids.size else \
        np.zeros(int(nrows), np.int64)
    return np.concatenate([[0], np.cumsum(counts)]).astype(ids.dtype)

