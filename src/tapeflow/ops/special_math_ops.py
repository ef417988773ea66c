"""More of ``tf.math``: inverse trig/hyperbolic functions, erf/lgamma/digamma, xlogy and
friends, counting ops. Each elementwise op: a NumPy/SciPy ufunc kernel and its gradient in
tapeflow ops."""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import special

from tapeflow._api import export
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework.dispatch import apply, op
from tapeflow.framework.shape_rules import elementwise, same_as_first
from tapeflow.ops import array_ops, math_ops, reduce_ops
from tapeflow.ops.array_ops import _tensor
from tapeflow.ops.math_ops import unbroadcast


def _unary(name: str, kernel: Any, grad: Any, *tf_names: str) -> Any:
    o = op(name, elementwise=True, shape=same_as_first)(kernel)
    o.def_grad(lambda g, out, x: g * grad(x, out))

    def api(x: Any, name: str | None = None) -> Any:
        return apply(o, _tensor(x))

    api.__name__ = tf_names[0].rsplit(".", 1)[-1]
    api.__doc__ = f"Elementwise {api.__name__} ({name})."
    export(*tf_names)(api)
    return api


def _sq(x: Any) -> Any:
    return x * x


tan = _unary("Tan", np.tan, lambda x, y: 1.0 + y * y, "math.tan", "tan")
asin = _unary("Asin", np.arcsin, lambda x, y: math_ops.rsqrt(1.0 - _sq(x)), "math.asin", "asin")
acos = _unary("Acos", np.arccos, lambda x, y: -math_ops.rsqrt(1.0 - _sq(x)), "math.acos",
              "acos")
atan = _unary("Atan", np.arctan, lambda x, y: 1.0 / (1.0 + _sq(x)), "math.atan", "atan")
sinh = _unary("Sinh", np.sinh, lambda x, y: cosh(x), "math.sinh", "sinh")
cosh = _unary("Cosh", np.cosh, lambda x, y: sinh(x), "math.cosh", "cosh")
asinh = _unary("Asinh", np.arcsinh, lambda x, y: math_ops.rsqrt(_sq(x) + 1.0), "math.asinh",
               "asinh")
acosh = _unary("Acosh", np.arccosh, lambda x, y: math_ops.rsqrt(_sq(x) - 1.0), "math.acosh",
               "acosh")
atanh = _unary("Atanh", np.arctanh, lambda x, y: 1.0 / (1.0 - _sq(x)), "math.atanh", "atanh")
expm1 = _unary("Expm1", np.expm1, lambda x, y: y + 1.0, "math.expm1")
erf = _unary("Erf", special.erf,
             lambda x, y: float(2 / np.sqrt(np.pi)) * math_ops.exp(-_sq(x)), "math.erf")
erfc = _unary("Erfc", special.erfc,
              lambda x, y: float(-2 / np.sqrt(np.pi)) * math_ops.exp(-_sq(x)), "math.erfc")
lgamma = _unary("Lgamma", special.gammaln, lambda x, y: digamma(x), "math.lgamma")
digamma = _unary("Digamma", special.digamma,
                 lambda x, y: apply(polygamma_op, array_ops.ones_like(x), x),
                 "math.digamma")
rint = _unary("Rint", np.rint, lambda x, y: array_ops.zeros_like(x), "math.rint")
erfinv = _unary("Erfinv", special.erfinv,
                lambda x, y: float(np.sqrt(np.pi) / 2) * math_ops.exp(_sq(y)), "math.erfinv")
ndtri = _unary("Ndtri", special.ndtri,
               lambda x, y: float(np.sqrt(2 * np.pi)) * math_ops.exp(0.5 * _sq(y)), "math.ndtri")


polygamma_op = op("Polygamma", elementwise=True, shape=elementwise)(
    lambda n, x: np.asarray(special.polygamma(n, x)).astype(x.dtype, copy=False))


