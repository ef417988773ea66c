"""``DynamicSlice``: a block of static size whose start is a run-time int tensor.

``tf.slice(x, begin, size)`` with a traced ``begin`` (random crops, sliding windows in a loop)
needs an op whose offsets are an input rather than an attribute. Starts are clamped so the block
stays inside ``x`` (XLA's rule; TF raises instead, which a traced graph cannot do before run time:
here the kernel raises when a start is out of range). The gradient pads ``g`` back to ``x``'s
shape at the same offsets.
"""

from __future__ import annotations

import numpy as np

from tapeflow.framework import errors
from tapeflow.framework.dispatch import apply, op


def _rule(x, begin, *, size):
    """Static sizes are known; a -1 extent depends on the run-time start."""
    return tuple(None if n == -1 else n for n in size), x[1]


def _window(shape: tuple, begin: np.ndarray, size: tuple) -> tuple:
    starts = [int(b) for b in np.asarray(begin).reshape(-1)]
    if len(starts) != len(shape):
        raise errors.InvalidArgumentError(
            None, "DynamicSlice", f"DynamicSlice: begin has {len(starts)} entries for a tensor "
                                  f"of rank {len(shape)} (shape {list(shape)})")
    window = []
    for dim, (start, extent, n) in enumerate(zip(starts, size, shape)):
        extent = n - start if extent == -1 else extent
        if start < 0 or extent < 0 or start + extent > n:
            raise errors.InvalidArgumentError(
                None, "DynamicSlice", f"DynamicSlice: the block [{start}, {start + extent}) "
                                      f"leaves dimension {dim} of size {n} (shape "
                                      f"{list(shape)}, begin {starts}, size {list(size)})")
        window.append(slice(start, start + extent))
    return tuple(window)


@op("DynamicSlice", shape=_rule)
def _dynamic_slice(x, begin, *, size):
    return x[_window(x.shape, begin, size)]


@op("DynamicSliceGrad", shape=lambda g, begin, like, *, size: (like[0], g[1]))
def _dynamic_slice_grad(g, begin, like, *, size):
    out = np.zeros(like.shape, dtype=g.dtype)
    out[_window(like.shape, begin, size)] = g
    return out


@_dynamic_slice.def_grad
def _(g, out, x, begin, *, size):
    return apply(_dynamic_slice_grad, g, begin, x, size=size), None


@_dynamic_slice_grad.def_grad
def _(gg, out, g, begin, like, *, size):
    return apply(_dynamic_slice, gg, begin, size=size), None, None


def dynamic_slice(x, begin, size: tuple):
    """x[begin : begin + size] along every axis, `begin` an int tensor (-1 in size: to the end)."""
    return apply(_dynamic_slice, x, begin, size=tuple(int(n) for n in size))
