"""More special functions of ``tf.math``: modified Bessel functions, incomplete gamma and beta,
polygamma, Hurwitz zeta, erfcinv, lbeta, plus small reductions and helpers (cumulative_logsumexp,
reduce_euclidean_norm, invert_permutation, nextafter, accumulate_n).

Kernels are SciPy's ufuncs; gradients follow TensorFlow's rules and are written in tapeflow
ops. Where TensorFlow has no gradient for an argument (the order of polygamma, zeta's
exponent, betainc's a and b, igamma's a), there is none here either.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import special

from tapeflow._api import export
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework.dispatch import apply, op
from tapeflow.framework.shape_rules import elementwise, same_as_first
from tapeflow.framework.tensor import is_tensor
from tapeflow.ops import array_ops, math_ops, reduce_ops, special_math_ops
from tapeflow.ops.array_ops import _tensor
from tapeflow.ops.math_ops import unbroadcast


def _same(kernel: Any) -> Any:
    """A SciPy ufunc kept in its input's float dtype."""
    def run(*xs):
        return np.asarray(kernel(*xs)).astype(xs[-1].dtype, copy=False)
    return run


def _pair(x: Any, y: Any) -> tuple:
    """Both as tensors of one dtype: a tensor's, when only one of them is a tensor (a Python
    number beside a float64 tensor becomes float64, as TensorFlow converts it)."""
    if not is_tensor(x) and is_tensor(y):
        b = _tensor(y)
        return _tensor(x, b.dtype), b
    a = _tensor(x)
    return a, _tensor(y, a.dtype)


_i0 = op("BesselI0", elementwise=True, shape=same_as_first)(_same(special.i0))
_i1 = op("BesselI1", elementwise=True, shape=same_as_first)(_same(special.i1))
_i1e = op("BesselI1e", elementwise=True, shape=same_as_first)(_same(special.i1e))
_i0e = op("BesselI0e", elementwise=True, shape=same_as_first)(_same(special.i0e))


def _safe_ratio(y: Any, x: Any) -> Any:
    """y / x, with 0.5 where x == 0 (the limit of I1(x)/x, as TensorFlow takes it)."""
    zero = math_ops.equal(x, 0.0)
    safe_x = math_ops.where(zero, array_ops.ones_like(x), x)
    return math_ops.where(zero, 0.5 * array_ops.ones_like(x), y / safe_x)


@_i0.def_grad
def _(g, out, x):
    return g * apply(_i1, x)


@_i1.def_grad
def _(g, out, x):
    return g * (apply(_i0, x) - _safe_ratio(out, x))


@_i1e.def_grad
def _(g, out, x):
    return g * (apply(_i0e, x) - out * math_ops.sign(x) - _safe_ratio(out, x))


@_i0e.def_grad
def _(g, out, x):
    return g * (apply(_i1e, x) - math_ops.sign(x) * out)


@export("math.bessel_i0", "math.special.bessel_i0")
def bessel_i0(x: Any, name: str | None = None) -> Any:
    """Modified Bessel function of the first kind, order 0."""
    return apply(_i0, _tensor(x))


@export("math.bessel_i1", "math.special.bessel_i1")
def bessel_i1(x: Any, name: str | None = None) -> Any:
    """Modified Bessel function of the first kind, order 1."""
    return apply(_i1, _tensor(x))


@export("math.bessel_i0e", "math.special.bessel_i0e")
def bessel_i0e(x: Any, name: str | None = None) -> Any:
    """Exponentially scaled modified Bessel function of order 0: exp(-|x|) I0(x)."""
    return apply(_i0e, _tensor(x))


@export("math.bessel_i1e", "math.special.bessel_i1e")
def bessel_i1e(x: Any, name: str | None = None) -> Any:
    """Exponentially scaled modified Bessel function of order 1: exp(-|x|) I1(x)."""
    return apply(_i1e, _tensor(x))


# --- tf.math.special: Bessel functions of the first and second kinds, Dawson, Ei, Fresnel,
# Spence (derivatives as TensorFlow's gradients take them) -----------------------------------


def _special(name: str, kernel: Any, tf_name: str, doc: str) -> tuple:
    o = op(name, elementwise=True, shape=same_as_first)(_same(kernel))

    def api(x: Any, name: str | None = None) -> Any:
        return apply(o, _tensor(x))

    api.__name__, api.__doc__ = tf_name, doc
    export(f"math.special.{tf_name}")(api)
    return o, api


