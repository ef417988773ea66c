"""More TensorFlow functions on RaggedTensors, as TF's ragged dispatch defines them:
``one_hot``, ``bincount(axis=-1)``, ``clip_by_value``, ``dynamic_partition``,
``reduce_variance`` / ``reduce_std`` / ``reduce_logsumexp`` over rows, ``gather_nd``, and
``tf.ragged.stack_dynamic_partitions``. Built from dense ops on the components (they trace and
differentiate where TF's do)."""

from __future__ import annotations

from typing import Any

from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework import errors
from tapeflow.framework.composite import dispatch_for_api
from tapeflow.framework.constant import convert_to_tensor
from tapeflow.framework.tensor import Tensor
from tapeflow.ops import (
    array_ops,
    creation_ops,
    gather_ops,
    math_ops,
    misc_ops,
    reduce_ops,
    segment_ops,
    special_math_ops,
)
from tapeflow.ragged.dispatch import _reduce
from tapeflow.ragged.indexing import take_rows
from tapeflow.ragged.tensor import RaggedTensor


def _tensor(x: Any, dtype: Any = None) -> Tensor:
    return x if isinstance(x, Tensor) else convert_to_tensor(x, dtype)


@dispatch_for_api(creation_ops.one_hot, RaggedTensor)
def one_hot(indices: RaggedTensor, depth: Any, on_value: Any = None, off_value: Any = None,
            axis: Any = None, dtype: Any = None, name: str | None = None) -> RaggedTensor:
    """A one-hot vector per entry: [rows, (ragged), depth]."""
    if axis not in (None, -1, indices.shape.rank):
        raise errors.InvalidArgumentError(f"tf.one_hot of a RaggedTensor: axis must be -1, got "
                                          f"{axis}\n{errors.user_line()}")
    return indices.with_flat_values(creation_ops.one_hot(
        indices.flat_values, depth, on_value=on_value, off_value=off_value, dtype=dtype))


@dispatch_for_api(math_ops.clip_by_value, RaggedTensor)
def clip_by_value(t: RaggedTensor, clip_value_min: Any, clip_value_max: Any,
                  name: str | None = None) -> RaggedTensor:
    return t.with_flat_values(math_ops.clip_by_value(t.flat_values, clip_value_min,
                                                     clip_value_max))


@dispatch_for_api(special_math_ops.bincount, RaggedTensor)
def bincount(arr: RaggedTensor, weights: Any = None, minlength: Any = None,
             maxlength: Any = None, dtype: Any = _dtypes.int32, name: str | None = None,
             axis: Any = None, binary_output: bool = False) -> Any:
    """Counts over all values (axis None), or one row of counts per ragged row (axis -1)."""
    w = weights.flat_values if isinstance(weights, RaggedTensor) else weights
    if axis is None or axis == 0:
        return special_math_ops.bincount(arr.flat_values, w, minlength, maxlength, dtype,
                                         binary_output=binary_output)
    if axis != -1 or arr.ragged_rank != 1:
        raise errors.InvalidArgumentError(f"tf.math.bincount of a RaggedTensor: axis must be "
                                          f"None, 0 or -1, got {axis}\n{errors.user_line()}")
    values = math_ops.cast(arr.values, _dtypes.int64)
    size = reduce_ops.reduce_max(array_ops.concat(
        [values, convert_to_tensor([-1], _dtypes.int64)], 0)) + 1  # 0 for no values
    if minlength is not None:
        size = math_ops.maximum(size, math_ops.cast(_tensor(minlength), _dtypes.int64))
    if maxlength is not None:
        size = math_ops.minimum(size, math_ops.cast(_tensor(maxlength), _dtypes.int64))
    keep = math_ops.less(values, size)
    rows = math_ops.cast(arr.value_rowids(), _dtypes.int64)
    out_dtype = _dtypes.as_dtype(dtype) if w is None else w.dtype
    counts = array_ops.ones_like(values, dtype=out_dtype) if w is None else w
    counts = math_ops.where(keep, counts, array_ops.zeros_like(counts))
    key = rows * size + math_ops.minimum(values, size - 1)
    nrows = math_ops.cast(arr.nrows(), _dtypes.int64)
    flat = segment_ops.unsorted_segment_sum(counts, key, nrows * size)
    out = array_ops.reshape(flat, array_ops.stack([nrows, size]))
    if binary_output:
        out = math_ops.cast(math_ops.greater(out, 0), out_dtype)
    return out


@dispatch_for_api(misc_ops.dynamic_partition, RaggedTensor)
def dynamic_partition(data: RaggedTensor, partitions: Any, num_partitions: int,
                      name: str | None = None) -> list:
    """The rows of each partition, in order."""
    parts = math_ops.cast(_tensor(partitions), _dtypes.int64)
    out = []
    for i in range(int(num_partitions)):
        rows = array_ops.reshape(math_ops.where(math_ops.equal(parts, i)), [-1])
        out.append(take_rows(data, rows))
    return out


