"""``tf.experimental.dispatch_for_unary_elementwise_apis`` / ``binary`` / ``binary ... assert``
and ``unregister_dispatch_for``: one handler for every elementwise API of a kind, as
TensorFlow's extension-type guide uses them (``tf.abs(masked)``, ``tf.add(a, b)``).

Each registration is a ``dispatch_for_api`` per API in TF's lists (the ones tapeflow has). The
handler gets ``api_func`` (the API with its other arguments bound) and the operand(s); a binary
handler runs only when both operands match its types, else the API runs as usual."""

from __future__ import annotations

import typing
from collections.abc import Callable
from typing import Any

from tapeflow._api import export
from tapeflow.framework import composite

_UNARY = ("math.abs", "math.acos", "math.acosh", "math.angle", "math.asin", "math.asinh",
          "math.atan", "math.atanh", "math.bessel_i0", "math.bessel_i0e", "math.bessel_i1",
          "math.bessel_i1e", "math.ceil", "math.conj", "math.cos", "math.cosh", "math.digamma",
          "math.erf", "math.erfc", "math.erfinv", "math.exp", "math.expm1", "math.floor",
          "math.imag", "math.is_finite", "math.is_inf", "math.is_nan", "math.lgamma",
          "math.log", "math.log1p", "math.log_sigmoid", "math.logical_not", "math.ndtri",
          "math.negative", "math.real", "math.reciprocal", "math.reciprocal_no_nan",
          "math.rint", "math.round", "math.rsqrt", "math.sigmoid", "math.sign", "math.sin",
          "math.sinh", "math.softplus", "math.softsign", "math.sqrt", "math.square",
          "math.tan", "math.tanh", "nn.elu", "nn.gelu", "nn.relu", "nn.relu6", "nn.selu",
          "nn.silu", "nn.leaky_relu", "cast", "identity", "stop_gradient", "zeros_like",
          "ones_like", "bitwise.invert", "strings.length", "strings.lower", "strings.upper",
          "strings.strip")
_BINARY = ("math.add", "math.atan2", "math.divide", "math.divide_no_nan", "math.equal",
           "math.floordiv", "math.floormod", "math.greater", "math.greater_equal",
           "math.less", "math.less_equal", "math.logical_and", "math.logical_or",
           "math.logical_xor", "math.maximum", "math.minimum", "math.multiply",
           "math.multiply_no_nan", "math.not_equal", "math.pow", "math.squared_difference",
           "math.subtract", "math.truediv", "math.xdivy", "math.xlogy", "math.zeta",
           "math.igamma", "math.igammac", "bitwise.bitwise_and", "bitwise.bitwise_or",
           "bitwise.bitwise_xor", "bitwise.left_shift", "bitwise.right_shift")
_BINARY_ASSERT = ("debugging.assert_equal", "debugging.assert_none_equal",
                  "debugging.assert_less", "debugging.assert_less_equal",
                  "debugging.assert_greater", "debugging.assert_greater_equal",
                  "debugging.assert_near")

_registered: dict = {}  # id(handler) -> [(api, per-api handler)]


def _resolve(names: tuple) -> list:
    import tapeflow

    out = []
    for name in names:
        obj = tapeflow
        for part in name.split("."):
            obj = getattr(obj, part, None)
            if obj is None:
                break
        if obj is not None:
            out.append(getattr(obj, "_tf_api", obj))
    return list(dict.fromkeys(out))


def _types(t: Any) -> tuple:
    args = typing.get_args(t)
    return tuple(args) if args else (t,)


def _operands(args: tuple, kwargs: dict, n: int) -> tuple:
    """The first n operands (positional first, then keyword) and a function re-calling the API
    with new operands and the remaining arguments."""
    pos = list(args[:n])
    keys = [k for k in kwargs if k not in ("name",)][:n - len(pos)]
    operands = pos + [kwargs[k] for k in keys]
    rest_args = args[n:]
    rest_kwargs = {k: v for k, v in kwargs.items() if k not in keys}
    return operands, rest_args, rest_kwargs


def _register(handler: Callable, apis: list, kinds: tuple, arity: int, match: Callable) -> None:
    entries = _registered.setdefault(id(handler), [])
    for api in apis:
        def per_api(*args: Any, _api: Any = api, **kwargs: Any) -> Any:
            operands, rest_args, rest_kwargs = _operands(args, kwargs, arity)
            if len(operands) < arity or not match(*operands):
                return _api(*args, **kwargs)

            def api_func(*new: Any) -> Any:
                return _api(*new, *rest_args, **rest_kwargs)

            return handler(api_func, *operands)

        composite.dispatch_for_api(api, *kinds)(per_api)
        entries.append((api, per_api))


@export("experimental.dispatch_for_unary_elementwise_apis")
def dispatch_for_unary_elementwise_apis(x_type: Any) -> Callable:
    """Decorator: handler(api_func, x) runs for every unary elementwise API whose operand is
    an x_type (a class or a typing.Union of classes)."""
    kinds = _types(x_type)

    def decorate(handler: Callable) -> Callable:
        _register(handler, _resolve(_UNARY), kinds, 1, lambda x: isinstance(x, kinds))
        return handler

    return decorate


def _binary(x_type: Any, y_type: Any, names: tuple) -> Callable:
    xk, yk = _types(x_type), _types(y_type)

    def decorate(handler: Callable) -> Callable:
        _register(handler, _resolve(names), tuple(dict.fromkeys(xk + yk)), 2,
                  lambda x, y: isinstance(x, xk) and isinstance(y, yk))
        return handler

    return decorate


@export("experimental.dispatch_for_binary_elementwise_apis")
def dispatch_for_binary_elementwise_apis(x_type: Any, y_type: Any) -> Callable:
    """Decorator: handler(api_func, x, y) runs for every binary elementwise API whose operands
    are an x_type and a y_type."""
    return _binary(x_type, y_type, _BINARY)


@export("experimental.dispatch_for_binary_elementwise_assert_apis")
def dispatch_for_binary_elementwise_assert_apis(x_type: Any, y_type: Any) -> Callable:
    """Decorator: handler(assert_func, x, y) for the binary assertions (assert_equal, ...)."""
    return _binary(x_type, y_type, _BINARY_ASSERT)


@export("experimental.unregister_dispatch_for")
def unregister_dispatch_for(dispatch_target: Callable) -> None:
    """Remove a handler registered with dispatch_for_api or an elementwise decorator."""
    pairs = _registered.pop(id(dispatch_target), None)
    if pairs is None:
        pairs = [(None, dispatch_target)]
    found = False
    for handlers in composite._HANDLERS.values():
        for _, per_api in pairs:
            keep = [(k, h) for k, h in handlers if h is not per_api]
            found = found or len(keep) != len(handlers)
            handlers[:] = keep
    if not found:
        raise ValueError(f"Function {dispatch_target!r} was not registered using a dispatch "
                         f"decorator.")
