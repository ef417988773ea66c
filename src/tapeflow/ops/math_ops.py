"""Elementwise arithmetic, comparisons and casts: kernel, shape rule and gradient side by side."""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow._api import export
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework.constant import convert_to_tensor
from tapeflow.framework.dispatch import apply, eager_binary, eager_unary, op
from tapeflow.framework.shape_rules import broadcast_shapes, elementwise, same_as_first, with_dtype
from tapeflow.framework.tensor import EagerTensor, Tensor
from tapeflow.framework.variable import Variable
from tapeflow.kernels import activations as _activations
from tapeflow.kernels import bias as _bias
from tapeflow.kernels import low_precision, scalar_math
from tapeflow.kernels.low_precision import BFLOAT16
from tapeflow.ops.array_ops import _tensor, ones_like, zeros_like

# --- gradient plumbing: reduce a broadcast gradient back to an input's shape -------------------


def _sum_to_shape_emit(node, args: list[str], bind) -> str | None:
    """With static float shapes: nothing, or one ``np.add.reduce`` and a reshape."""
    g, like = node.inputs
    if not (g.dtype.is_floating and g.shape.is_fully_defined()
            and like.shape.is_fully_defined()):
        return None
    gs, xs = g.shape.as_tuple(), like.shape.as_tuple()
    if gs == xs:
        return args[0]
    extra = len(gs) - len(xs)
    axes = tuple(range(extra)) + tuple(i + extra for i, d in enumerate(xs)
                                       if d == 1 and gs[i + extra] != 1)
    if (g.dtype.name in ("float32", "float64") and xs and extra > 0 and gs[extra:] == xs
            and g.shape.num_elements() >= _bias.LEADING_MIN):  # a bias gradient: blocked sums
        return f"{bind(_bias.leading_sums)}({args[0]}, {bind(xs, 'shape')})"
    return f"{bind(np.add.reduce)}({args[0]}, {bind(axes, 'axes')}).reshape({bind(xs, 'shape')})"


@op("SumToShapeOf", shape=lambda g, x: x, shape_only=(1,), emit=_sum_to_shape_emit)
def _sum_to_shape_of(g, x):
    """Sum `g` over the axes along which `x` was broadcast (runtime shapes: works in graphs)."""
    if g.shape == x.shape:
        return g
    summed = _bias.leading_sums(g, x.shape)  # the graph's emitted line calls the same
    if summed is not None:
        return summed
    extra = g.ndim - x.ndim
    axes = tuple(range(extra)) + tuple(
        i + extra for i, d in enumerate(x.shape) if d == 1 and g.shape[i + extra] != 1)
    return np.sum(g, axis=axes, keepdims=False).reshape(x.shape) if axes else g.reshape(x.shape)


@op("BroadcastLike", shape=lambda g, x: x, shape_only=(1,))
def _broadcast_like(g, x):
    return np.broadcast_to(g, x.shape)


@_sum_to_shape_of.def_grad
def _(g, out, grad_in, x):
    return _broadcast_like(g, grad_in), None


@_broadcast_like.def_grad
def _(g, out, small, x):
    return _sum_to_shape_of(g, small), None


def unbroadcast(g, x):
    """Gradient `g` of a broadcast result, reduced to the shape of input `x`."""
    if type(g) is EagerTensor and g._value.shape == x._value.shape:  # eager: nothing to do
        return g
    gs, xs = g.shape, x.shape
    if gs.is_fully_defined() and gs == xs:
        return g
    return _sum_to_shape_of(g, x)


# --- binary arithmetic ------------------------------------------------------------------------


_add = op("AddV2", elementwise=True, shape=elementwise, neutral=(0, (0, 1)))(np.add)


@_add.def_grad
def _(g, out, x, y, *, needs=(True, True)):
    return (unbroadcast(g, x) if needs[0] else None), (unbroadcast(g, y) if needs[1] else None)


_sub = op("Sub", elementwise=True, shape=elementwise, neutral=(0, (1,)))(np.subtract)


@_sub.def_grad
def _(g, out, x, y, *, needs=(True, True)):
    return (unbroadcast(g, x) if needs[0] else None), (unbroadcast(-g, y) if needs[1] else None)


