"""``tf.RegisterGradient`` and ``tf.no_gradient``: gradients declared by op type name.

A function registered for an op type becomes that op's gradient rule: it is called as
``fn(op, *output_grads)`` with an op view (``inputs``, ``outputs``, ``get_attr``, ``type``) and
returns one gradient per input, in tapeflow ops like every rule. As in TensorFlow, registering
a second gradient for a type that has one raises KeyError.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tapeflow._api import export
from tapeflow.framework.dispatch import REGISTRY

_REGISTERED: dict[str, Callable] = {}


class OpView:
    """What a registered gradient function sees of the op (TensorFlow's ``op`` argument)."""

    def __init__(self, op_type: str, inputs: tuple, outputs: tuple, attrs: dict):
        self.type = op_type
        self.name = op_type
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self._attrs = attrs

    def get_attr(self, name: str) -> Any:
        return self._attrs[name]


def _adapter(op_type: str, fn: Callable, multi: bool) -> Callable:
    def grad(g: Any, out: Any, *inputs: Any, **attrs: Any) -> Any:
        outs = tuple(out) if multi else (out,)
        grads = tuple(g) if multi else (g,)
        result = fn(OpView(op_type, inputs, outs, attrs), *grads)
        if not isinstance(result, (list, tuple)):
            result = [result]
        return tuple(result)

    return grad


@export("RegisterGradient", "compat.v1.RegisterGradient")
class RegisterGradient:
    """Decorator: ``@tf.RegisterGradient("MyOp") def _grad(op, grad): ...``."""

    def __init__(self, op_type: str):
        if not isinstance(op_type, str):
            raise TypeError("op_type must be a string")
        self._op_type = op_type

    def __call__(self, fn: Callable) -> Callable:
        name = self._op_type
        existing = REGISTRY.get(name)
        if name in _REGISTERED or (existing is not None and existing.grad_fn is not None):
            raise KeyError(f"Registering two gradient with name '{name}'! (Previous "
                           f"registration was in {getattr(fn, '__module__', '?')})")
        _REGISTERED[name] = fn
        if existing is not None:
            existing.grad_fn = _adapter(name, fn, existing.multi_output)
        return fn


@export("no_gradient", "compat.v1.NoGradient", "compat.v1.NotDifferentiable")
def no_gradient(op_type: str) -> None:
    """Declare that ops of `op_type` have no gradient (their outputs stop gradients)."""
    existing = REGISTRY.get(op_type)
    if op_type in _REGISTERED or (existing is not None and existing.grad_fn is not None):
        raise KeyError(f"Registering two gradient with name '{op_type}'!")
    _REGISTERED[op_type] = None


def registered(op_type: str) -> Callable | None:
    """The gradient function registered for `op_type` (None if none)."""
    return _REGISTERED.get(op_type)