_j0, bessel_j0 = _special("BesselJ0", special.j0, "bessel_j0", "Bessel function J0.")
_j1, bessel_j1 = _special("BesselJ1", special.j1, "bessel_j1", "Bessel function J1.")
_y0, bessel_y0 = _special("BesselY0", special.y0, "bessel_y0", "Bessel function Y0.")
_y1, bessel_y1 = _special("BesselY1", special.y1, "bessel_y1", "Bessel function Y1.")
_k0, bessel_k0 = _special("BesselK0", special.k0, "bessel_k0",
                          "Modified Bessel function of the second kind, K0.")
_k1, bessel_k1 = _special("BesselK1", special.k1, "bessel_k1",
                          "Modified Bessel function of the second kind, K1.")
_k0e, bessel_k0e = _special("BesselK0e", special.k0e, "bessel_k0e", "exp(x) K0(x).")
_k1e, bessel_k1e = _special("BesselK1e", special.k1e, "bessel_k1e", "exp(x) K1(x).")
_dawsn, dawsn = _special("Dawsn", special.dawsn, "dawsn", "Dawson's integral.")
_expint, expint = _special("Expint", special.expi, "expint", "The exponential integral Ei.")
_fresnel_cos, fresnel_cos = _special("FresnelCos", lambda x: special.fresnel(x)[1],
                                     "fresnel_cos", "Fresnel's cosine integral C(x).")
_fresnel_sin, fresnel_sin = _special("FresnelSin", lambda x: special.fresnel(x)[0],
                                     "fresnel_sin", "Fresnel's sine integral S(x).")
_spence, spence = _special("Spence", special.spence, "spence",
                           "Spence's integral: the integral of log(t) / (1 - t) from 1 to x.")


def _over_x(y: Any, x: Any) -> Any:
    return y / x


_j0.def_grad(lambda g, out, x: -g * apply(_j1, x))
_j1.def_grad(lambda g, out, x: g * (apply(_j0, x) - _safe_ratio(out, x)))
_y0.def_grad(lambda g, out, x: -g * apply(_y1, x))
_y1.def_grad(lambda g, out, x: g * (apply(_y0, x) - _over_x(out, x)))
_k0.def_grad(lambda g, out, x: -g * apply(_k1, x))
_k1.def_grad(lambda g, out, x: -g * (apply(_k0, x) + _over_x(out, x)))
_k0e.def_grad(lambda g, out, x: g * (out - apply(_k1e, x)))
_k1e.def_grad(lambda g, out, x: g * (out - apply(_k0e, x) - _over_x(out, x)))
_dawsn.def_grad(lambda g, out, x: g * (1.0 - 2.0 * x * out))
_expint.def_grad(lambda g, out, x: g * math_ops.exp(x) / x)
_fresnel_cos.def_grad(lambda g, out, x: g * math_ops.cos(float(np.pi / 2) * x * x))
_fresnel_sin.def_grad(lambda g, out, x: g * math_ops.sin(float(np.pi / 2) * x * x))


@_spence.def_grad
def _(g, out, x):
    one = math_ops.equal(x, 1.0)  # log(x) / (1 - x) tends to -1 there
    safe = math_ops.where(one, array_ops.zeros_like(x), 1.0 - x)
    return g * math_ops.where(one, -array_ops.ones_like(x),
                              math_ops.log(x) / math_ops.where(one, array_ops.ones_like(x),
                                                               safe))


_erfcinv = op("Erfcinv", elementwise=True, shape=same_as_first)(_same(special.erfcinv))


@_erfcinv.def_grad
def _(g, out, x):
    return g * float(-np.sqrt(np.pi) / 2) * math_ops.exp(out * out)


@export("math.erfcinv")
def erfcinv(x: Any, name: str | None = None) -> Any:
    """The inverse of erfc."""
    return apply(_erfcinv, _tensor(x))


_igamma = op("Igamma", elementwise=True, shape=elementwise)(_same(special.gammainc))
_igammac = op("Igammac", elementwise=True, shape=elementwise)(_same(special.gammaincc))


def _igamma_dx(a: Any, x: Any) -> Any:
    """d/dx P(a, x) = exp(-x + (a - 1) log x - lgamma(a))."""
    return math_ops.exp(-x + (a - 1.0) * math_ops.log(x) - special_math_ops.lgamma(a))


@_igamma.def_grad
def _(g, out, a, x):
    return None, unbroadcast(g * _igamma_dx(a, x), x)


@_igammac.def_grad
def _(g, out, a, x):
    return None, unbroadcast(-g * _igamma_dx(a, x), x)


@export("math.igamma")
def igamma(a: Any, x: Any, name: str | None = None) -> Any:
    """The regularized lower incomplete gamma function P(a, x)."""
    return apply(_igamma, *_pair(a, x))