_mul = op("Mul", elementwise=True, shape=elementwise, neutral=(1, (0, 1)))(np.multiply)


@_mul.def_grad
def _(g, out, x, y, *, needs=(True, True)):
    return (unbroadcast(g * y, x) if needs[0] else None,
            unbroadcast(g * x, y) if needs[1] else None)


@op("RealDiv", elementwise=True, shape=elementwise, neutral=(1, (1,)),
    ufunc=(np.true_divide, ()))
def _div(x, y):
    if x.dtype.kind in "iu":  # integer division truncating toward zero, as TF's Div
        return np.trunc(np.true_divide(x, y)).astype(x.dtype)
    return np.true_divide(x, y)


@_div.def_grad
def _(g, out, x, y, *, needs=(True, True)):
    return (unbroadcast(g / y, x) if needs[0] else None,
            unbroadcast(-g * x / (y * y), y) if needs[1] else None)


_neg = op("Neg", elementwise=True, shape=same_as_first)(np.negative)


@_neg.def_grad
def _(g, out, x):
    return -g


@op("Cast", shape=lambda x, *, dtype: (x[0], dtype), passthrough=True)
def _cast(x, *, dtype):
    if dtype is _dtypes.string:
        raise TypeError("Cast to string is not supported; use tf.strings.as_string")
    if x.dtype == object:
        raise TypeError("Cast from string is not supported; use tf.strings.to_number")
    if x.dtype.itemsize == 2 or dtype.size == 2:  # float16 <-> float32: compiled conversion
        return low_precision.astype(x, dtype._np)
    return x.astype(dtype._np, copy=False)


@_cast.def_grad
def _(g, out, x, *, dtype):
    if not x.dtype.is_differentiable or not dtype.is_differentiable:
        return None
    return cast(g, x.dtype)


# --- public API ------------------------------------------------------------------------------


def _binary(o):
    def general(x: Any, y: Any):
        return apply(o, x, y)

    eager = eager_binary(o, general)  # maximum(x, 0.0), maximum(x, y): the kernel at once

    def run(x: Any, y: Any, name: str | None = None):
        if type(x) is EagerTensor:
            return eager(x, y)
        return apply(o, x, y)

    return run


def _unary(o):
    def general(x: Any):
        return apply(o, x)

    eager = eager_unary(o, general)  # tf.exp(x) on an eager tensor: the kernel at once

    def run(x: Any, name: str | None = None):
        return eager(x)

    return run


def _public(fn, doc: str, *names: str):
    """Give a generated op wrapper its TF name and docstring, and export it."""
    fn.__name__ = fn.__qualname__ = names[0].rsplit(".", 1)[-1]
    fn.__doc__ = doc
    return export(*names)(fn)


add = _public(_binary(_add), "Elementwise x + y with broadcasting (both must share a dtype).",
              "math.add", "add")
subtract = _public(_binary(_sub), "Elementwise x - y.", "math.subtract", "subtract")
multiply = _public(_binary(_mul), "Elementwise x * y.", "math.multiply", "multiply")


@export("math.negative", "negative")
def negative(x: Any, name: str | None = None):
    """Elementwise -x."""
    return apply(_neg, x)


@export("cast", "dtypes.cast")
def cast(x: Any, dtype: Any, name: str | None = None):
    """Convert `x` to `dtype` (float -> int truncates, as TF)."""
    dtype = _dtypes.as_dtype(dtype)
    x = _tensor(x)
    if x.dtype is dtype:
        return x if not hasattr(x, "assign") else x.read_value()
    return apply(_cast, x, dtype=dtype)


@export("math.truediv", "truediv")
def truediv(x: Any, y: Any, name: str | None = None):
    """x / y; integer inputs are first cast to float (int32 -> float64, as TF)."""
    if type(x) is EagerTensor and x._value.dtype.kind in "fc":  # a / b, a / 2.0
        return _eager_truediv(x, y)
    return _truediv(x, y)


def _truediv(x: Any, y: Any):
    x, y = _as_pair(x, y)
    if x.dtype.is_integer:
        target = _dtypes.float32 if x.dtype.size <= 2 else _dtypes.float64
        x, y = cast(x, target), cast(y, target)
    return apply(_div, x, y)


