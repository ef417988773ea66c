"""Shapes given to ops as arguments: static tuples, or tensors known only at run time.

An op taking a shape (``tf.zeros``, ``tf.reshape``, the random ops) gets a static shape as an
attribute; a shape built from ``tf.shape(x)`` inside a traced function becomes the op's input,
and what is known of it when tracing (``known_dims``) becomes the output's static shape.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework import errors
from tapeflow.framework.constant import convert_to_tensor
from tapeflow.framework.tensor import EagerTensor, Tensor


def _is_symbolic(x: Any) -> bool:
    return isinstance(x, Tensor) and not isinstance(x, EagerTensor)


def _plain_ints(shape: Any) -> bool:
    """A list or tuple of Python ints: the common shape argument, taken as it is."""
    kind = type(shape)
    if kind is not tuple and kind is not list:
        return False
    for d in shape:
        if type(d) is not int:
            return False
    return True


def _shape_arg(shape: Any) -> tuple:
    """A static shape from a list/tuple/TensorShape/eager tensor (attributes are Python values)."""
    if _plain_ints(shape):
        return tuple(shape)
    if hasattr(shape, "as_list"):
        shape = shape.as_list()
    elif hasattr(shape, "numpy"):
        shape = shape.numpy().tolist()
    elif isinstance(shape, np.ndarray):
        shape = shape.tolist()
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return tuple(-1 if d is None else int(d) for d in shape)


def _dynamic_shape(shape: Any):
    """The shape as a symbolic int tensor when it is only known at run time, else None."""
    if _plain_ints(shape):
        return None
    if _is_symbolic(shape):
        return shape
    if isinstance(shape, (list, tuple)) and any(_is_symbolic(d) for d in shape):
        return convert_to_tensor(shape)
    return None


def _known_rule(x, shape, *, known):
    """A shape-tensor op's output: the dims known at trace time (-1, to be inferred, is not)."""
    return (None if known is None else tuple(None if d is None or d < 0 else d for d in known),
            x[1])


def _filled_rule(*dims, shape, dtype, **attrs):
    """Output of an op filling `shape` (its static part; the run-time shape, if any, comes as
    the one input `dims`)."""
    return shape, dtype


def run_time_shape(dims: tuple, shape: tuple) -> tuple:
    """The shape a filling op makes: its run-time input if it has one, else its attribute."""
    return tuple(int(d) for d in dims[0].tolist()) if dims else shape


def shape_operands(shape: Any, op_name: str) -> tuple[tuple, tuple]:
    """(inputs, static shape) for an op that fills `shape`: no input and the shape when it is
    known now, else the run-time shape tensor as the one input and what is known of it (a
    dim of ``tf.shape(x)`` is known where x's is, a constant dim always)."""
    dyn = _dynamic_shape(shape)
    if dyn is None:
        dims = _shape_arg(shape)
        if any(d < 0 for d in dims):
            raise ValueError(f"{op_name}: the shape must be fully known, got {list(dims)}")
        return (), dims
    if dyn.dtype not in (_dtypes.int32, _dtypes.int64) or dyn.shape.rank != 1:
        raise ValueError(f"{op_name}: a shape tensor must be a 1-D int32/int64 tensor, got "
                         f"{dyn.dtype.name} of shape {dyn.shape}\n{errors.user_line()}")
    return (dyn,), known_dims(dyn)


def known_dims(shape: Any) -> tuple | None:
    """What is known at trace time of a 1-D shape tensor's value: ints where a dim is a
    constant or a static dim of a tensor whose shape it took, None elsewhere; None if not
    even its length is known."""
    node = getattr(shape, "node", None)
    name = node.op.name if node is not None else None
    if name == "Const":
        return tuple(int(v) for v in np.asarray(node.attrs["value"]).reshape(-1))
    if name == "Shape":
        return node.inputs[0].shape.as_tuple() if node.inputs[0].shape.rank is not None else None
    if name == "Pack" and node.attrs.get("axis", 0) == 0:
        return tuple(_known_scalar(t) for t in node.inputs)
    if name == "ConcatV2" and node.attrs.get("axis") in (0, -1):
        parts = [known_dims(t) for t in node.inputs]
        return None if any(p is None for p in parts) else sum(parts, ())
    if name == "StridedSlice" and len(node.attrs["spec"]) == 1:
        (kind, *bounds), = node.attrs["spec"]
        dims = known_dims(node.inputs[0])
        if kind == "s" and dims is not None:
            return dims[slice(*bounds)]
    length = shape.shape.as_tuple() if shape.shape.rank == 1 else None
    return None if length is None or length[0] is None else (None,) * length[0]


def _known_scalar(t: Any) -> int | None:
    """A scalar dim known at trace time: a constant, or ``tf.shape(x)[i]`` with x.shape[i] known."""
    node = getattr(t, "node", None)
    if node is None:
        return int(t.numpy()) if hasattr(t, "numpy") else None
    if node.op.name == "Const":
        return int(np.asarray(node.attrs["value"]))
    if node.op.name == "StridedSlice" and len(node.attrs["spec"]) == 1:
        (kind, *index), = node.attrs["spec"]
        dims = known_dims(node.inputs[0])
        if kind == "i" and dims is not None and -len(dims) <= index[0] < len(dims):
            return dims[index[0]]
    return None
