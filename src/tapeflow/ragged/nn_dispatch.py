"""Activation, dropout, softmax and shape functions on RaggedTensors (TensorFlow's ragged
dispatch of ``tf.nn.*``, ``tf.reverse``, ``tf.expand_dims``, ``tf.squeeze``, ``tf.add_n``).

A function of one value per entry runs on the flat values; softmax over a ragged axis
normalises each row with segment reductions; ``reverse`` and ``expand_dims`` rebuild the row
partition. All of it is dense ops on the components, so it traces and differentiates.
"""

from __future__ import annotations

from typing import Any

from tapeflow.framework import errors
from tapeflow.framework.composite import dispatch_for_api
from tapeflow.framework.dispatch import apply
from tapeflow.ops import (
    array_ops,
    creation_ops,
    gather_ops,
    math_ops,
    misc_ops,
    nn_ops,
    segment_ops,
    special_math_ops,
)
from tapeflow.ragged import primitives as prim
from tapeflow.ragged.indexing import take_rows
from tapeflow.ragged.tensor import RaggedTensor, _lengths_to_splits

# functions of one entry whose Python wrappers convert their argument before the primitive
# (elementwise primitives reach RaggedTensors through dispatch.apply on their own)
_UNARY = (nn_ops.relu, nn_ops.relu6, nn_ops.elu, nn_ops.selu, nn_ops.softplus,
          nn_ops.softsign, nn_ops.leaky_relu, nn_ops.gelu, misc_ops.silu,
          special_math_ops.log_sigmoid)


def _on_flat_values(api: Any) -> None:
    @dispatch_for_api(api, RaggedTensor)
    def handler(features: Any, *args: Any, **kwargs: Any) -> RaggedTensor:
        return features.with_flat_values(api(features.flat_values, *args, **kwargs))


for _fn in _UNARY:
    _on_flat_values(_fn)


@dispatch_for_api(nn_ops.dropout, RaggedTensor)
def dropout(x: RaggedTensor, rate: Any = None, noise_shape: Any = None, seed: Any = None,
            name: str | None = None, **kwargs: Any) -> RaggedTensor:
    """Each entry dropped independently, as TF's ragged dropout (no `noise_shape`)."""
    if noise_shape is not None:
        raise errors.InvalidArgumentError(
            f"tf.nn.dropout: noise_shape is not supported for a RaggedTensor\n"
            f"{errors.user_line()}")
    return x.with_flat_values(nn_ops.dropout(x.flat_values, rate=rate, seed=seed, **kwargs))


def _axis(rt: RaggedTensor, axis: int, op_name: str) -> int:
    rank = rt.shape.rank
    out = axis + rank if axis < 0 else axis
    if not 0 <= out < rank:
        raise errors.InvalidArgumentError(f"{op_name}: axis {axis} is out of range for a "
                                          f"RaggedTensor of rank {rank}\n{errors.user_line()}")
    return out


def _row_softmax(rt: RaggedTensor) -> RaggedTensor:
    """Softmax over the innermost ragged axis (ragged_rank 1, scalar entries)."""
    ids, n, x = rt.value_rowids(), rt.nrows(), rt.values
    peak = apply(segment_ops._segment_max, x, ids, n)
    shifted = math_ops.exp(x - gather_ops.gather(peak, ids))
    total = apply(segment_ops._segment_sum, shifted, ids, n)
    return rt.with_values(shifted / gather_ops.gather(total, ids))


@dispatch_for_api(nn_ops.softmax, RaggedTensor)
def softmax(logits: RaggedTensor, axis: int = -1, name: str | None = None) -> RaggedTensor:
    a = _axis(logits, axis, "Softmax")
    if a > logits.ragged_rank:
        return logits.with_flat_values(nn_ops.softmax(logits.flat_values,
                                                      axis=a - logits.ragged_rank))
    if a == logits.ragged_rank == 1 and logits.flat_values.shape.rank == 1:
        return _row_softmax(logits)
    raise NotImplementedError(f"tf.nn.softmax of a RaggedTensor of shape {logits.shape} "
                              f"on axis {axis}")


@dispatch_for_api(nn_ops.log_softmax, RaggedTensor)
def log_softmax(logits: RaggedTensor, axis: int = -1, name: str | None = None) -> Any:
    raise ValueError(f"tf.nn.log_softmax does not take a RaggedTensor (TF has no ragged "
                     f"dispatch for it); use tf.ragged.map_flat_values or tf.math.log of "
                     f"tf.nn.softmax (logits of shape {logits.shape}).")


def reverse_rows(rt: RaggedTensor) -> RaggedTensor:
    """Each row of the outermost ragged dimension reversed (``tf.reverse(rt, [1])``)."""
    ids = rt.value_rowids()
    n = array_ops.shape(ids, out_type=ids.dtype)[0]
    index = gather_ops.gather(rt.row_starts() + rt.row_limits() - 1, ids) - \
        creation_ops.range_(0, n, dtype=ids.dtype)
    return rt.with_values(take_rows(rt.values, index) if isinstance(rt.values, RaggedTensor)
                          else gather_ops.gather(rt.values, index))