# a float x: RealDiv at once for a y of its dtype or a number (_as_pair would convert the number
# to the same tensor, at ~3 us); any other y takes _truediv
_eager_truediv = eager_binary(_div, _truediv)


@export("math.divide", "divide")
def divide(x: Any, y: Any, name: str | None = None):
    """x / y (TF's ``tf.divide``, true division)."""
    return truediv(x, y)


@op("SizeRatio", shape=lambda out, x: ((), out[1]), shape_only=(0, 1))
def _size_ratio_op(out, x):
    """size(out) / size(x) as a scalar of out's dtype (the mean's gradient scale)."""
    return np.asarray(out.size / max(x.size, 1), dtype=out.dtype)


def _size_ratio(out, x):
    return apply(_size_ratio_op, out, x)


# --- helpers shared by the ops below ----------------------------------------------------------


def _as_pair(x: Any, y: Any) -> tuple:
    """Convert Python values so that each side takes the other's dtype (``x + 1``, ``2 * x``)."""
    if not isinstance(x, (Tensor, Variable)):
        y = _tensor(y) if isinstance(y, np.ndarray) else y
        x = convert_to_tensor(x, dtype_hint=getattr(y, "dtype", None))
    return x, _tensor(y, x.dtype)


def _float_kernel(ufunc: Any) -> Any:
    """A unary kernel for float/complex inputs only (TF has no integer sqrt, exp, sin ...)."""

    def kernel(x):
        if x.dtype.kind not in "fc" and x.dtype != BFLOAT16:
            raise TypeError(f"expects a floating point input, got {x.dtype}; use tf.cast first")
        return ufunc(x)

    kernel.__name__ = ufunc.__name__
    return kernel


def _bool_kernel(ufunc: Any) -> Any:
    """A logical kernel: TF's logical ops only accept bool tensors."""

    def kernel(*xs):
        for x in xs:
            if x.dtype.kind != "b":
                raise TypeError(f"expects bool inputs, got {x.dtype}")
        return ufunc(*xs)

    kernel.__name__ = ufunc.__name__
    return kernel


_bool_rule = with_dtype(_dtypes.bool)


# --- binary arithmetic (continued) ------------------------------------------------------------


_floordiv = op("FloorDiv", elementwise=True, shape=elementwise)(np.floor_divide)
_floormod = op("FloorMod", elementwise=True, shape=elementwise)(np.mod)


@_floormod.def_grad
def _(g, out, x, y):
    return unbroadcast(g, x), unbroadcast(-g * floordiv(x, y), y)


_pow = op("Pow", elementwise=True, shape=elementwise)(np.power)


@_pow.def_grad
def _(g, out, x, y):
    gx = g * y * pow(x, y - 1)
    # NOTE: d/dy x**y = x**y log x is only defined for x > 0; TF uses 0 elsewhere, so do we
    safe_log = where(x > 0, log(where(x > 0, x, ones_like(x))), zeros_like(x))
    return unbroadcast(gx, x), unbroadcast(g * out * safe_log, y)


_maximum = op("Maximum", elementwise=True, shape=elementwise)(np.maximum)
_minimum = op("Minimum", elementwise=True, shape=elementwise)(np.minimum)


def _select_grads(g, x, y, x_wins):
    zeros = zeros_like(g)
    return unbroadcast(where(x_wins, g, zeros), x), unbroadcast(where(x_wins, zeros, g), y)


@_maximum.def_grad
def _(g, out, x, y):
    return _select_grads(g, x, y, x >= y)  # ties go to x, as TF


@_minimum.def_grad
def _(g, out, x, y):
    return _select_grads(g, x, y, x <= y)


# --- unary math -------------------------------------------------------------------------------


_abs = op("Abs", elementwise=True, shape=same_as_first)(np.abs)
_sign = op("Sign", elementwise=True, shape=same_as_first)(np.sign)
_square = op("Square", elementwise=True, shape=same_as_first)(np.square)
def _sqrt_emit(node, args: list[str], bind) -> str | None:
    """Large float arrays through the compiled square root (``kernels.activations.sqrt``: the
    same bits at half NumPy's time); the rest as the ufunc call."""
    x = node.inputs[0]
    n = x.shape.num_elements() if x.shape.is_fully_defined() else None
    if x.dtype.name not in ("float32", "float64") or n is None or n < _activations.SQRT_MIN:
        return None
    return f"{bind(_activations.sqrt)}({args[0]})"