@export("math.igammac")
def igammac(a: Any, x: Any, name: str | None = None) -> Any:
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x)."""
    return apply(_igammac, *_pair(a, x))


def _betainc_shape(a, b, x):
    return elementwise(elementwise(a, b), x)


@op("Betainc", shape=_betainc_shape, same_dtype=True)
def _betainc(a, b, x):
    return _same(special.betainc)(a, b, x)


@_betainc.def_grad
def _(g, out, a, b, x):
    lgamma = special_math_ops.lgamma
    log_beta = lgamma(a) + lgamma(b) - lgamma(a + b)
    dx = math_ops.exp((a - 1.0) * math_ops.log(x) + (b - 1.0) * math_ops.log1p(-x) - log_beta)
    return None, None, unbroadcast(g * dx, x)


@export("math.betainc")
def betainc(a: Any, b: Any, x: Any, name: str | None = None) -> Any:
    """The regularized incomplete beta function I_x(a, b)."""
    ta = _tensor(a)
    return apply(_betainc, ta, _tensor(b, ta.dtype), _tensor(x, ta.dtype))


_polygamma = special_math_ops.polygamma_op


@export("math.polygamma")
def polygamma(a: Any, x: Any, name: str | None = None) -> Any:
    """The a-th derivative of digamma (a a non-negative integer value)."""
    return apply(_polygamma, *_pair(a, x))


_zeta = op("Zeta", elementwise=True, shape=elementwise)(_same(special.zeta))


@_zeta.def_grad
def _(g, out, x, q):
    return None, unbroadcast(-g * x * apply(_zeta, x + 1.0, q), q)


@export("math.zeta")
def zeta(x: Any, q: Any, name: str | None = None) -> Any:
    """The Hurwitz zeta function: sum over n >= 0 of (q + n) ** -x."""
    return apply(_zeta, *_pair(x, q))


@export("math.lbeta")
def lbeta(x: Any, name: str | None = None) -> Any:
    """log |B(x)| over the last axis: sum(lgamma(x)) - lgamma(sum(x))."""
    t = _tensor(x)
    return (reduce_ops.reduce_sum(special_math_ops.lgamma(t), axis=-1)
            - special_math_ops.lgamma(reduce_ops.reduce_sum(t, axis=-1)))


@export("math.cumulative_logsumexp")
def cumulative_logsumexp(x: Any, axis: int = 0, exclusive: bool = False, reverse: bool = False,
                         name: str | None = None) -> Any:
    """log(cumsum(exp(x))) along `axis`, computed with the maximum taken out."""
    t = _tensor(x)
    top = array_ops.stop_gradient(reduce_ops.reduce_max(t, axis=axis, keepdims=True))
    top = math_ops.where(math_ops.is_finite(top), top, array_ops.zeros_like(top))
    sums = reduce_ops.cumsum(math_ops.exp(t - top), axis=axis, exclusive=exclusive,
                             reverse=reverse)
    return math_ops.log(sums) + top


@export("math.reduce_euclidean_norm")
def reduce_euclidean_norm(input_tensor: Any, axis: Any = None, keepdims: bool = False,
                          name: str | None = None) -> Any:
    """sqrt(sum(x * x)) over `axis`."""
    t = _tensor(input_tensor)
    squares = reduce_ops.reduce_sum(t * t, axis=axis, keepdims=keepdims)
    if t.dtype.is_integer:
        return math_ops.cast(math_ops.sqrt(math_ops.cast(squares, _dtypes.float64)), t.dtype)
    return math_ops.sqrt(squares)


@op("InvertPermutation", shape=same_as_first)
def _invert_permutation(p):
    if p.ndim != 1 or sorted(p.tolist()) != list(range(len(p))):
        raise ValueError(f"invert_permutation: {p.tolist()[:10]} is not a permutation of "
                         f"0..{len(p) - 1}")
    out = np.empty_like(p)
    out[p] = np.arange(len(p), dtype=p.dtype)
    return out


@export("math.invert_permutation", "invert_permutation")
def invert_permutation(x: Any, name: str | None = None) -> Any:
    """y with y[x[i]] = i."""
    return apply(_invert_permutation, _tensor(x))


_nextafter = op("NextAfter", elementwise=True, shape=elementwise)(np.nextafter)


@export("math.nextafter")
def nextafter(x1: Any, x2: Any, name: str | None = None) -> Any:
    """The next representable float after x1 toward x2 (no gradient, as in TensorFlow)."""
    return apply(_nextafter, *_pair(x1, x2))


@export("math.accumulate_n")
def accumulate_n(inputs: list, shape: Any = None, tensor_dtype: Any = None,
                 name: str | None = None) -> Any:
    """The sum of a list of tensors (TensorFlow's deprecated alias of add_n)."""
    return math_ops.add_n(inputs)
