"""TF ops and Python operators on KerasTensors: each becomes a ``TFOpLambda`` layer node.

``x = keras.Input((4,)); y = tf.nn.relu(x * 2 + 1)`` builds a functional graph although
``tf.nn.relu`` and ``*`` know nothing about Keras. Every primitive op goes through
``dispatch.apply``; when one of its inputs is a KerasTensor (no value to read), the dispatch hook
installed here wraps the op, its attributes and its constant inputs in a layer and calls that
layer on the symbolic inputs, which records an ordinary ``Node`` (output shapes are probed like
any other layer's). A composite function (``tf.nn.softmax``) becomes one node per primitive.
Layers are named after the public function the user called (``tf.nn.relu``, ``tf.concat``), as
Keras names them, or after the primitive op for bare operators (``tf.Mul`` for ``x * 2``).
"""

from __future__ import annotations

import sys
from typing import Any

from tapeflow.framework import dispatch
from tapeflow.framework.tensor import Tensor
from tapeflow.keras import backend
from tapeflow.keras.engine.base_layer import Layer
from tapeflow.keras.engine.keras_tensor import KerasTensor


class TFOpLambda(Layer):
    """One primitive op applied to the symbolic inputs of a functional model."""

    def __init__(self, op: dispatch.Op, attrs: dict, template: tuple, api_name: str,
                 **kwargs: Any):
        name = backend.unique_object_name(f"tf.{api_name}", zero_based=True)
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
        if isinstance(x, KerasTensor):  # also a RaggedKerasTensor: elementwise on its values
            break
    else:
        return NotImplemented
    symbolic = [x for x in inputs if isinstance(x, KerasTensor)]
    template = tuple(None if isinstance(x, KerasTensor) else x for x in inputs)
    return TFOpLambda(op, attrs, template, _api_name(op))(symbolic)


# public tapeflow functions by code object, and by the op a factory-made function (one code
# object shared by many functions, e.g. every unary math op) holds in its closure
_PUBLIC_NAMESPACES = ("", "nn", "math", "linalg", "random", "image")
_public_names: dict[Any, str | None] = {}
_op_names: dict[int, str] = {}
# Python operators, named as Keras names them
_OPERATOR_API = {"add": "__operators__.add", "mul": "math.multiply", "sub": "math.subtract",
                 "truediv": "math.truediv", "neg": "math.negative", "matmul": "linalg.matmul"}


def _index_public_functions() -> None:
    import tapeflow

    seen: dict[Any, Any] = {}
    for space in _PUBLIC_NAMESPACES:
        module = getattr(tapeflow, space) if space else tapeflow
        for attr, fn in vars(module).items():
            fn = getattr(fn, "_tf_api", fn)  # behind a dispatch_for_api wrapper (ragged...)
            code = getattr(fn, "__code__", None)
            if code is None or attr.startswith("_"):
                continue
            name = f"{space}.{attr}" if space else attr
            if seen.setdefault(code, fn) is not fn:
                _public_names[code] = None  # shared code: only the closure tells them apart
            elif code not in _public_names or (_public_names[code] or "").count(".") < \
                    name.count("."):
                _public_names[code] = name
            for cell in fn.__closure__ or ():
                key = id(cell.cell_contents)
                if isinstance(cell.cell_contents, dispatch.Op) and \
                        _op_names.get(key, "").count(".") < name.count("."):
                    _op_names[key] = name


def _api_name(op: dispatch.Op) -> str:
    """The outermost public function on the stack below the user's code (``nn.relu``), else
    the op's name: what the user wrote, like Keras's ``tf.nn.relu`` layer names."""
    if not _public_names:
        _index_public_functions()
    name = op.name
    frame = sys._getframe(2)
    while frame is not None and frame.f_globals.get("__name__", "").startswith("tapeflow."):
        code = frame.f_code
        if code in _public_names:
            name = _public_names[code] or _op_names.get(id(op), name)
        if frame.f_globals["__name__"] == "tapeflow.ops.operators":
            name = _OPERATOR_API.get(code.co_name.strip("_").removeprefix("r"), name)
        frame = frame.f_back
    return name


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