def _sqrt_emit_into(node, args: list[str], bind) -> str | None:
    expr = _sqrt_emit(node, args, bind)
    return None if expr is None else f"{expr[:-1]}, out={args[0]})"


_sqrt = op("Sqrt", elementwise=True, shape=same_as_first, ufunc=(np.sqrt, ()), emit=_sqrt_emit,
           emit_into=_sqrt_emit_into)(_float_kernel(np.sqrt))
_rsqrt = op("Rsqrt", elementwise=True, shape=same_as_first,
            scalar=(scalar_math.rsqrt, (1,)))(_float_kernel(lambda x: 1 / np.sqrt(x)))
_reciprocal = op("Reciprocal", elementwise=True, shape=same_as_first,
                 scalar=(scalar_math.reciprocal, (1,)))(_float_kernel(np.reciprocal))
_exp = op("Exp", elementwise=True, shape=same_as_first, ufunc=(np.exp, ()))(
    _float_kernel(np.exp))
_log = op("Log", elementwise=True, shape=same_as_first, ufunc=(np.log, ()))(
    _float_kernel(np.log))
_log1p = op("Log1p", elementwise=True, shape=same_as_first, ufunc=(np.log1p, ()))(
    _float_kernel(np.log1p))
_sin = op("Sin", elementwise=True, shape=same_as_first, ufunc=(np.sin, ()))(
    _float_kernel(np.sin))
_cos = op("Cos", elementwise=True, shape=same_as_first, ufunc=(np.cos, ()))(
    _float_kernel(np.cos))
_tanh = op("Tanh", elementwise=True, shape=same_as_first, ufunc=(np.tanh, ()))(
    _float_kernel(np.tanh))
_floor = op("Floor", elementwise=True, shape=same_as_first)(_float_kernel(np.floor))
_ceil = op("Ceil", elementwise=True, shape=same_as_first)(_float_kernel(np.ceil))
_round = op("Round", elementwise=True, shape=same_as_first)(np.round)  # half to even, as TF


@op("Sigmoid", elementwise=True, shape=same_as_first, output="fresh_float",
    scalar=(scalar_math.sigmoid, (0.5,)))
def _sigmoid(x):
    if x.dtype.kind not in "fc" and x.dtype != BFLOAT16:
        raise TypeError(f"expects a floating point input, got {x.dtype}; use tf.cast first")
    # NOTE: 1 / (1 + exp(-x)) overflows for large negative x; 0.5*tanh(x/2)+0.5 is the same
    # function, finite everywhere, and three in-place passes
    half = x.dtype.type(0.5)
    t = np.multiply(x, half, out=np.empty_like(x))  # `out=` keeps 0-d results arrays
    np.tanh(t, out=t)
    np.multiply(t, half, out=t)
    return np.add(t, half, out=t)


_abs.def_grad(lambda g, out, x: g * sign(x))
_sign.def_grad(lambda g, out, x: zeros_like(g))
_square.def_grad(lambda g, out, x: g * (x + x))
_sqrt.def_grad(lambda g, out, x: g * 0.5 / out)
_rsqrt.def_grad(lambda g, out, x: g * -0.5 * out * out * out)
_reciprocal.def_grad(lambda g, out, x: -g * out * out)
_exp.def_grad(lambda g, out, x: g * out)
_log.def_grad(lambda g, out, x: g / x)
_log1p.def_grad(lambda g, out, x: g / (x + 1))
_sin.def_grad(lambda g, out, x: g * cos(x))
_cos.def_grad(lambda g, out, x: -g * sin(x))
_tanh.def_grad(lambda g, out, x: g * (1 - out * out))
_sigmoid.def_grad(lambda g, out, x: g * out * (1 - out))
for _piecewise_constant in (_floor, _ceil, _round):
    _piecewise_constant.def_grad(lambda g, out, x: zeros_like(g))


# --- comparisons and logic (no gradients: outputs are bool) -----------------------------------


