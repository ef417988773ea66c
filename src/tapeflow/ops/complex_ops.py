"""Complex numbers: ``tf.complex``, ``tf.math.real/imag/conj/angle`` with gradients (TensorFlow's
convention: the gradient of a real function of z is d/dRe + i d/dIm)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow._api import export
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework.dispatch import apply, op
from tapeflow.ops.array_ops import _tensor

_REAL_OF = {np.dtype(np.complex64): _dtypes.float32, np.dtype(np.complex128): _dtypes.float64}


def _real_spec(x):
    return x[0], {_dtypes.complex64: _dtypes.float32,
                  _dtypes.complex128: _dtypes.float64}.get(x[1], x[1])


@op("Real", shape=_real_spec)
def _real(x):
    return np.real(x).copy()


@op("Imag", shape=_real_spec)
def _imag(x):
    return np.imag(x).copy() if x.dtype.kind == "c" else np.zeros_like(x)


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
    return apply(_imag, _tensor(input))


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
