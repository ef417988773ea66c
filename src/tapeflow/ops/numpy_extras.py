"""More of ``tf.experimental.numpy``: shape helpers, splits and stacks, triangles, NaN-aware
reductions, bitwise and number-theory functions, grids. Each is composed from tapeflow ops
(so it traces and differentiates where NumPy's function is differentiable), with NumPy's
argument conventions and promotion (through numpy_api's helpers)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow._api import export
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework.constant import convert_to_tensor
from tapeflow.framework.dispatch import REGISTRY, apply, op
from tapeflow.framework.shape_rules import elementwise
from tapeflow.framework.tensor import Tensor
from tapeflow.ops import (
    array_ops,
    complex_ops,
    gather_ops,
    math_ops,
    matrix_ops,
    reduce_ops,
    root_extras,
    special_functions,
)
from tapeflow.ops import numpy_api as tnp

_NS = "experimental.numpy."


def _export(fn: Any) -> Any:
    name = "divmod" if fn.__name__ == "divmod_" else fn.__name__
    return export(_NS + name)(fn)


@_export
def atleast_1d(*arys: Any) -> Any:
    out = [array_ops.reshape(t, [1]) if t.shape.rank == 0 else t
           for t in map(tnp.asarray, arys)]
    return out[0] if len(out) == 1 else out


@_export
def atleast_2d(*arys: Any) -> Any:
    out = []
    for t in map(tnp.asarray, arys):
        while t.shape.rank < 2:
            t = array_ops.expand_dims(t, 0)
        out.append(t)
    return out[0] if len(out) == 1 else out


@_export
def atleast_3d(*arys: Any) -> Any:
    out = []
    for t in map(tnp.asarray, arys):
        if t.shape.rank == 0:
            t = array_ops.reshape(t, [1, 1, 1])
        elif t.shape.rank == 1:
            t = array_ops.reshape(t, [1, -1, 1])
        elif t.shape.rank == 2:
            t = array_ops.expand_dims(t, -1)
        out.append(t)
    return out[0] if len(out) == 1 else out


@_export
def append(arr: Any, values: Any, axis: int | None = None) -> Tensor:
    a, v = tnp._promoted(arr, values)
    if axis is None:
        return array_ops.concat([array_ops.reshape(a, [-1]), array_ops.reshape(v, [-1])], 0)
    return array_ops.concat([a, v], axis)


@_export
def array_equal(a1: Any, a2: Any) -> Tensor:
    a, b = tnp._promoted(a1, a2)
    if a.shape.as_list() != b.shape.as_list():
        return convert_to_tensor(False)
    return reduce_ops.reduce_all(math_ops.equal(a, b))


@_export
def average(a: Any, axis: Any = None, weights: Any = None, returned: bool = False) -> Any:
    t = tnp._float(a)
    if weights is None:
        avg = reduce_ops.reduce_mean(t, axis=axis)
        total = math_ops.cast(array_ops.size(t) // array_ops.size(avg), t.dtype) * \
            array_ops.ones_like(avg)
    else:
        w = tnp.asarray(weights, t.dtype)
        if w.shape.rank == 1 and t.shape.rank > 1 and axis is not None:
            shape = [1] * t.shape.rank
            shape[axis] = -1
            w = array_ops.reshape(w, shape)
        total = reduce_ops.reduce_sum(w * array_ops.ones_like(t), axis=axis)
        avg = reduce_ops.reduce_sum(t * w, axis=axis) / total
    return (avg, total) if returned else avg


def _bitwise(name: str, fn: Any) -> None:
    def f(x1: Any, x2: Any) -> Tensor:
        a, b = tnp._promoted(x1, x2)
        if a.dtype is _dtypes.bool:
            return {"bitwise_and": math_ops.logical_and, "bitwise_or": math_ops.logical_or,
                    "bitwise_xor": math_ops.logical_xor}[name](a, b)
        return fn(a, b)
    f.__name__ = name
    export(_NS + name)(f)


_bitwise("bitwise_and", lambda a, b: apply(REGISTRY["BitwiseAnd"], a, b))
_bitwise("bitwise_or", lambda a, b: apply(REGISTRY["BitwiseOr"], a, b))
_bitwise("bitwise_xor", lambda a, b: apply(REGISTRY["BitwiseXor"], a, b))


@_export
def bitwise_not(x: Any) -> Tensor:
    t = tnp.asarray(x)
    return math_ops.logical_not(t) if t.dtype is _dtypes.bool else apply(REGISTRY["Invert"], t)


@_export
def broadcast_to(array: Any, shape: Any) -> Tensor:
    return array_ops.broadcast_to(tnp.asarray(array), shape)


@_export
def broadcast_arrays(*args: Any) -> list:
    ts = [tnp.asarray(a) for a in args]
    shape = np.broadcast_shapes(*[tuple(t.shape.as_list()) for t in ts])
    return [array_ops.broadcast_to(t, shape) for t in ts]


@_export
def compress(condition: Any, a: Any, axis: int | None = None) -> Tensor:
    t = tnp.asarray(a)
    if axis is None:
        t, axis = array_ops.reshape(t, [-1]), 0
    cond = math_ops.cast(tnp.asarray(condition), _dtypes.bool)
    n = t.shape[axis]
    cond = cond[:n] if cond.shape[0] > n else cond
    index = array_ops.reshape(math_ops.where(cond), [-1])
    return gather_ops.gather(t, index, axis=axis)


@_export
def cross(a: Any, b: Any, axisa: int = -1, axisb: int = -1, axisc: int = -1,
          axis: int | None = None) -> Tensor:
    x, y = tnp._promoted(a, b)
    x0, x1, x2 = (x[..., i] for i in range(3))
    y0, y1, y2 = (y[..., i] for i in range(3))
    return array_ops.stack([x1 * y2 - x2 * y1, x2 * y0 - x0 * y2, x0 * y1 - x1 * y0], -1)


@_export
def diag_indices(n: int, ndim: int = 2) -> tuple:
    idx = convert_to_tensor(np.arange(n))
    return (idx,) * ndim


@_export
def diagflat(v: Any, k: int = 0) -> Tensor:
    square = matrix_ops.diag(array_ops.reshape(tnp.asarray(v), [-1]))
    if k == 0:
        return square
    return array_ops.pad(square, [[0, k], [k, 0]] if k > 0 else [[-k, 0], [0, -k]])


@_export
def diagonal(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Tensor:
    t = tnp.asarray(a)
    rank = t.shape.rank
    axis1, axis2 = axis1 % rank, axis2 % rank
    perm = [d for d in range(rank) if d not in (axis1, axis2)] + [axis1, axis2]
    moved = array_ops.transpose(t, perm)
    if offset > 0:
        moved = moved[..., :, offset:]
    elif offset < 0:
        moved = moved[..., -offset:, :]
    rows, cols = moved.shape.as_list()[-2:]
    n = max(min(rows, cols), 0)
    return matrix_ops.diag_part(moved[..., :n, :n])


@_export
def diff(a: Any, n: int = 1, axis: int = -1) -> Tensor:
    t = tnp.asarray(a)
    rank = t.shape.rank
    axis = axis % rank
    for _ in range(n):
        upper = [slice(None)] * rank
        lower = [slice(None)] * rank
        upper[axis], lower[axis] = slice(1, None), slice(None, -1)
        t = t[tuple(upper)] - t[tuple(lower)] if t.dtype is not _dtypes.bool else \
            math_ops.not_equal(t[tuple(upper)], t[tuple(lower)])
    return t


@_export
def divmod_(x1: Any, x2: Any) -> tuple:
    a, b = tnp._promoted(x1, x2)
    return math_ops.floordiv(a, b), math_ops.floormod(a, b)


def _split_points(t: Tensor, indices_or_sections: Any, axis: int) -> list:
    n = t.shape[axis]
    if isinstance(indices_or_sections, int):
        if n % indices_or_sections:
            raise ValueError("array split does not result in an equal division")
        return [n // indices_or_sections] * indices_or_sections
    edges = [0] + [min(int(i), n) for i in indices_or_sections] + [n]
    return [max(b - a, 0) for a, b in zip(edges[:-1], edges[1:])]


@_export
def split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list:
    t = tnp.asarray(ary)
    return array_ops.split(t, _split_points(t, indices_or_sections, axis), axis=axis)


@_export
def hsplit(ary: Any, indices_or_sections: Any) -> list:
    t = tnp.asarray(ary)
    return split(t, indices_or_sections, axis=0 if t.shape.rank == 1 else 1)


@_export
def vsplit(ary: Any, indices_or_sections: Any) -> list:
    return split(ary, indices_or_sections, axis=0)


@_export
def dsplit(ary: Any, indices_or_sections: Any) -> list:
    return split(ary, indices_or_sections, axis=2)


@_export
def dstack(tup: Any) -> Tensor:
    return array_ops.concat(atleast_3d(*tup) if len(tup) > 1 else [atleast_3d(*tup)], 2)


@_export
def fabs(x: Any) -> Tensor:
    return math_ops.abs(tnp._float(x))


@_export
def flatten(a: Any, order: str = "C") -> Tensor:
    return array_ops.reshape(tnp.asarray(a), [-1])


@_export
def fliplr(m: Any) -> Tensor:
    return array_ops.reverse(tnp.asarray(m), [1])


@_export
def flipud(m: Any) -> Tensor:
    return array_ops.reverse(tnp.asarray(m), [0])


_GCD = op("Gcd", elementwise=True, shape=elementwise)(np.gcd)
_LCM = op("Lcm", elementwise=True, shape=elementwise)(np.lcm)


@_export
def gcd(x1: Any, x2: Any) -> Tensor:
    return apply(_GCD, *tnp._promoted(x1, x2))


@_export
def lcm(x1: Any, x2: Any) -> Tensor:
    return apply(_LCM, *tnp._promoted(x1, x2))


@_export
def geomspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True, dtype: Any = None,
              axis: int = 0) -> Tensor:
    lo, hi = np.log10(float(start)), np.log10(float(stop))
    return logspace(lo, hi, num, endpoint, 10.0, dtype)


@_export
def logspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True, base: float = 10.0,
             dtype: Any = None, axis: int = 0) -> Tensor:
    exps = tnp.linspace(start, stop, num, endpoint=endpoint)
    out = math_ops.pow(math_ops.cast(convert_to_tensor(base), exps.dtype), exps)
    return out if dtype is None else math_ops.cast(out, dtype)


@_export
def heaviside(x1: Any, x2: Any) -> Tensor:
    a, b = tnp._promoted(x1, x2)
    a, b = tnp._float(a), tnp._float(b)
    one, zero = array_ops.ones_like(a), array_ops.zeros_like(a)
    return math_ops.where(math_ops.less(a, 0), zero, math_ops.where(
        math_ops.greater(a, 0), one, b * one))


@_export
def iscomplex(x: Any) -> Tensor:
    t = tnp.asarray(x)
    if not t.dtype.is_complex:
        return array_ops.zeros_like(t, dtype=_dtypes.bool)
    return math_ops.not_equal(complex_ops.imag(t), 0)


@_export
def isreal(x: Any) -> Tensor:
    return math_ops.logical_not(iscomplex(x))


@_export
def iscomplexobj(x: Any) -> bool:
    return tnp.asarray(x).dtype.is_complex


@_export
def isrealobj(x: Any) -> bool:
    return not iscomplexobj(x)


@_export
def isscalar(num: Any) -> bool:
    return np.isscalar(num) or (isinstance(num, Tensor) and num.shape.rank == 0)


@_export
def isposinf(x: Any) -> Tensor:
    t = tnp._float(x)
    return math_ops.logical_and(math_ops.is_inf(t), math_ops.greater(t, 0))


@_export
def isneginf(x: Any) -> Tensor:
    t = tnp._float(x)
    return math_ops.logical_and(math_ops.is_inf(t), math_ops.less(t, 0))


@_export
def signbit(x: Any) -> Tensor:
    t = tnp.asarray(x)
    if t.dtype.is_integer or t.dtype is _dtypes.bool:
        return math_ops.less(t, 0) if t.dtype is not _dtypes.bool else \
            array_ops.zeros_like(t, dtype=_dtypes.bool)
    bits = {_dtypes.float64: _dtypes.int64, _dtypes.float32: _dtypes.int32}.get(
        t.dtype, _dtypes.int16)
    return math_ops.less(root_extras.bitcast(t, bits), 0)


@_export
def ix_(*args: Any) -> tuple:
    n = len(args)
    out = []
    for k, a in enumerate(args):
        shape = [1] * n
        shape[k] = -1
        out.append(array_ops.reshape(tnp.asarray(a), shape))
    return tuple(out)


@_export
def kron(a: Any, b: Any) -> Tensor:
    x, y = tnp._promoted(a, b)
    x, y = atleast_2d(x), atleast_2d(y)
    (m, n), (p, q) = x.shape.as_list(), y.shape.as_list()
    outer = array_ops.expand_dims(array_ops.expand_dims(x, 1), 3) * \
        array_ops.expand_dims(array_ops.expand_dims(y, 0), 2)
    return array_ops.reshape(outer, [m * p, n * q])


@_export
def logaddexp2(x1: Any, x2: Any) -> Tensor:
    a, b = (tnp._float(t) for t in tnp._promoted(x1, x2))
    a, b = broadcast_arrays(a, b)
    ln2 = float(np.log(2))
    return reduce_ops.reduce_logsumexp(array_ops.stack([a * ln2, b * ln2]), axis=0) / ln2


@_export
def meshgrid(*xi: Any, indexing: str = "xy", **kwargs: Any) -> list:
    ts = [array_ops.reshape(tnp.asarray(x), [-1]) for x in xi]
    n = len(ts)
    shapes = [t.shape[0] for t in ts]
    if indexing == "xy" and n >= 2:
        shapes[0], shapes[1] = shapes[1], shapes[0]
    out = []
    for k, t in enumerate(ts):
        dim = k if not (indexing == "xy" and n >= 2 and k < 2) else 1 - k
        shape = [1] * n
        shape[dim] = -1
        out.append(array_ops.broadcast_to(array_ops.reshape(t, shape), shapes))
    return out


def _nan_to(t: Tensor, value: float) -> Tensor:
    return math_ops.where(math_ops.is_nan(t), array_ops.zeros_like(t) + value, t)


@_export
def nansum(a: Any, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Tensor:
    return reduce_ops.reduce_sum(_nan_to(tnp._float(tnp.asarray(a, dtype)), 0.0), axis=axis,
                                 keepdims=keepdims)


@_export
def nanprod(a: Any, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Tensor:
    return reduce_ops.reduce_prod(_nan_to(tnp._float(tnp.asarray(a, dtype)), 1.0), axis=axis,
                                  keepdims=keepdims)


@_export
def nanmean(a: Any, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Tensor:
    t = tnp._float(tnp.asarray(a, dtype))
    count = reduce_ops.reduce_sum(math_ops.cast(math_ops.logical_not(math_ops.is_nan(t)),
                                                t.dtype), axis=axis, keepdims=keepdims)
    return nansum(t, axis=axis, keepdims=keepdims) / count


@_export
def nextafter(x1: Any, x2: Any) -> Tensor:
    a, b = (tnp._float(t) for t in tnp._promoted(x1, x2))
    return special_functions.nextafter(a, b)


@_export
def nonzero(a: Any) -> tuple:
    t = tnp.asarray(a)
    where = math_ops.where(math_ops.not_equal(t, array_ops.zeros_like(t)))
    return tuple(where[:, k] for k in range(t.shape.rank))


@_export
def pad(array: Any, pad_width: Any, mode: str = "constant", constant_values: Any = 0) -> Tensor:
    t = tnp.asarray(array)
    width = np.broadcast_to(np.asarray(pad_width), (t.shape.rank, 2)).tolist()
    return array_ops.pad(t, width, mode=mode.upper(), constant_values=constant_values)


@_export
def polyval(p: Any, x: Any) -> Tensor:
    coeffs = tnp.asarray(p)
    xt = tnp.asarray(x)
    out = array_ops.zeros_like(xt) + coeffs[0] * 0
    for i in range(coeffs.shape[0]):
        out = out * xt + coeffs[i]
    return out


@_export
def ptp(a: Any, axis: Any = None, keepdims: bool = False) -> Tensor:
    t = tnp.asarray(a)
    return reduce_ops.reduce_max(t, axis=axis, keepdims=keepdims) - reduce_ops.reduce_min(
        t, axis=axis, keepdims=keepdims)


@_export
def rot90(m: Any, k: int = 1, axes: tuple = (0, 1)) -> Tensor:
    t = tnp.asarray(m)
    k %= 4
    a0, a1 = axes
    perm = list(range(t.shape.rank))
    perm[a0], perm[a1] = perm[a1], perm[a0]
    for _ in range(k):
        t = array_ops.transpose(array_ops.reverse(t, [a1]), perm)
    return t


@_export
def select(condlist: list, choicelist: list, default: Any = 0) -> Tensor:
    choices = tnp._promoted(*choicelist, default)
    out = choices[-1] * array_ops.ones_like(choices[0])
    for cond, choice in zip(reversed(condlist), reversed(choices[:-1])):
        out = math_ops.where(tnp.asarray(cond), choice * array_ops.ones_like(out), out)
    return out


@_export
def sinc(x: Any) -> Tensor:
    t = tnp._float(x)
    y = float(np.pi) * math_ops.where(math_ops.equal(t, 0), array_ops.ones_like(t) * 1e-20, t)
    return math_ops.where(math_ops.equal(t, 0), array_ops.ones_like(t), math_ops.sin(y) / y)


@_export
def take_along_axis(arr: Any, indices: Any, axis: int) -> Tensor:
    t = tnp.asarray(arr)
    idx = tnp.asarray(indices)
    if axis is None:
        return gather_ops.gather(array_ops.reshape(t, [-1]), array_ops.reshape(idx, [-1]))
    return apply(array_ops._take_along_axis, t, math_ops.cast(idx, _dtypes.int64),
                 axis=axis % t.shape.rank)


@_export
def tri(N: int, M: int | None = None, k: int = 0, dtype: Any = float) -> Tensor:  # noqa: N803
    M = N if M is None else M  # noqa: N806
    out = np.tri(N, M, k, dtype=np.dtype(_dtypes.as_dtype(dtype)._np
                                         if not isinstance(dtype, type) else dtype))
    return convert_to_tensor(out)


def _tri_mask(t: Tensor, k: int, lower: bool) -> Tensor:
    rows, cols = t.shape.as_list()[-2:]
    mask = np.tri(rows, cols, k, dtype=bool)
    mask = mask if lower else ~np.tri(rows, cols, k - 1, dtype=bool)
    return math_ops.where(convert_to_tensor(mask), t, array_ops.zeros_like(t))


@_export
def tril(m: Any, k: int = 0) -> Tensor:
    return _tri_mask(tnp.asarray(m), k, True)


@_export
def triu(m: Any, k: int = 0) -> Tensor:
    return _tri_mask(tnp.asarray(m), k, False)


@_export
def vander(x: Any, N: int | None = None, increasing: bool = False) -> Tensor:  # noqa: N803
    t = tnp.asarray(x)
    n = t.shape[0] if N is None else N
    powers = np.arange(n) if increasing else np.arange(n)[::-1]
    return math_ops.pow(array_ops.expand_dims(t, 1),
                        math_ops.cast(convert_to_tensor(powers), t.dtype))
