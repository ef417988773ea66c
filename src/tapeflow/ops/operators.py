"""Python operators on Tensor and Variable (``+``, ``@``, ``<``, ``[]`` ...), bound to ops.

The hot arithmetic operators call ``apply`` directly; on eager tensors ``+``, ``-``, ``*`` and
``/`` with a tensor or number of the same dtype go straight to the kernel
(``dispatch.eager_binary``) and ``[]`` straight to ``slice_by_index``. The rest look their op
function up by name.
"""

from __future__ import annotations

import importlib

from tapeflow.framework.dispatch import apply, eager_binary, eager_unary, number_operand
from tapeflow.framework.tensor import EagerTensor, Tensor
from tapeflow.framework.variable import Variable
from tapeflow.ops import indexing_ops, linalg_ops, math_ops

_add, _sub, _mul = math_ops._add, math_ops._sub, math_ops._mul
_NUMBERS = (float, int)


def _like(y, x):
    """A Python number as an eager tensor of x's dtype (`x * 2`), before dispatch's slow path."""
    value = getattr(x, "_value", None)
    if value is None:
        return y  # graph mode: the graph converts constants
    number = number_operand(y, value.dtype)
    return y if number is None else number


def __add__(x, y):
    return apply(_add, x, _like(y, x) if type(y) in _NUMBERS else y)


def __radd__(x, y):
    return apply(_add, _like(y, x) if type(y) in _NUMBERS else y, x)


def __sub__(x, y):
    return apply(_sub, x, _like(y, x) if type(y) in _NUMBERS else y)


def __rsub__(x, y):
    return apply(_sub, _like(y, x) if type(y) in _NUMBERS else y, x)


def __mul__(x, y):
    return apply(_mul, x, _like(y, x) if type(y) in _NUMBERS else y)


def __rmul__(x, y):
    return apply(_mul, _like(y, x) if type(y) in _NUMBERS else y, x)


def __truediv__(x, y):
    return math_ops.truediv(x, y)


def __rtruediv__(x, y):
    return math_ops.truediv(y, x)


def __neg__(x):
    return apply(math_ops._neg, x)


def __matmul__(x, y):
    return linalg_ops.matmul(x, y)


def __rmatmul__(x, y):
    return linalg_ops.matmul(y, x)


def _named(module: str, fname: str, reflected: bool = False):
    """Operator that calls ``tapeflow.ops.<module>.<fname>`` (resolved on first use)."""
    cache = []

    def resolve():
        if not cache:
            cache.append(getattr(importlib.import_module(f"tapeflow.ops.{module}"), fname))
        return cache[0]

    if reflected:
        def method(x, y):
            return resolve()(y, x)
    else:
        def method(x, *args):
            return resolve()(x, *args)
    method.__name__ = fname
    return method


_OPERATORS = {
    "__add__": __add__, "__radd__": __radd__, "__sub__": __sub__, "__rsub__": __rsub__,
    "__mul__": __mul__, "__rmul__": __rmul__, "__truediv__": __truediv__,
    "__rtruediv__": __rtruediv__, "__neg__": __neg__, "__matmul__": __matmul__,
    "__rmatmul__": __rmatmul__,
    "__floordiv__": _named("math_ops", "floordiv"),
    "__rfloordiv__": _named("math_ops", "floordiv", reflected=True),
    "__mod__": _named("math_ops", "floormod"),
    "__rmod__": _named("math_ops", "floormod", reflected=True),
    "__pow__": _named("math_ops", "pow"),
    "__rpow__": _named("math_ops", "pow", reflected=True),
    "__abs__": _named("math_ops", "abs"),
    "__pos__": lambda x: x,
    "__invert__": _named("math_ops", "logical_not"),
    "__and__": _named("math_ops", "logical_and"),
    "__rand__": _named("math_ops", "logical_and", reflected=True),
    "__or__": _named("math_ops", "logical_or"),
    "__ror__": _named("math_ops", "logical_or", reflected=True),
    "__xor__": _named("math_ops", "logical_xor"),
    "__lt__": _named("math_ops", "less"),
    "__le__": _named("math_ops", "less_equal"),
    "__gt__": _named("math_ops", "greater"),
    "__ge__": _named("math_ops", "greater_equal"),
    "__getitem__": indexing_ops.slice_by_index,
}


def _eq(x, y):
    if y is None:
        return False
    return math_ops.equal(x, y)


def _ne(x, y):
    if y is None:
        return True
    return math_ops.not_equal(x, y)


for _cls in (Tensor, Variable):
    for _name, _fn in _OPERATORS.items():
        setattr(_cls, _name, _fn)
    _cls.__eq__ = _eq
    _cls.__ne__ = _ne
    _cls.__hash__ = lambda self: id(self)

# eager tensors: a tensor or number of the same dtype skips apply's general walk (x, the
# tensor the method is called on, is an EagerTensor here)
EagerTensor.__add__ = eager_binary(_add, __add__)
EagerTensor.__radd__ = eager_binary(_add, __radd__, reflected=True)
EagerTensor.__sub__ = eager_binary(_sub, __sub__)
EagerTensor.__rsub__ = eager_binary(_sub, __rsub__, reflected=True)
EagerTensor.__mul__ = eager_binary(_mul, __mul__)
EagerTensor.__rmul__ = eager_binary(_mul, __rmul__, reflected=True)
EagerTensor.__neg__ = eager_unary(math_ops._neg, __neg__)