@dispatch_for_api(array_ops.reverse, RaggedTensor)
def reverse(tensor: RaggedTensor, axis: Any, name: str | None = None) -> RaggedTensor:
    result = tensor
    for a in sorted({_axis(tensor, int(a), "ReverseV2") for a in axis}):
        result = _reverse_one(result, a)
    return result


def _reverse_one(rt: Any, axis: int) -> Any:
    if not isinstance(rt, RaggedTensor):
        return array_ops.reverse(rt, [axis])
    if axis == 0:
        n = math_ops.cast(rt.nrows(), rt.row_splits.dtype)
        return take_rows(rt, creation_ops.range_(n - 1, -1, -1, dtype=rt.row_splits.dtype))
    if axis == 1:
        return reverse_rows(rt)
    return rt.with_values(_reverse_one(rt.values, axis - 1))


@dispatch_for_api(array_ops.expand_dims, RaggedTensor)
def expand_dims(input: RaggedTensor, axis: int, name: str | None = None) -> RaggedTensor:  # noqa: A002
    """A new dimension of size 1: outer ones add a row partition, inner ones reshape the
    flat values."""
    a = axis + input.shape.rank + 1 if axis < 0 else axis
    if a == 0:
        n = math_ops.cast(input.nrows(), input.row_splits.dtype)
        return RaggedTensor.from_row_splits(input, array_ops.stack([n * 0, n]), validate=False)
    if a == 1:
        n = math_ops.cast(input.nrows(), input.row_splits.dtype)
        return RaggedTensor.from_row_splits(
            input, creation_ops.range_(0, n + 1, dtype=input.row_splits.dtype), validate=False)
    return input.with_values(array_ops.expand_dims(input.values, a - 1))


@dispatch_for_api(array_ops.squeeze, RaggedTensor)
def squeeze(input: RaggedTensor, axis: Any = None, name: str | None = None) -> Any:  # noqa: A002
    """Drop size-1 dimensions among the uniform inner ones (`axis` must name them)."""
    if axis is None:
        raise errors.InvalidArgumentError(f"tf.squeeze of a RaggedTensor needs `axis`\n"
                                          f"{errors.user_line()}")
    axes = [_axis(input, int(a), "Squeeze") for a in
            (axis if isinstance(axis, (list, tuple)) else [axis])]
    if any(a <= input.ragged_rank for a in axes):
        raise errors.InvalidArgumentError(
            f"tf.squeeze: axis {axis} of a RaggedTensor of shape {input.shape} is a ragged or "
            f"outer dimension; only uniform inner dimensions can be squeezed\n"
            f"{errors.user_line()}")
    inner = [a - input.ragged_rank for a in axes]
    return input.with_flat_values(array_ops.squeeze(input.flat_values, inner))


@dispatch_for_api(array_ops.tile, RaggedTensor)
def tile(input: RaggedTensor, multiples: Any, name: str | None = None) -> RaggedTensor:  # noqa: A002
    """Rows repeated multiples[0] times, each row's entries multiples[1] times, inner dims
    tiled by the rest (ragged_rank 1)."""
    if input.ragged_rank != 1:
        raise NotImplementedError("tf.tile of a RaggedTensor of ragged_rank > 1")
    reps = [int(m) for m in (multiples.numpy() if hasattr(multiples, "numpy") else multiples)]
    if len(reps) != input.shape.rank:
        raise errors.InvalidArgumentError(
            f"tf.tile: multiples {reps} must have one entry per dimension of the RaggedTensor "
            f"of shape {input.shape}\n{errors.user_line()}")
    rt = input
    if reps[0] != 1:
        n = math_ops.cast(rt.nrows(), rt.row_splits.dtype)
        rows = creation_ops.range_(0, n, dtype=rt.row_splits.dtype)
        rt = take_rows(rt, array_ops.tile(rows, [reps[0]]))
    if reps[1] != 1:
        lengths = rt.row_lengths()
        splits = _lengths_to_splits(lengths * reps[1])
        ids = apply(prim.row_ids_kernel, splits)
        pos = apply(prim.position_kernel, splits)
        source = gather_ops.gather(rt.row_starts(), ids) + math_ops.floormod(
            pos, gather_ops.gather(lengths, ids))
        rt = RaggedTensor.from_row_splits(gather_ops.gather(rt.values, source), splits,
                                          validate=False)
    if any(r != 1 for r in reps[2:]):
        rt = rt.with_values(array_ops.tile(rt.values, [1] + reps[2:]))
    return rt


@dispatch_for_api(math_ops.add_n, RaggedTensor)
def add_n(inputs: list, name: str | None = None) -> Any:
    total = inputs[0]
    for x in inputs[1:]:
        total = total + x
    return total