@polygamma_op.def_grad
def _(g, out, n, x):  # d/dx psi_n(x) = psi_(n+1)(x); none for the order, as in TensorFlow
    return None, unbroadcast(g * apply(polygamma_op, n + 1.0, x), x)


@op("Atan2", elementwise=True, shape=elementwise)
def _atan2(y, x):
    return np.arctan2(y, x)


@_atan2.def_grad
def _(g, out, y, x):
    denom = _sq(x) + _sq(y)
    return unbroadcast(g * x / denom, y), unbroadcast(-g * y / denom, x)


@export("math.atan2", "atan2")
def atan2(y: Any, x: Any, name: str | None = None) -> Any:
    """The angle of (x, y), elementwise."""
    y, x = math_ops._as_pair(y, x)
    return apply(_atan2, y, x)


@op("Xlogy", elementwise=True, shape=elementwise)
def _xlogy(x, y):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(x == 0, np.zeros((), x.dtype), x * np.log(y))


@_xlogy.def_grad
def _(g, out, x, y):
    zero = math_ops.equal(x, array_ops.zeros_like(x))
    gx = math_ops.where(zero, array_ops.zeros_like(g), g * math_ops.log(y))
    gy = math_ops.where(zero, array_ops.zeros_like(g), g * x / y)
    return unbroadcast(gx, x), unbroadcast(gy, y)


@export("math.xlogy")
def xlogy(x: Any, y: Any, name: str | None = None) -> Any:
    """x * log(y), and 0 where x == 0."""
    x, y = math_ops._as_pair(x, y)
    return apply(_xlogy, x, y)


@export("math.xlog1py")
def xlog1py(x: Any, y: Any, name: str | None = None) -> Any:
    """x * log1p(y), and 0 where x == 0."""
    x, y = math_ops._as_pair(x, y)
    return apply(_xlogy, x, y + 1.0)


@export("math.xdivy")
def xdivy(x: Any, y: Any, name: str | None = None) -> Any:
    """x / y, and 0 where x == 0."""
    x, y = math_ops._as_pair(x, y)
    safe = math_ops.where(math_ops.equal(x, array_ops.zeros_like(x)), array_ops.ones_like(y), y)
    return x / safe


@export("math.reciprocal_no_nan")
def reciprocal_no_nan(x: Any, name: str | None = None) -> Any:
    t = _tensor(x)
    return math_ops.divide_no_nan(array_ops.ones_like(t), t)


@export("math.multiply_no_nan")
def multiply_no_nan(x: Any, y: Any, name: str | None = None) -> Any:
    """x * y, and 0 where y == 0 (even if x is NaN or Inf)."""
    x, y = math_ops._as_pair(x, y)
    zero = math_ops.equal(y, array_ops.zeros_like(y))
    return math_ops.where(zero, array_ops.zeros_like(x * y), x * y)


@export("math.log_sigmoid")
def log_sigmoid(x: Any, name: str | None = None) -> Any:
    """log(sigmoid(x)) = -softplus(-x), without overflow."""
    from tapeflow.ops import nn_ops

    return -nn_ops.softplus(-_tensor(x))


@export("math.count_nonzero")
def count_nonzero(input: Any, axis: Any = None, keepdims: Any = None,  # noqa: A002
                  dtype: Any = _dtypes.int64, name: str | None = None) -> Any:
    t = _tensor(input)
    zero = b"" if t.dtype is _dtypes.string else 0
    nonzero = math_ops.cast(math_ops.not_equal(t, zero), dtype)
    return reduce_ops.reduce_sum(nonzero, axis=axis, keepdims=bool(keepdims))


@export("math.zero_fraction", "nn.zero_fraction")
def zero_fraction(value: Any, name: str | None = None) -> Any:
    t = _tensor(value)
    return reduce_ops.reduce_mean(math_ops.cast(math_ops.equal(t, array_ops.zeros_like(t)),
                                                _dtypes.float32))


