"""Reusable static shape/dtype rules for op definitions (spec = (shape tuple | None, DType))."""

from __future__ import annotations

from typing import Any

from tapeflow.framework import errors


def broadcast_shapes(*shapes: tuple | None, op: str = "op") -> tuple | None:
    """NumPy broadcasting over shapes with unknown (None) dims."""
    if any(s is None for s in shapes):
        return None
    rank = max(len(s) for s in shapes)
    out = []
    for i in range(rank):
        dims = [s[len(s) - rank + i] for s in shapes if len(s) - rank + i >= 0]
        known = {d for d in dims if d is not None and d != 1}
        if len(known) > 1:
            raise errors.InvalidArgumentError(
                f"{op}: incompatible shapes for broadcasting: "
                f"{', '.join(str(list(s)) for s in shapes)}\n{errors.user_line()}")
        if known:
            out.append(known.pop())
        elif any(d is None for d in dims):
            out.append(None)
        else:
            out.append(1)
    return tuple(out)


def elementwise(*specs: Any, **attrs: Any) -> tuple:
    """Broadcast the inputs' shapes; the dtype is the first input's."""
    return broadcast_shapes(*(s for s, _ in specs)), specs[0][1]


def same_as_first(*specs: Any, **attrs: Any) -> tuple:
    return specs[0]


def with_dtype(dtype) -> Any:
    """Rule: broadcast shape, fixed output dtype (comparisons give bool)."""

    def rule(*specs: Any, **attrs: Any) -> tuple:
        return broadcast_shapes(*(s for s, _ in specs)), dtype

    return rule
