"""``tf.debugging``: assertions, ``check_numerics`` and ``enable_check_numerics``.

Assertions on values raise ``InvalidArgumentError`` now when eager; traced, they are a stateful
``Assert`` node that raises when the graph runs (with the user's line where it was written).
Static facts (rank, dtype, shapes known at trace time) are checked at once, as TensorFlow does.
``enable_check_numerics()`` checks every op's floating output as it runs and names the first op
to produce NaN or Inf and the user's line that called it; traced functions run eagerly while it
is on, so the check sees each op.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow._api import export
from tapeflow.framework import dispatch, errors
from tapeflow.framework.constant import convert_to_tensor
from tapeflow.framework.context import state as _state
from tapeflow.framework.dispatch import apply, op
from tapeflow.framework.tensor import Tensor
from tapeflow.ops import math_ops


def _t(x: Any) -> Any:
    return x if isinstance(x, Tensor) or hasattr(x, "_as_tensor") else convert_to_tensor(x)


def _summary(arrays: tuple, summarize: int) -> str:
    parts = []
    for a in arrays:
        flat = np.asarray(a).reshape(-1)
        shown = flat[:summarize].tolist()
        more = " ..." if flat.size > summarize else ""
        parts.append(f"{shown}{more}")
    return "; ".join(parts)


@op("Assert", multi_output=True, stateful=True, shape=lambda *specs, **attrs: [])
def _assert(condition, *data, message, summarize, location):
    if not np.all(condition):
        detail = _summary(data, summarize)
        raise errors.InvalidArgumentError(
            f"{message}{': ' if message and detail else ''}{detail}\n{location}")
    return ()


def _check(condition: Any, message: str, data: tuple = (), summarize: int | None = None) -> Any:
    """Raise now (eager) or add an Assert node (traced); returns None or the node."""
    summarize = 3 if summarize is None else summarize
    apply(_assert, condition, *[_t(d) for d in data], message=message, summarize=summarize,
          location=errors.user_line())
    graph = _state.graph
    return graph.nodes[-1] if graph is not None else None


@export("debugging.Assert", "Assert")
def Assert(condition: Any, data: Any, summarize: int | None = None,  # noqa: N802
           name: str | None = None) -> Any:
    """Raise InvalidArgumentError, printing `data`, when `condition` is False."""
    return _check(_t(condition), "assertion failed", tuple(data), summarize)


def _binary(compare: Any, text: str, x: Any, y: Any, message: str | None,
            summarize: int | None) -> Any:
    x, y = _t(x), _t(y)
    if y.dtype is not x.dtype:
        y = math_ops.cast(y, x.dtype)
    cond = compare(x, y)
    prefix = f"{message}. " if message else ""
    return _check(cond, f"{prefix}Condition x {text} y did not hold element-wise", (x, y),
                  summarize)


def _make_binary(name: str, compare: Any, text: str) -> None:
    def check(x: Any, y: Any, message: str | None = None, summarize: int | None = None,
              name: str | None = None) -> Any:
        return _binary(compare, text, x, y, message, summarize)

    check.__name__ = name
    check.__doc__ = f"Assert x {text} y elementwise (broadcasting)."
    export(f"debugging.{name}", name)(check)
    globals()[name] = check


for _name, _fn, _text in [("assert_equal", math_ops.equal, "=="),
                          ("assert_none_equal", math_ops.not_equal, "!="),
                          ("assert_less", math_ops.less, "<"),
                          ("assert_less_equal", math_ops.less_equal, "<="),
                          ("assert_greater", math_ops.greater, ">"),
                          ("assert_greater_equal", math_ops.greater_equal, ">=")]:
    _make_binary(_name, _fn, _text)


def _make_sign(name: str, compare: Any, text: str) -> None:
    def check(x: Any, message: str | None = None, summarize: int | None = None,
              name: str | None = None) -> Any:
        t = _t(x)
        prefix = f"{message}. " if message else ""
        return _check(compare(t, math_ops.cast(convert_to_tensor(0), t.dtype)),
                      f"{prefix}Condition x {text} 0 did not hold element-wise", (t,), summarize)

    check.__name__ = name
    export(f"debugging.{name}", name)(check)
    globals()[name] = check


for _name, _fn, _text in [("assert_positive", math_ops.greater, ">"),
                          ("assert_negative", math_ops.less, "<"),
                          ("assert_non_negative", math_ops.greater_equal, ">="),
                          ("assert_non_positive", math_ops.less_equal, "<=")]:
    _make_sign(_name, _fn, _text)


@export("debugging.assert_near", "assert_near")
def assert_near(x: Any, y: Any, rtol: Any = None, atol: Any = None, message: str | None = None,
                summarize: int | None = None, name: str | None = None) -> Any:
    """Assert |x - y| <= atol + rtol * |y| elementwise (defaults: 10 * eps of the dtype)."""
    x, y = _t(x), _t(y)
    eps = float(np.finfo(x.dtype._np).eps) if x.dtype.is_floating else 0.0
    rtol = 10 * eps if rtol is None else rtol
    atol = 10 * eps if atol is None else atol
    diff = math_ops.abs(x - y)
    bound = math_ops.cast(convert_to_tensor(atol), x.dtype) + math_ops.cast(
        convert_to_tensor(rtol), x.dtype) * math_ops.abs(y)
    prefix = f"{message}. " if message else ""
    return _check(math_ops.less_equal(diff, bound),
                  f"{prefix}x and y not equal to tolerance rtol = {rtol}, atol = {atol}", (x, y),
                  summarize)


@export("debugging.assert_all_finite")
def assert_all_finite(t: Any, msg: str, name: str | None = None, x: Any = None,
                      message: str | None = None) -> Any:
    return check_numerics(t if x is None else x, msg if message is None else message)


def _static_rank(x: Any) -> int | None:
    return _t(x).shape.rank


@export("debugging.assert_rank", "assert_rank")
def assert_rank(x: Any, rank: int, message: str | None = None, name: str | None = None) -> None:
    """Raise ValueError unless `x` has rank `rank`."""
    got = _static_rank(x)
    if got is not None and got != int(rank):
        raise ValueError(f"{message + '. ' if message else ''}Tensor must have rank {rank}. "
                         f"Received rank {got}, shape {_t(x).shape}\n{errors.user_line()}")


@export("debugging.assert_rank_at_least")
def assert_rank_at_least(x: Any, rank: int, message: str | None = None,
                         name: str | None = None) -> None:
    got = _static_rank(x)
    if got is not None and got < int(rank):
        raise ValueError(f"{message + '. ' if message else ''}Tensor must have rank at least "
                         f"{rank}. Received rank {got}\n{errors.user_line()}")


@export("debugging.assert_rank_in")
def assert_rank_in(x: Any, ranks: Any, message: str | None = None,
                   name: str | None = None) -> None:
    got = _static_rank(x)
    if got is not None and got not in [int(r) for r in ranks]:
        raise ValueError(f"{message + '. ' if message else ''}Tensor rank {got} is not one of "
                         f"{list(ranks)}\n{errors.user_line()}")


@export("debugging.assert_scalar")
def assert_scalar(tensor: Any, message: str | None = None, name: str | None = None) -> Any:
    assert_rank(tensor, 0, message)
    return tensor


@export("debugging.assert_type", "assert_type")
def assert_type(tensor: Any, tf_type: Any, message: str | None = None,
                name: str | None = None) -> None:
    from tapeflow.framework import dtypes

    want = dtypes.as_dtype(tf_type)
    if _t(tensor).dtype is not want:
        raise TypeError(f"{message + '. ' if message else ''}{_t(tensor)!r} must be of type "
                        f"{want!r}, got {_t(tensor).dtype!r}\n{errors.user_line()}")


@export("debugging.assert_integer")
def assert_integer(x: Any, message: str | None = None, name: str | None = None) -> None:
    if not _t(x).dtype.is_integer:
        raise TypeError(f"{message + '. ' if message else ''}Expected integer type, got "
                        f"{_t(x).dtype!r}")


@export("debugging.assert_same_float_dtype")
def assert_same_float_dtype(tensors: Any = None, dtype: Any = None) -> Any:
    from tapeflow.framework import dtypes

    found = {_t(t).dtype for t in tensors or []}
    if dtype is not None:
        found.add(dtypes.as_dtype(dtype))
    if len(found) > 1:
        raise ValueError(f"Tensors have different float dtypes: {sorted(d.name for d in found)}")
    result = found.pop() if found else dtypes.float32
    if not result.is_floating:
        raise ValueError(f"Expected floating point type, got {result!r}")
    return result


@export("debugging.assert_proper_iterable")
def assert_proper_iterable(values: Any) -> None:
    if isinstance(values, (Tensor, np.ndarray, str, bytes)) or not hasattr(values, "__iter__"):
        raise TypeError(f"Expected argument 'values' to be a 'proper' iterable, got {values!r}")


@export("debugging.assert_shapes")
def assert_shapes(shapes: Any, data: Any = None, summarize: int | None = None,
                  message: str | None = None, name: str | None = None) -> None:
    """Check each (tensor, dims) pair; a named dim must take one size across all tensors."""
    items = shapes.items() if isinstance(shapes, dict) else shapes
    sizes: dict = {}
    for x, dims in items:
        shape = _t(x).shape.as_tuple()
        dims = list(dims)
        if shape is None:
            continue
        if dims and dims[0] in ("...", Ellipsis):
            dims = dims[1:]
            shape = shape[len(shape) - len(dims):] if len(dims) <= len(shape) else None
        if shape is None or len(shape) != len(dims):
            raise ValueError(f"{message + '. ' if message else ''}Specified by tensor "
                             f"{_t(x)!r} dimensions {list(dims)}: wrong rank, got shape "
                             f"{list(_t(x).shape.as_tuple())}\n{errors.user_line()}")
        for d, size in zip(dims, shape):
            if size is None:
                continue
            if isinstance(d, int) and d != size or (isinstance(d, str) and sizes.setdefault(
                    d, size) != size):
                raise ValueError(f"{message + '. ' if message else ''}dimension {d!r} must be "
                                 f"{sizes.get(d, d)}, got {size} for a tensor of shape "
                                 f"{list(shape)}\n{errors.user_line()}")


@export("debugging.is_numeric_tensor")
def is_numeric_tensor(tensor: Any) -> bool:
    d = getattr(tensor, "dtype", None)
    return isinstance(tensor, Tensor) and d is not None and (
        d.is_floating or d.is_integer or d.is_complex)


# --- numerics -----------------------------------------------------------------------------------


@op("CheckNumerics", shape=lambda x, *, message, location: x)
def _check_numerics(x, *, message, location):
    if x.dtype.kind in "fc" and not np.all(np.isfinite(x)):
        kind = "NaN" if np.any(np.isnan(x)) else "Inf"
        raise errors.InvalidArgumentError(
            f"{message} : Tensor had {kind} values\n{location}")
    return x


@_check_numerics.def_grad
def _(g, out, x, *, message, location):
    return apply(_check_numerics, g, message=f"{message} (gradient)", location=location)


@export("debugging.check_numerics", "compat.v1.check_numerics")
def check_numerics(tensor: Any, message: str, name: str | None = None) -> Tensor:
    """`tensor` unchanged, or InvalidArgumentError naming `message` if it has NaN or Inf."""
    return apply(_check_numerics, _t(tensor), message=message, location=errors.user_line())


def _numerics_hook(op: Any, outs: Any) -> None:
    for t in outs if isinstance(outs, tuple) else (outs,):
        a = t._value
        if a.dtype.kind in "fc" and not np.isfinite(a).all():
            kind = "NaN" if np.isnan(a).any() else "Inf"
            raise errors.InvalidArgumentError(
                f"!!! Detected {kind} in the output of op {op.name} (the first op to produce "
                f"one; shape {list(a.shape)}, dtype {a.dtype}) !!!\n{errors.user_line()}")


_saved: dict = {}
# tf.config.functions_run_eagerly / run_functions_eagerly, installed by graph/function.py (above)
functions_eagerly: list = []


@export("debugging.enable_check_numerics")
def enable_check_numerics(stack_height_limit: int = 30, path_length_limit: int = 50) -> None:
    """Check every op's floating outputs for NaN/Inf as they are computed (functions run
    eagerly meanwhile); the error names the op and the user's line."""
    if dispatch.check_numerics_hook is None:
        get, run = functions_eagerly
        _saved["eager"] = get()
        run(True)
    dispatch.check_numerics_hook = _numerics_hook


@export("debugging.disable_check_numerics")
def disable_check_numerics() -> None:
    if dispatch.check_numerics_hook is not None:
        dispatch.check_numerics_hook = None
        functions_eagerly[1](_saved.pop("eager", False))


_filtering = {"on": True}


@export("debugging.enable_traceback_filtering")
def enable_traceback_filtering() -> None:
    """Errors already point at the user's line; recorded for API compatibility."""
    _filtering["on"] = True


@export("debugging.disable_traceback_filtering")
def disable_traceback_filtering() -> None:
    _filtering["on"] = False


@export("debugging.is_traceback_filtering_enabled")
def is_traceback_filtering_enabled() -> bool:
    return _filtering["on"]