def _row_axis(rt: RaggedTensor, axis: Any, op_name: str) -> bool:
    """True when `axis` is the ragged axis of a ragged_rank-1 tensor of scalars."""
    a = axis + rt.shape.rank if isinstance(axis, int) and axis < 0 else axis
    if a == 1 and rt.ragged_rank == 1 and rt.flat_values.shape.rank == 1:
        return True
    raise NotImplementedError(f"{op_name} of a RaggedTensor of shape {rt.shape} over axis "
                              f"{axis} (the rows of a ragged_rank-1 tensor are supported)")


@dispatch_for_api(reduce_ops.reduce_variance, RaggedTensor)
def reduce_variance(input_tensor: RaggedTensor, axis: Any = None, keepdims: bool = False,
                    name: str | None = None) -> Tensor:
    """Per-row variance (empty rows give NaN, as TF)."""
    _row_axis(input_tensor, axis, "tf.math.reduce_variance")
    mean = _reduce("mean", input_tensor, 1, False)
    centred = input_tensor.values - gather_ops.gather(mean, input_tensor.value_rowids())
    out = _reduce("mean", input_tensor.with_values(centred * centred), 1, False)
    return array_ops.expand_dims(out, 1) if keepdims else out


@dispatch_for_api(reduce_ops.reduce_std, RaggedTensor)
def reduce_std(input_tensor: RaggedTensor, axis: Any = None, keepdims: bool = False,
               name: str | None = None) -> Tensor:
    return math_ops.sqrt(reduce_variance(input_tensor, axis, keepdims))


@dispatch_for_api(reduce_ops.reduce_logsumexp, RaggedTensor)
def reduce_logsumexp(input_tensor: RaggedTensor, axis: Any = None, keepdims: bool = False,
                     name: str | None = None) -> Tensor:
    """log(sum(exp(row))) per row, shifted by the row's max (an empty row gives -inf)."""
    _row_axis(input_tensor, axis, "tf.math.reduce_logsumexp")
    peak = _reduce("max", input_tensor, 1, False)
    shift = math_ops.where(math_ops.is_finite(peak), peak, array_ops.zeros_like(peak))
    shifted = math_ops.exp(input_tensor.values - gather_ops.gather(
        shift, input_tensor.value_rowids()))
    total = _reduce("sum", input_tensor.with_values(shifted), 1, False)
    out = math_ops.log(total) + shift
    return array_ops.expand_dims(out, 1) if keepdims else out


@dispatch_for_api(gather_ops.gather_nd, RaggedTensor)
def gather_nd(params: RaggedTensor, indices: Any, batch_dims: int = 0,
              name: str | None = None) -> Any:
    """Entries (or rows) at full or partial index tuples: [..., k] indices index the first k
    dims one after the other."""
    if batch_dims:
        raise NotImplementedError("tf.gather_nd of a RaggedTensor with batch_dims")
    idx = _tensor(indices)
    k = idx.shape.as_list()[-1]
    lead = array_ops.shape(idx)[:-1]
    flat = array_ops.reshape(idx, [-1, k])
    out: Any = params
    picked = None
    for j in range(k):  # row j of the index tuples, one dimension at a time
        column = flat[:, j]
        if picked is None:
            picked = take_rows(out, column)
        else:
            picked = _take_per_row(picked, column)
    if idx.shape.rank == 2:
        return picked
    if isinstance(picked, RaggedTensor):
        raise NotImplementedError("tf.gather_nd of a RaggedTensor with indices of rank > 2 "
                                  "and ragged results")
    tail = array_ops.shape(picked)[1:]
    return array_ops.reshape(picked, array_ops.concat([lead, tail], 0))


def _take_per_row(rows: Any, column: Tensor) -> Any:
    """rows[i][column[i]] for every i (rows ragged or dense)."""
    if not isinstance(rows, RaggedTensor):
        n = array_ops.shape(rows, out_type=column.dtype)[0]
        pairs = array_ops.stack([creation_ops.range_(0, n, dtype=column.dtype), column], 1)
        return gather_ops.gather_nd(rows, pairs)
    starts = math_ops.cast(rows.row_starts(), column.dtype)
    return take_rows(rows.values, starts + column)


def stack_dynamic_partitions(data: Any, partitions: Any, num_partitions: Any,
                             name: str | None = None) -> RaggedTensor:
    """Row i holds the elements of `data` whose partition is i, in order."""
    parts = math_ops.cast(_tensor(partitions), _dtypes.int64)
    order = array_ops.argsort(parts, stable=True)
    n = math_ops.cast(_tensor(num_partitions), _dtypes.int64)
    lengths = segment_ops.unsorted_segment_sum(array_ops.ones_like(parts), parts, n)
    values = take_rows(data, order) if isinstance(data, RaggedTensor) else \
        gather_ops.gather(_tensor(data), order)
    return RaggedTensor.from_row_lengths(values, lengths, validate=False)