_equal = op("Equal", elementwise=True, shape=_bool_rule)(np.equal)
_not_equal = op("NotEqual", elementwise=True, shape=_bool_rule)(np.not_equal)
_less = op("Less", elementwise=True, shape=_bool_rule)(np.less)
_less_equal = op("LessEqual", elementwise=True, shape=_bool_rule)(np.less_equal)
_greater = op("Greater", elementwise=True, shape=_bool_rule)(np.greater)
_greater_equal = op("GreaterEqual", elementwise=True, shape=_bool_rule)(np.greater_equal)
_logical_and = op("LogicalAnd", elementwise=True, shape=_bool_rule)(
    _bool_kernel(np.logical_and))
_logical_or = op("LogicalOr", elementwise=True, shape=_bool_rule)(_bool_kernel(np.logical_or))
_logical_xor = op("LogicalXor", elementwise=True, shape=_bool_rule)(
    _bool_kernel(np.logical_xor))
_logical_not = op("LogicalNot", elementwise=True, shape=_bool_rule)(
    _bool_kernel(np.logical_not))
_is_nan = op("IsNan", elementwise=True, shape=_bool_rule)(_float_kernel(np.isnan))
_is_inf = op("IsInf", elementwise=True, shape=_bool_rule)(_float_kernel(np.isinf))
_is_finite = op("IsFinite", elementwise=True, shape=_bool_rule)(_float_kernel(np.isfinite))


# --- where / select ---------------------------------------------------------------------------


def _select_rule(cond, x, y):
    return broadcast_shapes(cond[0], x[0], y[0], op="SelectV2"), x[1]


@op("SelectV2", shape=_select_rule)
def _select(cond, x, y):
    if cond.dtype.kind != "b":
        raise TypeError(f"condition must be bool, got {cond.dtype}")
    if x.dtype != y.dtype:
        raise TypeError(f"x and y must have the same dtype, got {x.dtype} and {y.dtype}")
    return np.where(cond, x, y)


@_select.def_grad
def _(g, out, cond, x, y):
    zeros = zeros_like(g)
    return None, unbroadcast(where(cond, g, zeros), x), unbroadcast(where(cond, zeros, g), y)


@op("Where", shape=lambda cond: (None if cond[0] is None else (None, len(cond[0])),
                                 _dtypes.int64))
def _where_indices(cond):
    return np.argwhere(cond).astype(np.int64)


# --- public API (continued) -------------------------------------------------------------------


floordiv = _public(_binary(_floordiv), "x // y, rounding toward -inf.",
                   "math.floordiv", "floordiv")
floormod = _public(_binary(_floormod), "x mod y with the sign of y (Python's %).",
                   "math.floormod", "math.mod", "floormod", "mod")
pow = _public(_binary(_pow), "x ** y elementwise.", "math.pow", "pow")  # noqa: A001
maximum = _public(_binary(_maximum), "Elementwise max; the gradient goes to x on ties.",
                  "math.maximum", "maximum")
minimum = _public(_binary(_minimum), "Elementwise min; the gradient goes to x on ties.",
                  "math.minimum", "minimum")
def _abs_any(x: Any, name: str | None = None):
    t = x if hasattr(x, "dtype") else _tensor(x)
    if t.dtype.is_complex:
        from tapeflow.ops import complex_ops

        return complex_ops.complex_abs(t)
    return apply(_abs, t)


abs = _public(_abs_any, "|x| (gradient sign(x), 0 at 0); complex x: a real modulus.",  # noqa: A001
              "math.abs", "abs")
sign = _public(_unary(_sign), "-1, 0 or 1.", "math.sign", "sign")
square = _public(_unary(_square), "x * x.", "math.square", "square")
sqrt = _public(_unary(_sqrt), "Square root (float inputs).", "math.sqrt", "sqrt")
rsqrt = _public(_unary(_rsqrt), "1 / sqrt(x).", "math.rsqrt")
reciprocal = _public(_unary(_reciprocal), "1 / x.", "math.reciprocal")
exp = _public(_unary(_exp), "e ** x.", "math.exp", "exp")
log = _public(_unary(_log), "Natural logarithm.", "math.log")
log1p = _public(_unary(_log1p), "log(1 + x), accurate for small x.", "math.log1p")
sin = _public(_unary(_sin), "Sine.", "math.sin", "sin")
cos = _public(_unary(_cos), "Cosine.", "math.cos", "cos")
tanh = _public(_unary(_tanh), "Hyperbolic tangent.", "math.tanh", "tanh", "nn.tanh")
sigmoid = _public(_unary(_sigmoid), "1 / (1 + exp(-x)), stable for large |x|.",
                  "math.sigmoid", "sigmoid", "nn.sigmoid")
