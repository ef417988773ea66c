"""``tf.bitwise`` and ``tf.sets``: integer bit operations and set operations on the last dim."""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow._api import export
from tapeflow.framework.dispatch import apply, op
from tapeflow.framework.shape_rules import elementwise, same_as_first
from tapeflow.ops import math_ops
from tapeflow.ops.array_ops import _tensor


def _binary(name: str, ufunc: Any, tf_name: str) -> None:
    kernel = op(name, same_dtype=True, shape=elementwise)(ufunc)

    def api(x: Any, y: Any, name: str | None = None) -> Any:
        a, b = math_ops._as_pair(x, y)
        if not a.dtype.is_integer:
            raise TypeError(f"tf.bitwise.{tf_name} needs integer inputs, got {a.dtype.name}")
        return apply(kernel, a, b)

    api.__name__ = tf_name
    export(f"bitwise.{tf_name}")(api)


_binary("BitwiseAnd", np.bitwise_and, "bitwise_and")
_binary("BitwiseOr", np.bitwise_or, "bitwise_or")
_binary("BitwiseXor", np.bitwise_xor, "bitwise_xor")
_binary("LeftShift", np.left_shift, "left_shift")
_binary("RightShift", np.right_shift, "right_shift")
_invert = op("Invert", shape=same_as_first)(np.invert)


@export("bitwise.invert")
def invert(x: Any, name: str | None = None) -> Any:
    return apply(_invert, _tensor(x))


# --- sets: the last dimension of dense tensors holds each set; results are SparseTensors ------


def _set_op(kind: str):
    @op(f"DenseToDenseSetOperation{kind}", multi_output=True,
        shape=lambda a, b, *, validate: [((None, None), a[1]), ((None,), a[1]),
                                         ((None,), a[1])])
    def kernel(a, b, *, validate):
        lead = a.shape[:-1]
        rows_a = a.reshape(-1, a.shape[-1])
        rows_b = np.broadcast_to(b, lead + b.shape[-1:]).reshape(-1, b.shape[-1])
        indices, values, width = [], [], 0
        for r, (x, y) in enumerate(zip(rows_a, rows_b)):
            if kind == "intersection":
                out = np.intersect1d(x, y)
            elif kind == "union":
                out = np.union1d(x, y)
            else:
                out = np.setdiff1d(x, y)
            width = max(width, len(out))
            coords = np.unravel_index(r, lead) if lead else ()
            for j, v in enumerate(out):
                indices.append(list(coords) + [j])
                values.append(v)
        idx = np.asarray(indices, np.int64).reshape(-1, len(lead) + 1)
        shape = np.asarray(list(lead) + [width], np.int64)
        return idx, np.asarray(values, a.dtype), shape

    return kernel


_intersection, _union, _difference = (_set_op(k) for k in ("intersection", "union",
                                                           "difference"))


# SparseTensor (the sets ops' results) and its reduce_sum, installed by tapeflow.sparse (above)
sparse_tensor: Any = None
sparse_reduce_sum: Any = None


def _sparse(kernel: Any, a: Any, b: Any) -> Any:
    x = _tensor(a)
    y = _tensor(b, x.dtype)
    return sparse_tensor(*apply(kernel, x, y, validate=True))


@export("sets.intersection", "sets.set_intersection")
def intersection(a: Any, b: Any, validate_indices: bool = True) -> Any:
    """Per row (last dim), the sorted elements in both a and b, as a SparseTensor."""
    return _sparse(_intersection, a, b)


@export("sets.union", "sets.set_union")
def union(a: Any, b: Any, validate_indices: bool = True) -> Any:
    return _sparse(_union, a, b)


@export("sets.difference", "sets.set_difference")
def difference(a: Any, b: Any, aminusb: bool = True, validate_indices: bool = True) -> Any:
    return _sparse(_difference, a, b) if aminusb else _sparse(_difference, b, a)


@export("sets.size", "sets.set_size")
def size(a: Any, validate_indices: bool = True) -> Any:
    """Number of distinct elements per row of a SparseTensor or dense tensor."""
    from tapeflow.framework import dtypes as _dtypes
    from tapeflow.ops import array_ops

    if hasattr(a, "indices"):
        ones = array_ops.ones_like(a.values, dtype=_dtypes.int32)
        return sparse_reduce_sum(a.with_values(ones), axis=-1)
    x = _tensor(a)
    lead = x.shape.as_list()[:-1]
    counts = [len(np.unique(row)) for row in x.numpy().reshape(-1, x.shape[-1])]
    return array_ops.reshape(np.asarray(counts, np.int32), lead)
