"""TF ops and Python operators on KerasTensors: each becomes a ``TFOpLambda`` layer node.

``x = keras.Input((4,)); y = tf.nn.relu(x * 2 + 1)`` builds a functional graph although
``tf.nn.relu`` and ``*`` know nothing about Keras. Every primitive op goes through
``dispatch.apply``; when one of its inputs is a KerasTensor (no value to read), the dispatch hook
installed here wraps the op, its attributes and its constant inputs in a layer and calls that
layer on the symbolic inputs, which records an ordinary ``Node`` (output shapes are probed like
any other layer's). A composite function (``tf.nn.softmax``) becomes one node per primitive.
"""

from __future__ import annotations

from typing import Any

from tapeflow.framework import dispatch
from tapeflow.framework.tensor import Tensor
from tapeflow.keras import backend
from tapeflow.keras.engine.base_layer import Layer
from tapeflow.keras.engine.keras_tensor import KerasTensor


class TFOpLambda(Layer):
    """One primitive op applied to the symbolic inputs of a functional model."""

    def __init__(self, op: dispatch.Op, attrs: dict, template: tuple, **kwargs: Any):
        name = backend.unique_object_name(f"tf.{op.name}", zero_based=True)
        super().__init__(name=name, autocast=False, **kwargs)
        self.op = op
        self.attrs = dict(attrs)
        # the op's inputs with None where a symbolic tensor goes (constants stay in the layer
        # so they are converted by the op itself, taking the dtype of the tensor they meet)
        self._template = template
        self.built = True

    def call(self, inputs: list) -> Any:
        it = iter(inputs)
        args = [next(it) if slot is None else slot for slot in self._template]
        return dispatch.apply(self.op, *args, **self.attrs)

    def get_config(self) -> dict:
        return {"name": self.name, "op": self.op.name, "attrs": dict(self.attrs)}


def _symbolic_apply(op: dispatch.Op, inputs: tuple, attrs: dict) -> Any:
    for x in inputs:  # the common case (`x + 1.0` eagerly) leaves after this loop
        if type(x) is KerasTensor:
            break
    else:
        return NotImplemented
    symbolic = [x for x in inputs if isinstance(x, KerasTensor)]
    template = tuple(None if isinstance(x, KerasTensor) else x for x in inputs)
    return TFOpLambda(op, attrs, template)(symbolic)


dispatch.symbolic_apply = _symbolic_apply

# Python operators on KerasTensors: the same functions as on tensors; they call ops, which the
# hook above records. `==`/`!=`/hash stay identity-based (KerasTensors are dict keys).
_OPERATOR_NAMES = (
    "__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__",
    "__rtruediv__", "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__", "__pow__",
    "__rpow__", "__neg__", "__pos__", "__abs__", "__matmul__", "__rmatmul__", "__invert__",
    "__and__", "__rand__", "__or__", "__ror__", "__xor__", "__lt__", "__le__", "__gt__",
    "__ge__", "__getitem__",
)
for _name in _OPERATOR_NAMES:
    setattr(KerasTensor, _name, getattr(Tensor, _name))
# `convert_to_tensor` passes tensor-likes through `_as_tensor`: op functions that convert their
# arguments first then reach `apply`, where the hook takes over
KerasTensor._as_tensor = lambda self: self