floor = _public(_unary(_floor), "Round down.", "math.floor", "floor")
ceil = _public(_unary(_ceil), "Round up.", "math.ceil")
round = _public(_unary(_round), "Round half to even.", "math.round", "round")  # noqa: A001
equal = _public(_binary(_equal), "x == y elementwise (bool).", "math.equal", "equal")
not_equal = _public(_binary(_not_equal), "x != y elementwise (bool).",
                    "math.not_equal", "not_equal")
less = _public(_binary(_less), "x < y elementwise (bool).", "math.less", "less")
less_equal = _public(_binary(_less_equal), "x <= y elementwise (bool).",
                     "math.less_equal", "less_equal")
greater = _public(_binary(_greater), "x > y elementwise (bool).", "math.greater", "greater")
greater_equal = _public(_binary(_greater_equal), "x >= y elementwise (bool).",
                        "math.greater_equal", "greater_equal")
logical_and = _public(_binary(_logical_and), "Elementwise AND of bool tensors.",
                      "math.logical_and", "logical_and")
logical_or = _public(_binary(_logical_or), "Elementwise OR of bool tensors.",
                     "math.logical_or", "logical_or")
logical_xor = _public(_binary(_logical_xor), "Elementwise XOR of bool tensors.",
                      "math.logical_xor")
logical_not = _public(_unary(_logical_not), "Elementwise NOT of a bool tensor.",
                      "math.logical_not", "logical_not")
is_nan = _public(_unary(_is_nan), "True where x is NaN.", "math.is_nan")
is_inf = _public(_unary(_is_inf), "True where x is +-inf.", "math.is_inf")
is_finite = _public(_unary(_is_finite), "True where x is neither NaN nor inf.",
                    "math.is_finite")


@export("where")
def where(condition: Any, x: Any = None, y: Any = None, name: str | None = None):
    """Pick x where condition holds, else y (broadcasting); with one argument, the true indices.

    ``tf.where(c)`` returns an int64 [num_true, rank] tensor of coordinates.
    """
    condition = _tensor(condition)
    if x is None and y is None:
        return apply(_where_indices, condition)
    if x is None or y is None:
        raise ValueError("tf.where: x and y must both be given or both be None")
    x, y = _as_pair(x, y)
    return apply(_select, condition, x, y)


@export("clip_by_value")
def clip_by_value(t: Any, clip_value_min: Any, clip_value_max: Any, name: str | None = None):
    """Clamp to [min, max]; the gradient passes where t is inside the range."""
    t, lo = _as_pair(t, clip_value_min)
    return minimum(maximum(t, lo), _as_pair(t, clip_value_max)[1])


@export("math.squared_difference")
def squared_difference(x: Any, y: Any, name: str | None = None):
    """(x - y) ** 2."""
    d = subtract(x, y)
    return d * d


@export("math.divide_no_nan", "div_no_nan")
def divide_no_nan(x: Any, y: Any, name: str | None = None):
    """x / y, or 0 where y == 0 (also zero gradient there)."""
    x, y = _as_pair(x, y)
    nonzero = not_equal(y, 0)
    safe_y = where(nonzero, y, ones_like(y))
    return where(nonzero, truediv(x, safe_y), zeros_like(truediv(x, safe_y)))


@export("math.add_n", "add_n")
def add_n(inputs: Any, name: str | None = None):
    """Sum of a list of same-shaped tensors."""
    inputs = list(inputs)
    if not inputs:
        raise ValueError("tf.add_n needs at least one input")
    total = convert_to_tensor(inputs[0])
    for t in inputs[1:]:
        total = add(total, t)
    return total

