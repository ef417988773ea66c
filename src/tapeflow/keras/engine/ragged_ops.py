"""TF functions, operators and RaggedTensor methods on a ``RaggedKerasTensor``.

``x = keras.Input(shape=(None,), ragged=True)``, then ``tf.reduce_mean(x, axis=1)``,
``x * 2.0`` or ``x.to_tensor()``: each becomes a ``RaggedOpLambda`` layer that, when the model
runs, calls the same function (the public one, so its ragged dispatch applies) or method on
the real RaggedTensor. Elementwise primitives go through the generic ``TFOpLambda`` hook
(op_lambda.py). Functions are those with a RaggedTensor handler (``dispatch_for_api``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tapeflow.framework import composite, nest
from tapeflow.keras import backend
from tapeflow.keras.engine.base_layer import Layer
from tapeflow.keras.engine.keras_tensor import KerasTensor, RaggedKerasTensor
from tapeflow.ragged.tensor import RaggedTensor

# RaggedTensor members a RaggedKerasTensor offers (methods and properties)
MEMBERS = frozenset({
    "to_tensor", "row_lengths", "nested_row_lengths", "nrows", "row_starts", "row_limits",
    "value_rowids", "bounding_shape", "merge_dims", "with_flat_values", "with_values",
    "to_sparse", "flat_values", "values", "row_splits", "nested_row_splits",
})


class RaggedOpLambda(Layer):
    """One call of a TF function (or a RaggedTensor method) on symbolic ragged inputs."""

    def __init__(self, fn: Callable, name: str, args: tuple, kwargs: dict, **layer_kwargs: Any):
        super().__init__(name=backend.unique_object_name(f"tf.{name}", zero_based=True),
                         autocast=False, **layer_kwargs)
        self.fn, self._function_name = fn, name
        self._structure = (args, kwargs)
        # the arguments with None where a KerasTensor goes (constants stay in the layer)
        self._template = [None if isinstance(x, KerasTensor) else x
                          for x in nest.flatten(self._structure)]
        self.built = True

    def call(self, inputs: list) -> Any:
        it = iter(inputs)
        flat = [next(it) if slot is None else slot for slot in self._template]
        args, kwargs = nest.pack_sequence_as(self._structure, flat)
        return self.fn(*args, **kwargs)

    def get_config(self) -> dict:
        return {"name": self.name, "function": self._function_name}


def record(fn: Callable, name: str, args: tuple, kwargs: dict) -> Any:
    """Call `fn(*args, **kwargs)` symbolically: a RaggedOpLambda node on the KerasTensors."""
    symbolic = [x for x in nest.flatten((args, kwargs)) if isinstance(x, KerasTensor)]
    return RaggedOpLambda(fn, name, args, kwargs)(symbolic)


def _member(self: RaggedKerasTensor, name: str) -> Any:
    if name not in MEMBERS:
        raise AttributeError(f"'RaggedKerasTensor' object has no attribute {name!r}")
    if isinstance(getattr(RaggedTensor, name), property):
        return record(lambda rt: getattr(rt, name), name, (self,), {})
    return lambda *args, **kwargs: record(
        lambda rt, *a, **k: getattr(rt, name)(*a, **k), name, (self, *args), kwargs)


def _register_functions() -> None:
    """A RaggedKerasTensor handler for every public function with a RaggedTensor one."""
    for key, entries in list(composite._HANDLERS.items()):
        if not any(kind is RaggedTensor for kind, _ in entries) or any(
                kind is RaggedKerasTensor for kind, _ in entries):
            continue
        wrapper = composite._WRAPPERS[key]
        name = wrapper.__name__

        def handler(*args: Any, _fn: Callable = wrapper, _name: str = name, **kwargs: Any):
            return record(_fn, _name, args, kwargs)

        entries.append((RaggedKerasTensor, handler))


RaggedKerasTensor.__getattr__ = _member
_register_functions()
