"""``tf.experimental.numpy``: the NumPy API over tapeflow tensors.

Each function converts its array arguments to tensors, promotes dtypes the way NumPy does
(``np.result_type``; Python scalars are weak, so ``x + 1`` keeps x's dtype), and calls the
tapeflow op, so results are tensors that work in ``tf.function`` and under tapes.
``experimental_enable_numpy_behavior()`` adds the NumPy methods to tensors (``.T``,
``.reshape``, ``.astype``, ``.ravel`` ...). Tensors convert to NumPy both ways
(``np.asarray(tensor)``, ``tnp.asarray(ndarray)``).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any

import numpy as np

from tapeflow._api import export, export_value
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework.constant import convert_to_tensor
from tapeflow.framework.tensor import Tensor
from tapeflow.ops import (
    array_ops,
    complex_ops,
    creation_ops,
    linalg_ops,
    math_ops,
    matrix_ops,
    reduce_ops,
    signal_ops,
    special_math_ops,
)

_NS = "experimental.numpy."
_settings = {"prefer_float32": False}


def _np_dtype(x: Any) -> Any:
    if isinstance(x, Tensor) or hasattr(x, "_as_tensor"):
        return x.dtype._np if x.dtype is not _dtypes.string else np.object_
    if isinstance(x, (bool, int, float, builtins.complex)):
        return type(x)  # weak: np.result_type treats Python scalars by kind only
    arr = np.asarray(x)
    if arr.dtype == np.float64 and _settings["prefer_float32"]:
        return np.float32
    return arr.dtype


def result_type(*arrays_and_dtypes: Any) -> Any:
    """NumPy's promotion of the arguments' dtypes (a tapeflow DType)."""
    kinds = []
    for a in arrays_and_dtypes:
        if isinstance(a, _dtypes.DType):
            kinds.append(a._np)
        elif isinstance(a, type) and issubclass(a, np.generic):
            kinds.append(a)
        else:
            kinds.append(_np_dtype(a))
    weak = {bool: True, int: 0, float: 0.0, builtins.complex: 0j}
    out = np.result_type(*[weak.get(k, k) for k in kinds])
    if out == np.float64 and _settings["prefer_float32"] and all(
            k in (int, float, bool) or np.dtype(k).kind in "biu" for k in kinds):
        out = np.dtype(np.float32)
    return _dtypes.from_numpy(out)


def asarray(a: Any, dtype: Any = None) -> Tensor:
    if isinstance(a, Tensor) and (dtype is None or _dtypes.as_dtype(dtype) is a.dtype):
        return a
    if isinstance(a, Tensor):
        return math_ops.cast(a, dtype)
    if hasattr(a, "_as_tensor"):
        return asarray(a._as_tensor(), dtype)
    if isinstance(a, (list, tuple)) and any(isinstance(e, Tensor) for e in a):
        return array_ops.stack([asarray(e, dtype) for e in a])
    arr = np.asarray(a, dtype=None if dtype is None else _dtypes.as_dtype(dtype)._np)
    if arr.dtype == np.float64 and dtype is None and _settings["prefer_float32"]:
        arr = arr.astype(np.float32)
    return convert_to_tensor(arr)


def array(val: Any, dtype: Any = None, copy: bool = True, ndmin: int = 0) -> Tensor:
    t = asarray(val, dtype)
    while t.shape.rank < ndmin:
        t = array_ops.expand_dims(t, 0)
    return array_ops.identity(t) if copy else t


def _promoted(*args: Any) -> list:
    target = result_type(*args)
    return [asarray(a, target) for a in args]


def _float(x: Any) -> Tensor:
    t = asarray(x)
    return t if t.dtype.is_floating or t.dtype.is_complex else math_ops.cast(t, _dtypes.float64)


def _unary(fn: Callable, floating: bool = False) -> Callable:
    def f(x: Any) -> Tensor:
        return fn(_float(x) if floating else asarray(x))
    return f


def _binary(fn: Callable, floating: bool = False) -> Callable:
    def f(x1: Any, x2: Any) -> Tensor:
        a, b = _promoted(x1, x2)
        if floating and not a.dtype.is_floating:
            a, b = _float(a), _float(b)
        return fn(a, b)
    return f


def _reduction(fn: Callable) -> Callable:
    def f(a: Any, axis: Any = None, dtype: Any = None, keepdims: bool = False,
          **kwargs: Any) -> Tensor:
        t = asarray(a, dtype)
        if t.dtype.is_bool and fn in (reduce_ops.reduce_sum, reduce_ops.reduce_prod):
            t = math_ops.cast(t, _dtypes.int64)
        return fn(t, axis=axis, keepdims=keepdims)
    return f


_UNARY = {
    "abs": math_ops.abs, "absolute": math_ops.abs, "negative": math_ops.negative,
    "positive": array_ops.identity, "square": math_ops.square, "sign": math_ops.sign,
    "floor": math_ops.floor, "ceil": math_ops.ceil, "isnan": math_ops.is_nan,
    "isinf": math_ops.is_inf, "isfinite": math_ops.is_finite,
    "logical_not": math_ops.logical_not, "real": complex_ops.real, "imag": complex_ops.imag,
    "conj": complex_ops.conj, "conjugate": complex_ops.conj, "angle": complex_ops.angle,
}
_FLOAT_UNARY = {
    "sqrt": math_ops.sqrt, "exp": math_ops.exp, "log": math_ops.log, "log1p": math_ops.log1p,
    "sin": math_ops.sin, "cos": math_ops.cos, "tan": special_math_ops.tan,
    "tanh": math_ops.tanh, "arcsin": special_math_ops.asin, "arccos": special_math_ops.acos,
    "arctan": special_math_ops.atan, "sinh": special_math_ops.sinh,
    "cosh": special_math_ops.cosh, "arcsinh": special_math_ops.asinh,
    "arccosh": special_math_ops.acosh, "arctanh": special_math_ops.atanh,
    "expm1": special_math_ops.expm1, "reciprocal": math_ops.reciprocal,
    "log2": lambda x: math_ops.log(x) / float(np.log(2)),
    "log10": lambda x: math_ops.log(x) / float(np.log(10)),
    "exp2": lambda x: math_ops.pow(math_ops.cast(convert_to_tensor(2.0), x.dtype), x),
    "cbrt": lambda x: math_ops.sign(x) * math_ops.pow(math_ops.abs(x), 1.0 / 3.0),
    "deg2rad": lambda x: x * float(np.pi / 180), "rad2deg": lambda x: x * float(180 / np.pi),
    "round": math_ops.round, "around": math_ops.round, "rint": special_math_ops.rint,
    "fix": lambda x: math_ops.sign(x) * math_ops.floor(math_ops.abs(x)),
}
_BINARY = {
    "add": math_ops.add, "subtract": math_ops.subtract, "multiply": math_ops.multiply,
    "maximum": math_ops.maximum, "minimum": math_ops.minimum, "equal": math_ops.equal,
    "not_equal": math_ops.not_equal, "less": math_ops.less, "less_equal": math_ops.less_equal,
    "greater": math_ops.greater, "greater_equal": math_ops.greater_equal,
    "logical_and": math_ops.logical_and, "logical_or": math_ops.logical_or,
    "logical_xor": math_ops.logical_xor, "floor_divide": math_ops.floordiv,
    "mod": math_ops.floormod, "remainder": math_ops.floormod, "power": math_ops.pow,
}
_FLOAT_BINARY = {
    "divide": math_ops.truediv, "true_divide": math_ops.truediv,
    "arctan2": special_math_ops.atan2, "float_power": math_ops.pow,
    "hypot": lambda a, b: math_ops.sqrt(a * a + b * b),
    "logaddexp": lambda a, b: reduce_ops.reduce_logsumexp(array_ops.stack([a, b]), axis=0),
}
_REDUCTIONS = {
    "sum": reduce_ops.reduce_sum, "prod": reduce_ops.reduce_prod,
    "max": reduce_ops.reduce_max, "amax": reduce_ops.reduce_max,
    "min": reduce_ops.reduce_min, "amin": reduce_ops.reduce_min,
    "all": reduce_ops.reduce_all, "any": reduce_ops.reduce_any,
}

for _name, _fn in _UNARY.items():
    export_value(_NS + _name, _unary(_fn))
for _name, _fn in _FLOAT_UNARY.items():
    export_value(_NS + _name, _unary(_fn, floating=True))
for _name, _fn in _BINARY.items():
    export_value(_NS + _name, _binary(_fn))
for _name, _fn in _FLOAT_BINARY.items():
    export_value(_NS + _name, _binary(_fn, floating=True))
for _name, _fn in _REDUCTIONS.items():
    export_value(_NS + _name, _reduction(_fn))


@export(_NS + "mean")
def mean(a: Any, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Tensor:
    return reduce_ops.reduce_mean(_float(asarray(a, dtype)), axis=axis, keepdims=keepdims)


@export(_NS + "var")
def var(a: Any, axis: Any = None, dtype: Any = None, ddof: int = 0,
        keepdims: bool = False) -> Tensor:
    t = _float(asarray(a, dtype))
    centered = t - reduce_ops.reduce_mean(t, axis=axis, keepdims=True)
    n = array_ops.size(t, out_type=t.dtype) / array_ops.size(
        reduce_ops.reduce_sum(centered, axis=axis), out_type=t.dtype)
    return reduce_ops.reduce_sum(centered * centered, axis=axis, keepdims=keepdims) / (n - ddof)


@export(_NS + "std")
def std(a: Any, axis: Any = None, keepdims: bool = False, ddof: int = 0) -> Tensor:
    return math_ops.sqrt(var(a, axis=axis, ddof=ddof, keepdims=keepdims))


@export(_NS + "clip")
def clip(a: Any, a_min: Any, a_max: Any) -> Tensor:
    t = asarray(a)
    out = t if a_min is None else math_ops.maximum(t, asarray(a_min, t.dtype))
    return out if a_max is None else math_ops.minimum(out, asarray(a_max, t.dtype))


@export(_NS + "where")
def where(condition: Any, x: Any = None, y: Any = None) -> Any:
    if x is None and y is None:
        idx = math_ops.where(asarray(condition))
        return tuple(idx[:, i] for i in range(asarray(condition).shape.rank))
    a, b = _promoted(x, y)
    return math_ops.where(asarray(condition, _dtypes.bool), a, b)


@export(_NS + "matmul")
def matmul(x1: Any, x2: Any) -> Tensor:
    a, b = _promoted(x1, x2)
    return linalg_ops.matmul(a, b)


@export(_NS + "dot")
def dot(a: Any, b: Any) -> Tensor:
    x, y = _promoted(a, b)
    if x.shape.rank == 0 or y.shape.rank == 0:
        return x * y
    if y.shape.rank == 1:
        return matrix_ops.tensordot(x, y, [[x.shape.rank - 1], [0]])
    return matrix_ops.tensordot(x, y, [[x.shape.rank - 1], [y.shape.rank - 2]])


@export(_NS + "vdot")
def vdot(a: Any, b: Any) -> Tensor:
    x, y = _promoted(a, b)
    return reduce_ops.reduce_sum(array_ops.reshape(x, [-1]) * array_ops.reshape(y, [-1]))


@export(_NS + "inner")
def inner(a: Any, b: Any) -> Tensor:
    x, y = _promoted(a, b)
    return matrix_ops.tensordot(x, y, [[x.shape.rank - 1], [y.shape.rank - 1]])


@export(_NS + "outer")
def outer(a: Any, b: Any) -> Tensor:
    x, y = _promoted(a, b)
    return array_ops.reshape(x, [-1, 1]) * array_ops.reshape(y, [1, -1])


@export(_NS + "einsum")
def einsum(subscripts: str, *operands: Any, **kwargs: Any) -> Tensor:
    return linalg_ops.einsum(subscripts, *_promoted(*operands))


@export(_NS + "tensordot")
def tensordot(a: Any, b: Any, axes: Any = 2) -> Tensor:
    return matrix_ops.tensordot(*_promoted(a, b), axes)


@export(_NS + "reshape")
def reshape(a: Any, newshape: Any, order: str = "C") -> Tensor:
    return array_ops.reshape(asarray(a), newshape)


@export(_NS + "ravel")
def ravel(a: Any) -> Tensor:
    return array_ops.reshape(asarray(a), [-1])


@export(_NS + "transpose")
def transpose(a: Any, axes: Any = None) -> Tensor:
    t = asarray(a)
    return array_ops.transpose(t, list(axes) if axes is not None else None)


@export(_NS + "swapaxes")
def swapaxes(a: Any, axis1: int, axis2: int) -> Tensor:
    t = asarray(a)
    perm = list(range(t.shape.rank))
    perm[axis1], perm[axis2] = perm[axis2], perm[axis1]
    return array_ops.transpose(t, perm)


@export(_NS + "moveaxis")
def moveaxis(a: Any, source: int, destination: int) -> Tensor:
    t = asarray(a)
    perm = list(range(t.shape.rank))
    perm.insert(destination % t.shape.rank, perm.pop(source % t.shape.rank))
    return array_ops.transpose(t, perm)


@export(_NS + "expand_dims")
def expand_dims(a: Any, axis: int) -> Tensor:
    return array_ops.expand_dims(asarray(a), axis)


@export(_NS + "squeeze")
def squeeze(a: Any, axis: Any = None) -> Tensor:
    return array_ops.squeeze(asarray(a), axis)


@export(_NS + "concatenate")
def concatenate(arys: Any, axis: int = 0) -> Tensor:
    return array_ops.concat(_promoted(*arys), axis)


@export(_NS + "stack")
def stack(arrays: Any, axis: int = 0) -> Tensor:
    return array_ops.stack(_promoted(*arrays), axis)


@export(_NS + "vstack")
def vstack(tup: Any) -> Tensor:
    return array_ops.concat([a if a.shape.rank > 1 else array_ops.reshape(a, [1, -1])
                             for a in _promoted(*tup)], 0)


@export(_NS + "hstack")
def hstack(tup: Any) -> Tensor:
    arrs = _promoted(*tup)
    return array_ops.concat(arrs, 0 if arrs[0].shape.rank == 1 else 1)


@export(_NS + "tile")
def tile(a: Any, reps: Any) -> Tensor:
    return array_ops.tile(asarray(a), reps)


@export(_NS + "repeat")
def repeat(a: Any, repeats: Any, axis: int | None = None) -> Tensor:
    return array_ops.repeat(asarray(a), repeats, axis)


@export(_NS + "flip")
def flip(m: Any, axis: Any = None) -> Tensor:
    t = asarray(m)
    axes = list(range(t.shape.rank)) if axis is None else (
        [axis] if isinstance(axis, int) else list(axis))
    return array_ops.reverse(t, axes)


@export(_NS + "roll")
def roll(a: Any, shift: Any, axis: Any = None) -> Tensor:
    t = asarray(a)
    if axis is None:
        return array_ops.reshape(signal_ops.roll(array_ops.reshape(t, [-1]), shift, 0),
                                 array_ops.shape(t))
    return signal_ops.roll(t, shift, axis)


@export(_NS + "sort")
def sort(a: Any, axis: int = -1) -> Tensor:
    return array_ops.sort(asarray(a), axis=axis)


@export(_NS + "argsort")
def argsort(a: Any, axis: int = -1) -> Tensor:
    return math_ops.cast(array_ops.argsort(asarray(a), axis=axis), _dtypes.int64)


@export(_NS + "argmax")
def argmax(a: Any, axis: int | None = None) -> Tensor:
    t = asarray(a)
    return reduce_ops.argmax(array_ops.reshape(t, [-1]) if axis is None else t,
                             axis=0 if axis is None else axis)


@export(_NS + "argmin")
def argmin(a: Any, axis: int | None = None) -> Tensor:
    t = asarray(a)
    return reduce_ops.argmin(array_ops.reshape(t, [-1]) if axis is None else t,
                             axis=0 if axis is None else axis)


@export(_NS + "cumsum")
def cumsum(a: Any, axis: int | None = None, dtype: Any = None) -> Tensor:
    t = asarray(a, dtype)
    return reduce_ops.cumsum(array_ops.reshape(t, [-1]) if axis is None else t,
                             axis=0 if axis is None else axis)


@export(_NS + "cumprod")
def cumprod(a: Any, axis: int | None = None, dtype: Any = None) -> Tensor:
    t = asarray(a, dtype)
    return reduce_ops.cumprod(array_ops.reshape(t, [-1]) if axis is None else t,
                              axis=0 if axis is None else axis)


@export(_NS + "take")
def take(a: Any, indices: Any, axis: int | None = None) -> Tensor:
    from tapeflow.ops import gather_ops

    t = asarray(a)
    if axis is None:
        t, axis = array_ops.reshape(t, [-1]), 0
    return gather_ops.gather(t, asarray(indices), axis=axis)


@export(_NS + "allclose")
def allclose(a: Any, b: Any, rtol: float = 1e-5, atol: float = 1e-8,
             equal_nan: bool = False) -> Tensor:
    return reduce_ops.reduce_all(isclose(a, b, rtol, atol, equal_nan))


@export(_NS + "isclose")
def isclose(a: Any, b: Any, rtol: float = 1e-5, atol: float = 1e-8,
            equal_nan: bool = False) -> Tensor:
    x, y = (_float(v) for v in _promoted(a, b))
    close = math_ops.less_equal(math_ops.abs(x - y), atol + rtol * math_ops.abs(y))
    if equal_nan:
        close = math_ops.logical_or(close, math_ops.logical_and(math_ops.is_nan(x),
                                                                math_ops.is_nan(y)))
    return close


@export(_NS + "count_nonzero")
def count_nonzero(a: Any, axis: Any = None) -> Tensor:
    return special_math_ops.count_nonzero(asarray(a), axis=axis)


# --- creation -------------------------------------------------------------------------------


def _dt(dtype: Any, default: Any = None) -> Any:
    if dtype is None:
        dtype = default or (np.float32 if _settings["prefer_float32"] else np.float64)
    return _dtypes.as_dtype(dtype)


@export(_NS + "zeros")
def zeros(shape: Any, dtype: Any = float) -> Tensor:
    return array_ops.zeros(shape, _dt(None if dtype is float else dtype))


@export(_NS + "ones")
def ones(shape: Any, dtype: Any = float) -> Tensor:
    return array_ops.ones(shape, _dt(None if dtype is float else dtype))


@export(_NS + "empty")
def empty(shape: Any, dtype: Any = float) -> Tensor:
    return zeros(shape, dtype)


@export(_NS + "full")
def full(shape: Any, fill_value: Any, dtype: Any = None) -> Tensor:
    value = asarray(fill_value, dtype)
    return array_ops.fill(shape, value)


@export(_NS + "zeros_like")
def zeros_like(a: Any, dtype: Any = None) -> Tensor:
    return array_ops.zeros_like(asarray(a), dtype=dtype)


@export(_NS + "ones_like")
def ones_like(a: Any, dtype: Any = None) -> Tensor:
    return array_ops.ones_like(asarray(a), dtype=dtype)


@export(_NS + "empty_like")
def empty_like(a: Any, dtype: Any = None) -> Tensor:
    return zeros_like(a, dtype)


@export(_NS + "full_like")
def full_like(a: Any, fill_value: Any, dtype: Any = None) -> Tensor:
    t = asarray(a)
    return array_ops.fill(array_ops.shape(t), asarray(fill_value, dtype or t.dtype))


@export(_NS + "arange")
def arange(start: Any, stop: Any = None, step: Any = 1, dtype: Any = None) -> Tensor:
    if stop is None:
        start, stop = 0, start
    target = _dtypes.as_dtype(dtype) if dtype is not None else result_type(start, stop, step)
    if target is _dtypes.float64 and dtype is None and _settings["prefer_float32"]:
        target = _dtypes.float32
    return creation_ops.range_(start, stop, step, dtype=target)


@export(_NS + "linspace")
def linspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True,
             dtype: Any = None) -> Tensor:
    out = asarray(np.linspace(start, stop, num, endpoint=endpoint))
    return out if dtype is None else math_ops.cast(out, dtype)


@export(_NS + "eye")
def eye(N: int, M: int | None = None, k: int = 0, dtype: Any = float) -> Tensor:  # noqa: N803
    return asarray(np.eye(N, M, k), _dt(None if dtype is float else dtype))


@export(_NS + "identity")
def identity(n: int, dtype: Any = float) -> Tensor:
    return eye(n, dtype=dtype)


@export(_NS + "diag")
def diag(v: Any, k: int = 0) -> Tensor:
    t = asarray(v)
    return matrix_ops.diag(t) if t.shape.rank == 1 else matrix_ops.diag_part(t)


@export(_NS + "trace")
def trace(a: Any) -> Tensor:
    return matrix_ops.trace(asarray(a))


@export(_NS + "shape")
def shape(a: Any) -> tuple:
    return tuple(asarray(a).shape.as_list())


@export(_NS + "ndim")
def ndim(a: Any) -> int:
    return asarray(a).shape.rank


@export(_NS + "size")
def size(x: Any, axis: int | None = None) -> int:
    dims = asarray(x).shape.as_list()
    return int(np.prod(dims)) if axis is None else dims[axis]


for _name, _value in [("pi", np.pi), ("e", np.e), ("inf", np.inf), ("nan", np.nan),
                      ("newaxis", None), ("float16", np.float16), ("float32", np.float32),
                      ("float64", np.float64), ("int8", np.int8), ("int16", np.int16),
                      ("int32", np.int32), ("int64", np.int64), ("uint8", np.uint8),
                      ("uint16", np.uint16), ("uint32", np.uint32), ("uint64", np.uint64),
                      ("bool_", np.bool_), ("complex64", np.complex64),
                      ("complex128", np.complex128), ("float_", np.float64),
                      ("int_", np.int64), ("complex_", np.complex128),
                      ("object_", np.object_), ("string_", np.bytes_),
                      ("unicode_", np.str_), ("inexact", np.inexact),
                      ("finfo", np.finfo), ("iinfo", np.iinfo),
                      ("issubdtype", np.issubdtype), ("promote_types", np.promote_types),
                      ("ndarray", Tensor)]:
    export_value(_NS + _name, _value)
export_value(_NS + "result_type", result_type)
export_value(_NS + "asarray", asarray)
export_value(_NS + "asanyarray", asarray)
export_value(_NS + "ascontiguousarray", asarray)
export_value(_NS + "array", array)
export_value(_NS + "copy", lambda a: array(a))


# --- numpy behavior on tensors ---------------------------------------------------------------


@export(_NS + "experimental_enable_numpy_behavior")
def experimental_enable_numpy_behavior(prefer_float32: bool = False,
                                       dtype_conversion_mode: str = "legacy") -> None:
    """Give tensors NumPy's methods and properties (``.T``, ``.reshape``, ``.astype`` ...)."""
    _settings["prefer_float32"] = bool(prefer_float32)
    methods = {
        "T": property(lambda self: array_ops.transpose(self)),
        "reshape": lambda self, *shape, **kw: reshape(
            self, shape[0] if len(shape) == 1 else shape),
        "astype": lambda self, dtype: math_ops.cast(self, dtype),
        "ravel": ravel, "flatten": ravel, "transpose": lambda self, *axes: transpose(
            self, axes[0] if len(axes) == 1 else (axes or None)),
        "clip": clip, "sum": _reduction(reduce_ops.reduce_sum), "mean": mean,
        "max": _reduction(reduce_ops.reduce_max), "min": _reduction(reduce_ops.reduce_min),
        "prod": _reduction(reduce_ops.reduce_prod), "std": std, "var": var,
        "argmax": argmax, "argmin": argmin, "tolist": lambda self: self.numpy().tolist(),
        "size": property(lambda self: size(self)), "data": property(lambda self: self),
        "squeeze": squeeze, "cumsum": cumsum, "dot": dot, "item": lambda self: self.numpy().item(),
    }
    for name, value in methods.items():
        setattr(Tensor, name, value)
    _settings["methods"] = list(methods)