@op("Bincount", shape=lambda arr, weights, *, minlength, maxlength, dtype: ((None,), dtype))
def _bincount(arr, weights, *, minlength, maxlength, dtype):
    flat = arr.reshape(-1)
    w = None if weights.size == 0 else weights.reshape(-1)
    size = max(int(flat.max()) + 1 if flat.size else 0, minlength or 0)
    if maxlength is not None:
        size = min(size, maxlength)
        keep = flat < size
        flat, w = flat[keep], None if w is None else w[keep]
    return np.bincount(flat, weights=w, minlength=size)[:size].astype(dtype._np)


@export("math.bincount", "bincount")
def bincount(arr: Any, weights: Any = None, minlength: int | None = None,
             maxlength: int | None = None, dtype: Any = _dtypes.int32, name: str | None = None,
             axis: Any = None, binary_output: bool = False) -> Any:
    """How often each value 0..max appears (weighted sums with `weights`)."""
    a = _tensor(arr)
    w = array_ops.zeros([0], dtype) if weights is None else _tensor(weights)
    out_dtype = _dtypes.as_dtype(dtype) if weights is None else w.dtype
    out = apply(_bincount, a, w, minlength=minlength, maxlength=maxlength, dtype=out_dtype)
    return math_ops.cast(math_ops.greater(out, 0), out_dtype) if binary_output else out


@export("math.confusion_matrix")
def confusion_matrix(labels: Any, predictions: Any, num_classes: Any = None, weights: Any = None,
                     dtype: Any = _dtypes.int32, name: str | None = None) -> Any:
    """[num_classes, num_classes] counts of (label, prediction) pairs."""
    from tapeflow.ops import scatter_ops

    lab = math_ops.cast(_tensor(labels), _dtypes.int64)
    pred = math_ops.cast(_tensor(predictions), _dtypes.int64)
    if num_classes is None:
        num_classes = reduce_ops.reduce_max(array_ops.stack([reduce_ops.reduce_max(lab),
                                                             reduce_ops.reduce_max(pred)])) + 1
    n = math_ops.cast(_tensor(num_classes), _dtypes.int64)
    idx = array_ops.stack([lab, pred], axis=1)
    dtype = _dtypes.as_dtype(dtype)
    values = array_ops.ones_like(lab) if weights is None else _tensor(weights)
    return scatter_ops.scatter_nd(idx, math_ops.cast(values, dtype), array_ops.stack([n, n]))


@export("math.in_top_k", "nn.in_top_k")
def in_top_k(targets: Any, predictions: Any, k: int, name: str | None = None) -> Any:
    """Whether each target's prediction is among the k largest of its row."""
    from tapeflow.ops import gather_ops

    pred = _tensor(predictions)
    tgt = math_ops.cast(_tensor(targets), _dtypes.int64)
    rows = math_ops.cast(array_ops.shape(pred)[:1], _dtypes.int64)
    from tapeflow.ops.creation_ops import range_

    target_scores = gather_ops.gather_nd(pred, array_ops.stack([range_(rows[0]), tgt], 1))
    higher = math_ops.greater(pred, array_ops.expand_dims(target_scores, 1))
    return math_ops.less(reduce_ops.reduce_sum(math_ops.cast(higher, _dtypes.int32), axis=1), k)


@export("math.polyval")
def polyval(coeffs: Any, x: Any, name: str | None = None) -> Any:
    """coeffs[0] * x^(n-1) + ... + coeffs[-1] by Horner's rule."""
    t = _tensor(x)
    out = array_ops.zeros_like(t)
    for c in coeffs:
        out = out * t + c
    return out


@export("math.is_non_decreasing")
def is_non_decreasing(x: Any, name: str | None = None) -> Any:
    flat = array_ops.reshape(_tensor(x), [-1])
    return reduce_ops.reduce_all(math_ops.greater_equal(flat[1:], flat[:-1]))


@export("math.is_strictly_increasing")
def is_strictly_increasing(x: Any, name: str | None = None) -> Any:
    flat = array_ops.reshape(_tensor(x), [-1])
    return reduce_ops.reduce_all(math_ops.greater(flat[1:], flat[:-1]))
