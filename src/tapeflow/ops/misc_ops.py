"""Smaller parts of the TensorFlow API that ordinary programs use: masks, unique, meshgrid,
searchsorted, partition/stitch, static-shape helpers, and the composite ``tf.nn`` functions
(swish, l2_loss, depth/space rearrangements, weighted and Poisson losses)."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from tapeflow._api import export
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework import errors
from tapeflow.framework.constant import convert_to_tensor
from tapeflow.framework.context import state as _state
from tapeflow.framework.dispatch import apply, op
from tapeflow.framework.shapes import TensorShape, as_shape
from tapeflow.framework.tensor import EagerTensor, Tensor
from tapeflow.ops import array_ops, gather_ops, math_ops, reduce_ops
from tapeflow.ops.array_ops import _tensor

# --- masks, unique, search ------------------------------------------------------------------


@export("sequence_mask")
def sequence_mask(lengths: Any, maxlen: Any = None, dtype: Any = _dtypes.bool,
                  name: str | None = None) -> Tensor:
    """mask[..., j] = j < lengths[...] (maxlen defaults to max(lengths))."""
    from tapeflow.ops.creation_ops import range_

    lens = _tensor(lengths)
    if maxlen is None:
        maxlen = reduce_ops.reduce_max(lens)
    row = range_(0, maxlen, dtype=lens.dtype) if not isinstance(maxlen, Tensor) else range_(
        math_ops.cast(maxlen, lens.dtype) * 0, math_ops.cast(maxlen, lens.dtype))
    mask = math_ops.less(row, array_ops.expand_dims(lens, -1))
    return mask if _dtypes.as_dtype(dtype) is _dtypes.bool else math_ops.cast(mask, dtype)


@op("Unique", multi_output=True, shape=lambda x, *, out_idx, counts: (
    [((None,), x[1]), (x[0], out_idx)] + ([((None,), out_idx)] if counts else [])))
def _unique(x, *, out_idx, counts):
    values, first, inverse, count = np.unique(x, return_index=True, return_inverse=True,
                                              return_counts=True)
    order = np.argsort(first)  # TF keeps first-appearance order
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    out = (values[order], rank[inverse.reshape(-1)].astype(out_idx._np))
    return out + ((count[order].astype(out_idx._np),) if counts else ())


@export("unique")
def unique(x: Any, out_idx: Any = _dtypes.int32, name: str | None = None) -> tuple:
    """(distinct values in order of first appearance, index of each input in them)."""
    return apply(_unique, _tensor(x), out_idx=_dtypes.as_dtype(out_idx), counts=False)


@export("unique_with_counts")
def unique_with_counts(x: Any, out_idx: Any = _dtypes.int32, name: str | None = None) -> tuple:
    return apply(_unique, _tensor(x), out_idx=_dtypes.as_dtype(out_idx), counts=True)


@op("LowerBound", shape=lambda s, v, *, side, out_type: (v[0], out_type))
def _searchsorted(sorted_sequence, values, *, side, out_type):
    if sorted_sequence.ndim == 1:
        return np.searchsorted(sorted_sequence, values, side=side).astype(out_type._np)
    rows = [np.searchsorted(s, v, side=side) for s, v in zip(
        sorted_sequence.reshape(-1, sorted_sequence.shape[-1]),
        values.reshape(-1, values.shape[-1]))]
    return np.asarray(rows).reshape(values.shape).astype(out_type._np)


@export("searchsorted")
def searchsorted(sorted_sequence: Any, values: Any, side: str = "left",
                 out_type: Any = _dtypes.int32, name: str | None = None) -> Tensor:
    """Insertion points of `values` in each row of `sorted_sequence`."""
    s = _tensor(sorted_sequence)
    return apply(_searchsorted, s, _tensor(values, s.dtype), side=side,
                 out_type=_dtypes.as_dtype(out_type))


@export("meshgrid")
def meshgrid(*args: Any, indexing: str = "xy", name: str | None = None) -> list:
    """Coordinate grids from 1-D tensors ('xy': Cartesian, 'ij': matrix indexing)."""
    xs = [array_ops.reshape(_tensor(a), [-1]) for a in args]
    n = len(xs)
    shapes = [array_ops.shape(x)[0] for x in xs]
    if indexing == "xy" and n >= 2:
        shapes[0], shapes[1] = shapes[1], shapes[0]
    full = array_ops.stack(shapes)
    out = []
    for i, x in enumerate(xs):
        axis = i
        if indexing == "xy" and n >= 2 and i < 2:
            axis = 1 - i
        shape = [1] * n
        shape[axis] = -1
        out.append(array_ops.broadcast_to(array_ops.reshape(x, shape), full))
    return out


@export("unravel_index")
def unravel_index(indices: Any, dims: Any, name: str | None = None) -> Tensor:
    """Multi-indices [len(dims), ...] of flat `indices` into an array of shape `dims`."""
    idx = _tensor(indices)
    d = _tensor(dims, idx.dtype)
    strides = math_ops.cast(reduce_ops.cumprod(d, exclusive=True, reverse=True), idx.dtype)
    expanded = array_ops.expand_dims(idx, 0)
    shape = [-1] + [1] * (idx.shape.rank or 0)
    return math_ops.floormod(math_ops.floordiv(expanded, array_ops.reshape(strides, shape)),
                             array_ops.reshape(d, shape))


@export("dynamic_partition")
def dynamic_partition(data: Any, partitions: Any, num_partitions: int,
                      name: str | None = None) -> list:
    """Split `data` into `num_partitions` tensors by the partition index of each row."""
    from tapeflow.ops import indexing_ops

    x, p = _tensor(data), _tensor(partitions)
    return [indexing_ops.boolean_mask(x, math_ops.equal(p, i)) for i in range(num_partitions)]


@export("dynamic_stitch")
def dynamic_stitch(indices: list, data: list, name: str | None = None) -> Tensor:
    """merged[indices[i][j]] = data[i][j] (later pieces win), as a dense tensor."""
    from tapeflow.ops import scatter_ops

    idx = array_ops.concat([array_ops.reshape(_tensor(i), [-1]) for i in indices], 0)
    first = _tensor(data[0])
    inner = first.shape.as_list()[_tensor(indices[0]).shape.rank:]
    values = array_ops.concat([array_ops.reshape(_tensor(d), [-1] + inner) for d in data], 0)
    n = reduce_ops.reduce_max(idx) + 1
    shape = array_ops.concat([array_ops.reshape(n, [1]), convert_to_tensor(
        np.asarray(inner, np.int32), idx.dtype)], 0)
    zeros = array_ops.fill(shape, convert_to_tensor(0, values.dtype))
    return scatter_ops.tensor_scatter_nd_update(zeros, array_ops.expand_dims(idx, 1), values)


@export("reverse_sequence")
def reverse_sequence(input: Any, seq_lengths: Any, seq_axis: int | None = None,  # noqa: A002
                     batch_axis: int | None = None, name: str | None = None) -> Tensor:
    """Reverse the first seq_lengths[b] entries along seq_axis of each batch row b."""
    from tapeflow.ops.creation_ops import range_

    x = _tensor(input)
    seq_axis = 1 if seq_axis is None else seq_axis
    batch_axis = 0 if batch_axis is None else batch_axis
    perm = [batch_axis, seq_axis] + [d for d in range(x.shape.rank)
                                     if d not in (batch_axis, seq_axis)]
    moved = array_ops.transpose(x, perm)
    n = array_ops.shape(moved)[1]
    lens = math_ops.cast(_tensor(seq_lengths), _dtypes.int32)
    pos = range_(0, n)
    src = math_ops.where(math_ops.less(pos[None, :], lens[:, None]),
                         lens[:, None] - 1 - pos[None, :], pos[None, :] + 0 * lens[:, None])
    out = gather_ops.gather(moved, src, axis=1, batch_dims=1)
    inverse = list(np.argsort(perm))
    return array_ops.transpose(out, inverse)


@export("histogram_fixed_width")
def histogram_fixed_width(values: Any, value_range: Any, nbins: int = 100,
                          dtype: Any = _dtypes.int32, name: str | None = None) -> Tensor:
    """Counts of `values` in nbins equal bins over value_range (outside: the end bins)."""
    from tapeflow.ops.special_math_ops import bincount

    v = _tensor(values)
    lo_hi = _tensor(value_range, v.dtype)
    scaled = (v - lo_hi[0]) / (lo_hi[1] - lo_hi[0]) * float(nbins)
    index = math_ops.cast(math_ops.floor(scaled), _dtypes.int32)
    index = math_ops.minimum(math_ops.maximum(index, 0), nbins - 1)
    return bincount(array_ops.reshape(index, [-1]), minlength=nbins, maxlength=nbins,
                    dtype=dtype)


# --- static information ---------------------------------------------------------------------


@export("get_static_value")
def get_static_value(tensor: Any, partial: bool = False) -> Any:
    """The value as NumPy when known now (eager tensors, constants), else None."""
    if isinstance(tensor, EagerTensor):
        return tensor.numpy()
    if hasattr(tensor, "_as_tensor") and not isinstance(tensor, Tensor):
        return None
    if isinstance(tensor, Tensor):
        node = getattr(tensor, "node", None)
        value = getattr(node, "attrs", {}).get("value") if node is not None else None
        return None if value is None else np.asarray(value)
    return np.asarray(tensor)


@export("ensure_shape")
def ensure_shape(x: Any, shape: Any, name: str | None = None) -> Tensor:
    """`x`, after checking that its shape is compatible with `shape`."""
    t = _tensor(x)
    if not t.shape.is_compatible_with(as_shape(shape)):
        raise ValueError(f"Shape of tensor {t.shape} is not compatible with expected shape "
                         f"{as_shape(shape)}\n{errors.user_line()}")
    return t


@export("identity_n")
def identity_n(input: Any, name: str | None = None) -> list:  # noqa: A002
    return [array_ops.identity(x) for x in input]


@export("shape_n")
def shape_n(input: Any, out_type: Any = _dtypes.int32, name: str | None = None) -> list:  # noqa: A002
    return [array_ops.shape(x, out_type=out_type) for x in input]


@export("broadcast_static_shape")
def broadcast_static_shape(shape_x: Any, shape_y: Any) -> TensorShape:
    a, b = as_shape(shape_x).as_tuple(), as_shape(shape_y).as_tuple()
    if a is None or b is None:
        return TensorShape(None)
    rank = max(len(a), len(b))
    a, b = (1,) * (rank - len(a)) + a, (1,) * (rank - len(b)) + b
    out = []
    for x, y in zip(a, b):
        if x == 1 or y == 1 or x is None or y is None or x == y:
            out.append(y if x == 1 else x if y == 1 else (x if x is not None else y))
        else:
            raise ValueError(f"Incompatible shapes for broadcasting: {shape_x} and {shape_y}")
    return TensorShape(out)


@export("broadcast_dynamic_shape")
def broadcast_dynamic_shape(shape_x: Any, shape_y: Any) -> Tensor:
    sx, sy = _tensor(shape_x), _tensor(shape_y)
    zeros = array_ops.zeros(sx, _dtypes.int8) + array_ops.zeros(sy, _dtypes.int8)
    return array_ops.shape(zeros, out_type=sx.dtype)


@export("type_spec_from_value")
def type_spec_from_value(value: Any) -> Any:
    """The TypeSpec of a tensor (TensorSpec) or composite (RaggedTensorSpec ...)."""
    from tapeflow.framework.tensor_spec import TensorSpec

    spec = getattr(value, "_type_spec", None)
    if spec is not None:
        return spec
    t = value if isinstance(value, Tensor) else convert_to_tensor(value)
    return TensorSpec(t.shape, t.dtype)


@export("inside_function")
def inside_function() -> bool:
    """True while tracing a tf.function (a graph is being built)."""
    return _state.graph is not None


@export("get_current_name_scope")
def get_current_name_scope() -> str:
    return _state.name_scope


@export("is_symbolic_tensor")
def is_symbolic_tensor(tensor: Any) -> bool:
    return isinstance(tensor, Tensor) and not isinstance(tensor, EagerTensor)


@op("Timestamp", stateful=True, shape=lambda: ((), _dtypes.float64))
def _timestamp():
    return np.asarray(time.time(), np.float64)


@export("timestamp")
def timestamp(name: str | None = None) -> Tensor:
    """Seconds since the epoch, when the op runs."""
    return apply(_timestamp)


# --- small arithmetic aliases ----------------------------------------------------------------


@export("scalar_mul", "math.scalar_mul")
def scalar_mul(scalar: Any, x: Any, name: str | None = None) -> Tensor:
    t = _tensor(x)
    return math_ops.cast(_tensor(scalar), t.dtype) * t


@export("realdiv")
def realdiv(x: Any, y: Any, name: str | None = None) -> Tensor:
    return math_ops.truediv(x, y)


@export("truncatediv")
def truncatediv(x: Any, y: Any, name: str | None = None) -> Tensor:
    """Division rounding toward zero (C semantics)."""
    a, b = math_ops._as_pair(x, y)
    q = math_ops.truediv(a, b)
    t = math_ops.sign(q) * math_ops.floor(math_ops.abs(q))
    return math_ops.cast(t, a.dtype)


@export("truncatemod")
def truncatemod(x: Any, y: Any, name: str | None = None) -> Tensor:
    """Remainder with the sign of x (C's fmod)."""
    a, b = math_ops._as_pair(x, y)
    return a - truncatediv(a, b) * b


# --- tf.nn composites -----------------------------------------------------------------------


@export("nn.silu", "nn.swish")
def silu(features: Any, beta: float = 1.0, name: str | None = None) -> Tensor:
    """x * sigmoid(beta * x)."""
    x = _tensor(features)
    return x * math_ops.sigmoid(beta * x)


@export("nn.l2_loss")
def l2_loss(t: Any, name: str | None = None) -> Tensor:
    """sum(t ** 2) / 2."""
    x = _tensor(t)
    return reduce_ops.reduce_sum(x * x) * 0.5


@export("nn.crelu")
def crelu(features: Any, axis: int = -1, name: str | None = None) -> Tensor:
    from tapeflow.ops import nn_ops

    x = _tensor(features)
    return array_ops.concat([nn_ops.relu(x), nn_ops.relu(-x)], axis)


@export("nn.weighted_cross_entropy_with_logits")
def weighted_cross_entropy_with_logits(labels: Any, logits: Any, pos_weight: Any,
                                       name: str | None = None) -> Tensor:
    """Sigmoid cross-entropy with positives weighted by pos_weight (stable form)."""
    from tapeflow.ops import nn_ops

    x = _tensor(logits)
    z = _tensor(labels, x.dtype)
    q = _tensor(pos_weight, x.dtype)
    weight = 1.0 + (q - 1.0) * z
    return (1.0 - z) * x + weight * (nn_ops.softplus(-math_ops.abs(x)) +
                                     nn_ops.relu(-x))


@export("nn.log_poisson_loss")
def log_poisson_loss(targets: Any, log_input: Any, compute_full_loss: bool = False,
                     name: str | None = None) -> Tensor:
    x = _tensor(log_input)
    z = _tensor(targets, x.dtype)
    loss = math_ops.exp(x) - x * z
    if compute_full_loss:
        stirling = z * math_ops.log(z) - z + 0.5 * math_ops.log(2.0 * np.pi * z)
        loss = loss + math_ops.where(math_ops.greater(z, 1.0), stirling, array_ops.zeros_like(z))
    return loss


@export("nn.compute_average_loss")
def compute_average_loss(per_example_loss: Any, sample_weight: Any = None,
                         global_batch_size: Any = None) -> Tensor:
    """Sum of the (weighted) losses divided by the global batch size (per-replica batch)."""
    loss = _tensor(per_example_loss)
    if sample_weight is not None:
        loss = loss * _tensor(sample_weight, loss.dtype)
    total = reduce_ops.reduce_sum(loss)
    if global_batch_size is None:
        global_batch_size = math_ops.cast(array_ops.shape(loss)[0], loss.dtype)
    return total / math_ops.cast(_tensor(global_batch_size), loss.dtype)


@export("nn.scale_regularization_loss")
def scale_regularization_loss(regularization_loss: Any) -> Tensor:
    return math_ops.add_n(list(regularization_loss)) if isinstance(
        regularization_loss, (list, tuple)) else _tensor(regularization_loss)


@export("nn.depth_to_space")
def depth_to_space(input: Any, block_size: int, data_format: str = "NHWC",  # noqa: A002
                   name: str | None = None) -> Tensor:
    """Move blocks of channels into space: [b, h, w, c*s*s] -> [b, h*s, w*s, c]."""
    x = _tensor(input)
    b, h, w, c = x.shape.as_list()
    s = int(block_size)
    y = array_ops.reshape(x, [-1, h, w, s, s, c // (s * s)])
    y = array_ops.transpose(y, [0, 1, 3, 2, 4, 5])
    return array_ops.reshape(y, [-1, h * s, w * s, c // (s * s)])


@export("nn.space_to_depth")
def space_to_depth(input: Any, block_size: int, data_format: str = "NHWC",  # noqa: A002
                   name: str | None = None) -> Tensor:
    """Move blocks of space into channels: [b, h, w, c] -> [b, h/s, w/s, c*s*s]."""
    x = _tensor(input)
    b, h, w, c = x.shape.as_list()
    s = int(block_size)
    y = array_ops.reshape(x, [-1, h // s, s, w // s, s, c])
    y = array_ops.transpose(y, [0, 1, 3, 2, 4, 5])
    return array_ops.reshape(y, [-1, h // s, w // s, c * s * s])


@export("nn.normalize_moments")
def normalize_moments(counts: Any, mean_ss: Any, variance_ss: Any, shift: Any,
                      name: str | None = None) -> tuple:
    n = _tensor(counts)
    mean = _tensor(mean_ss) / n
    variance = _tensor(variance_ss) / n - mean * mean
    if shift is not None:
        mean = mean + _tensor(shift)
    return mean, variance


@export("nn.sufficient_statistics")
def sufficient_statistics(x: Any, axes: Any, shift: Any = None, keepdims: bool = False,
                          name: str | None = None) -> tuple:
    t = _tensor(x)
    dims = array_ops.shape(t)
    count = reduce_ops.reduce_prod(math_ops.cast(gather_ops.gather(dims, list(axes)),
                                                 t.dtype))
    centered = t if shift is None else t - shift
    return (count, reduce_ops.reduce_sum(centered, axis=axes, keepdims=keepdims),
            reduce_ops.reduce_sum(centered * centered, axis=axes, keepdims=keepdims), shift)
