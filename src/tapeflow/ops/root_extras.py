"""Root-level TensorFlow functions that ordinary programs reach for: space_to_batch /
batch_to_space, histogram_fixed_width_bins, bitcast, fingerprint, parallel_stack, tuple,
guarantee_const, grad_pass_through, recompute_grad, get_logger.

The block rearrangements are composed of pad/reshape/transpose, so they trace and have
gradients; bitcast and fingerprint are primitive ops (no gradient, as in TensorFlow).
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable
from typing import Any

import numpy as np

from tapeflow._api import export
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework.constant import convert_to_tensor
from tapeflow.framework.dispatch import apply, op
from tapeflow.framework.tape import custom_gradient
from tapeflow.ops import array_ops, indexing_ops
from tapeflow.ops.array_ops import _tensor


def _static_list(x: Any, what: str) -> list:
    arr = np.asarray(x.numpy() if hasattr(x, "numpy") else x)
    return arr.astype(np.int64).tolist()


@export("space_to_batch_nd", "space_to_batch")
def space_to_batch_nd(input: Any, block_shape: Any, paddings: Any,  # noqa: A002
                      name: str | None = None) -> Any:
    """Zero-pad the spatial dims, then move each block_shape block's positions into the batch
    dimension (TensorFlow's layout: the block offset is the batch's major part)."""
    x = _tensor(input)
    block = _static_list(block_shape, "block_shape")
    pads = _static_list(paddings, "paddings")
    m = len(block)
    rank = x.shape.rank
    x = array_ops.pad(x, [[0, 0]] + pads + [[0, 0]] * (rank - 1 - m))
    shape = array_ops.shape(x)
    dims = [x.shape[1 + i] for i in range(m)]
    if any(d is None for d in dims):
        raise ValueError("space_to_batch_nd: spatial dims must be known")
    split = [shape[0]]
    for d, b in zip(dims, block):
        if d % b:
            raise ValueError(f"space_to_batch_nd: padded size {d} is not divisible by block "
                             f"{b}")
        split += [d // b, b]
    rest = [shape[k] for k in range(1 + m, rank)]
    y = array_ops.reshape(x, array_ops.stack(split + rest))
    perm = [2 + 2 * i for i in range(m)] + [0] + [1 + 2 * i for i in range(m)] + list(
        range(1 + 2 * m, 1 + 2 * m + len(rest)))
    y = array_ops.transpose(y, perm)
    batch = shape[0] * int(np.prod(block))
    return array_ops.reshape(y, array_ops.stack([batch] + [d // b for d, b in zip(dims, block)]
                                                + rest))


@export("batch_to_space", "batch_to_space_nd")
def batch_to_space(input: Any, block_shape: Any, crops: Any,  # noqa: A002
                   name: str | None = None) -> Any:
    """The inverse of space_to_batch_nd: blocks back from the batch, then `crops` removed."""
    x = _tensor(input)
    block = _static_list(block_shape, "block_shape")
    crop = _static_list(crops, "crops")
    m = len(block)
    rank = x.shape.rank
    shape = array_ops.shape(x)
    nblock = int(np.prod(block))
    batch = shape[0] // nblock
    dims = [x.shape[1 + i] for i in range(m)]
    rest = [shape[k] for k in range(1 + m, rank)]
    y = array_ops.reshape(x, array_ops.stack(block + [batch] + dims + rest))
    perm = [m]
    for i in range(m):
        perm += [m + 1 + i, i]
    perm += list(range(2 * m + 1, 2 * m + 1 + len(rest)))
    y = array_ops.transpose(y, perm)
    y = array_ops.reshape(y, array_ops.stack([batch] + [d * b for d, b in zip(dims, block)]
                                             + rest))
    begin = [0] + [c[0] for c in crop] + [0] * len(rest)
    size = [-1] + [d * b - c[0] - c[1] for d, b, c in zip(dims, block, crop)] + [-1] * len(rest)
    return indexing_ops.slice_(y, begin, size)


@export("required_space_to_batch_paddings")
def required_space_to_batch_paddings(input_shape: Any, block_shape: Any,
                                     base_paddings: Any = None, name: str | None = None) -> tuple:
    """(paddings, crops) making input_shape + base paddings divisible by block_shape."""
    base = None if base_paddings is None else _static_list(base_paddings, "base_paddings")
    paddings, crops = space_to_batch_padding_arrays(
        _static_list(input_shape, "input_shape"), _static_list(block_shape, "block_shape"), base)
    return convert_to_tensor(paddings), convert_to_tensor(crops)


def space_to_batch_padding_arrays(shape: Any, block: Any, base: Any = None) -> tuple:
    """required_space_to_batch_paddings' numbers as int32 arrays: usable while tracing, where
    a constant tensor has no value to read back."""
    shape, block = np.asarray(shape), np.asarray(block)
    base = np.zeros((len(block), 2), np.int64) if base is None else np.asarray(base)
    full = shape + base[:, 0] + base[:, 1]
    extra = (block - full % block) % block
    paddings = np.stack([base[:, 0], base[:, 1] + extra], axis=1).astype(np.int32)
    crops = np.stack([np.zeros_like(extra), extra], axis=1).astype(np.int32)
    return paddings, crops


@op("HistogramFixedWidthBins", shape=lambda values, value_range, *, nbins, dtype: (
    values[0], dtype))
def _histogram_bins(values, value_range, *, nbins, dtype):
    lo, hi = float(value_range[0]), float(value_range[1])
    scaled = (values.astype(np.float64) - lo) / (hi - lo) * nbins
    return np.clip(np.floor(scaled), 0, nbins - 1).astype(dtype._np)


@export("histogram_fixed_width_bins")
def histogram_fixed_width_bins(values: Any, value_range: Any, nbins: int = 100,
                               dtype: Any = _dtypes.int32, name: str | None = None) -> Any:
    """The bin index of each value: nbins equal bins over value_range, the ends extended."""
    v = _tensor(values)
    return apply(_histogram_bins, v, _tensor(value_range, v.dtype), nbins=int(nbins),
                 dtype=_dtypes.as_dtype(dtype))


def _bitcast_shape(x, *, dtype):
    shape, src = x
    if shape is None:
        return None, dtype
    a, b = np.dtype(src._np).itemsize, np.dtype(dtype._np).itemsize
    if a == b:
        return shape, dtype
    if a > b:
        return tuple(shape) + (a // b,), dtype
    return tuple(shape[:-1]), dtype


@op("Bitcast", shape=_bitcast_shape)
def _bitcast(x, *, dtype):
    a, b = x.dtype.itemsize, np.dtype(dtype._np).itemsize
    if a == b:
        return x.view(dtype._np)
    if a > b:
        return np.ascontiguousarray(x).view(dtype._np).reshape(x.shape + (a // b,))
    if not x.shape or x.shape[-1] != b // a:
        raise ValueError(f"bitcast: the last dimension must be {b // a} to go from "
                         f"{x.dtype} to {np.dtype(dtype._np)}, got shape {list(x.shape)}")
    return np.ascontiguousarray(x).view(dtype._np).reshape(x.shape[:-1])


@export("bitcast")
def bitcast(input: Any, type: Any, name: str | None = None) -> Any:  # noqa: A002
    """The same bytes read as another dtype (a wider dtype eats the last dimension)."""
    return apply(_bitcast, _tensor(input), dtype=_dtypes.as_dtype(type))


@op("Fingerprint", shape=lambda x, *, method: (None if x[0] is None else (x[0][0], 8),
                                                _dtypes.uint8))
def _fingerprint(x, *, method):
    import farmhash

    if x.ndim == 0:
        raise ValueError("fingerprint: data must have rank >= 1")
    if x.dtype == object:
        rows = [bytes(s) if not isinstance(s, str) else s.encode() for s in x.reshape(-1)]
    else:
        flat = np.ascontiguousarray(x).reshape(x.shape[0], -1)
        rows = [r.tobytes() for r in flat]
    out = b"".join(struct.pack("<Q", farmhash.fingerprint64(r)) for r in rows)
    return np.frombuffer(out, np.uint8).reshape(len(rows), 8).copy()


@export("fingerprint")
def fingerprint(data: Any, method: str = "farmhash64", name: str | None = None) -> Any:
    """FarmHash Fingerprint64 of each row (each string of a string vector), as 8 bytes."""
    if method != "farmhash64":
        raise ValueError(f"fingerprint: unsupported method {method!r} (only 'farmhash64')")
    return apply(_fingerprint, _tensor(data), method=method)


@export("parallel_stack")
def parallel_stack(values: list, name: str = "parallel_stack") -> Any:
    """stack (TensorFlow's parallel variant copies the inputs in parallel; same result)."""
    return array_ops.stack(values)


@export("tuple")
def tuple_(tensors: list, name: str | None = None, control_inputs: Any = None) -> list:
    """The tensors, grouped (each one an identity, as TensorFlow's returns)."""
    return [None if t is None else array_ops.identity(t) for t in tensors]


@export("guarantee_const")
def guarantee_const(input: Any, name: str | None = None) -> Any:  # noqa: A002
    return array_ops.identity(input)


@export("grad_pass_through")
def grad_pass_through(f: Callable) -> Callable:
    """f with the identity as its gradient (straight-through estimators)."""
    @custom_gradient
    def wrapped(x: Any) -> Any:
        return f(x), lambda dy: dy
    return wrapped


@export("recompute_grad")
def recompute_grad(f: Callable) -> Callable:
    """f unchanged: its gradients are the same (TensorFlow recomputes the forward pass to save
    memory; tapeflow's memory plan frees buffers after their last use instead)."""
    return f


@export("get_logger")
def get_logger() -> logging.Logger:
    """The 'tensorflow' logger (tapeflow logs its warnings there too)."""
    return logging.getLogger("tensorflow")



