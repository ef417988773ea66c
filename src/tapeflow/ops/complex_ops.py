"""Complex numbers: ``tf.complex``, ``tf.math.real/imag/conj/angle`` with gradients (TensorFlow's
convention: the gradient of a real function of z is d/dRe + i d/dIm)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow._api import export
from tapeflow.framework import backprop as _backprop
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework.dispatch import apply, op
from tapeflow.ops.array_ops import _tensor, zeros_like

_REAL_OF = {np.dtype(np.complex64): _dtypes.float32, np.dtype(np.complex128): _dtypes.float64}


def _real_spec(x):
    return x[0], {_dtypes.complex64: _dtypes.float32,
                  _dtypes.complex128: _dtypes.float64}.get(x[1], x[1])


@op("Real", shape=_real_spec)
def _real(x):
    return np.real(x).copy()


@op("Imag", shape=_real_spec)
def _imag(x):
    return np.imag(x).copy()


@op("Conj", shape=lambda x: x)
def _conj(x):
    return np.conj(x)


@op("Complex", shape=lambda re, im: (re[0], _dtypes.complex128 if re[1] is _dtypes.float64
                                     else _dtypes.complex64))
def _complex(re, im):
    kind = np.complex128 if re.dtype == np.float64 else np.complex64
    return (re + 1j * im).astype(kind)


@_real.def_grad
def _(g, out, x):
    return apply(_complex, g, g * 0.0)


@_imag.def_grad
def _(g, out, x):
    return apply(_complex, g * 0.0, g)


@_conj.def_grad
def _(g, out, x):
    return apply(_conj, g)


@_complex.def_grad
def _(g, out, re, im):
    return apply(_real, g), apply(_imag, g)


@export("math.real", "real")
def real(input: Any, name: str | None = None) -> Any:  # noqa: A002
    x = _tensor(input)
    return apply(_real, x) if x.dtype.is_complex else x


@export("math.imag", "imag")
def imag(input: Any, name: str | None = None) -> Any:  # noqa: A002
    """Of a real tensor: zeros, unconnected to it (as TensorFlow: no gradient flows)."""
    x = _tensor(input)
    return apply(_imag, x) if x.dtype.is_complex else zeros_like(x)


@export("math.conj", "conj")
def conj(x: Any, name: str | None = None) -> Any:
    t = _tensor(x)
    return apply(_conj, t) if t.dtype.is_complex else t


@export("complex", "dtypes.complex")
def complex(real: Any, imag: Any, name: str | None = None) -> Any:  # noqa: A001
    re = _tensor(real)
    return apply(_complex, re, _tensor(imag, re.dtype))


@export("math.angle")
def angle(input: Any, name: str | None = None) -> Any:  # noqa: A002
    from tapeflow.ops.special_math_ops import atan2

    x = _tensor(input)
    if not x.dtype.is_complex:
        from tapeflow.ops import array_ops, math_ops

        return math_ops.where(math_ops.less(x, 0), array_ops.ones_like(x) * np.pi,
                              array_ops.zeros_like(x))
    return atan2(imag(x), real(x))


# Ops whose gradient rule is written as the derivative of a holomorphic function (g * f'(x)).
# TensorFlow's convention for complex inputs is g * conj(f'(x)), which is the same rule
# evaluated at the conjugated inputs and outputs (the derivatives have real coefficients).
# MatrixDeterminant conjugates its input only: TensorFlow's rule multiplies by det itself
# (g * det * inverse(x)^H), so its gradient is not d/dRe + i d/dIm; its numbers are kept.
HOLOMORPHIC = {name: True for name in (
    "Mul", "RealDiv", "MatMul", "Einsum", "Exp", "Log", "Log1p", "Expm1", "Sin", "Cos", "Tan",
    "Sinh", "Cosh", "Tanh", "Asin", "Acos", "Atan", "Asinh", "Acosh", "Atanh", "Sqrt", "Rsqrt",
    "Reciprocal", "Square", "Pow", "Sigmoid", "Prod", "Cumprod", "MatrixInverse", "Xlogy")}
HOLOMORPHIC["MatrixDeterminant"] = False


def _conjugated(rule: Any, outputs_too: bool) -> Any:
    def conjugating_rule(g, out, *inputs, **attrs):
        if not inputs[0].dtype.is_complex:
            return rule(g, out, *inputs, **attrs)
        if outputs_too:
            out = tuple(map(_conj_if_complex, out)) if isinstance(out, tuple) else \
                _conj_if_complex(out)
        return rule(g, out, *map(_conj_if_complex, inputs), **attrs)

    conjugating_rule.__wrapped__ = rule
    if rule in _backprop.selective:  # told which inputs need a gradient: keep telling it
        _backprop.selective.add(conjugating_rule)
    return conjugating_rule


def _conj_if_complex(t: Any) -> Any:
    return apply(_conj, t) if t.dtype.is_complex else t


def install_conjugate_gradients() -> None:
    """Give the holomorphic ops TensorFlow's complex-gradient convention (called once by
    ``tapeflow.ops`` after every op is defined)."""
    from tapeflow.framework.dispatch import REGISTRY

    for name, outputs_too in HOLOMORPHIC.items():
        o = REGISTRY[name]
        if o.grad_fn is not None and not hasattr(o.grad_fn, "__wrapped__"):
            o.grad_fn = _conjugated(o.grad_fn, outputs_too)


@op("ComplexAbs", shape=_real_spec)
def _complex_abs(x):
    return np.abs(x)


@_complex_abs.def_grad
def _(g, out, x):
    from tapeflow.ops import math_ops

    return math_ops.divide_no_nan(apply(_complex, g, g * 0.0) * x, apply(_complex, out, out * 0.0))


def complex_abs(x: Any) -> Any:
    """|x| of a complex tensor, a real tensor (TensorFlow's ComplexAbs)."""
    return apply(_complex_abs, x)
