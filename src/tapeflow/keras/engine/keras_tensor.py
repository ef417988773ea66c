"""Symbolic tensors of the functional API and the nodes that connect layers.

``tf.keras.Input(shape)`` returns a ``KerasTensor``: a shape and dtype with no value. Calling a
layer on one records a ``Node`` (the layer, its symbolic arguments, its symbolic outputs) and
returns new KerasTensors; ``Model(inputs, outputs)`` walks these nodes back from the outputs.
"""

from __future__ import annotations

import itertools
from typing import Any

from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework import nest
from tapeflow.framework.composite import CompositeTensor
from tapeflow.framework.shapes import TensorShape, as_shape

_uid = itertools.count()


class KerasTensor:
    """A placeholder for a layer's output while a functional model is being defined."""

    _is_keras_tensor = True
    __array_priority__ = 100  # `ndarray + KerasTensor` defers to our reflected operator

    def __init__(self, shape: Any, dtype: Any = "float32", name: str | None = None):
        self._shape = shape if isinstance(shape, TensorShape) else as_shape(shape)
        self._dtype = _dtypes.as_dtype(dtype)
        self._name = name
        self._uid = next(_uid)
        self._keras_history: tuple[Any, int, int] | None = None

    @property
    def shape(self) -> TensorShape:
        return self._shape

    @property
    def dtype(self) -> _dtypes.DType:
        return self._dtype

    @property
    def ndim(self) -> int | None:
        return self._shape.rank

    def get_shape(self) -> TensorShape:
        return self._shape

    @property
    def name(self) -> str:
        if self._name is not None:
            return self._name
        if self._keras_history is None:
            return "keras_tensor"
        layer, node_index, index = self._keras_history
        return f"{layer.name}/{node_index}/{index}"

    @property
    def node(self) -> Node | None:
        if self._keras_history is None:
            return None
        layer, node_index, _ = self._keras_history
        return layer._inbound_nodes[node_index]

    def __hash__(self) -> int:
        return id(self)

    def __len__(self) -> int:
        raise TypeError("Keras symbolic inputs/outputs do not implement `__len__`: their batch "
                        "size is not known until the model is called on data.")

    def __iter__(self):
        raise TypeError(f"Cannot iterate over a KerasTensor {self!r}: it has no value yet.")

    def __bool__(self) -> bool:
        raise TypeError(f"Using a symbolic KerasTensor {self!r} as a Python bool is not "
                        "allowed: its value is only known when the model runs.")

    def __repr__(self) -> str:
        created = ""
        if self._keras_history is not None:
            created = f" (created by layer '{self._keras_history[0].name}')"
        return f"<KerasTensor: shape={self._shape} dtype={self._dtype.name}{created}>"


class RaggedKerasTensor(KerasTensor, CompositeTensor):
    """A symbolic RaggedTensor (``tf.keras.Input(shape=(None,), ragged=True)``, or a layer's
    ragged output): its ``type_spec`` is a ``RaggedTensorSpec``. A composite, so TF functions
    with ragged dispatch reach it (engine/ragged_ops.py records them as layers)."""

    def __init__(self, shape: Any, dtype: Any = "float32", name: str | None = None,
                 ragged_rank: int = 1, row_splits_dtype: Any = "int64"):
        super().__init__(shape, dtype, name)
        self.ragged_rank = int(ragged_rank)
        self.row_splits_dtype = _dtypes.as_dtype(row_splits_dtype)

    @property
    def type_spec(self) -> Any:
        from tapeflow.ragged.tensor import RaggedTensorSpec

        return RaggedTensorSpec(self._shape, self._dtype, self.ragged_rank,
                                self.row_splits_dtype)

    _type_spec = type_spec

    def __repr__(self) -> str:
        created = ""
        if self._keras_history is not None:
            created = f" (created by layer '{self._keras_history[0].name}')"
        return f"<KerasTensor: type_spec={self.type_spec!r}{created}>"


class SparseKerasTensor(KerasTensor, CompositeTensor):
    """A symbolic SparseTensor (``tf.keras.Input(shape, sparse=True)``): its ``type_spec`` is
    a ``SparseTensorSpec``."""

    @property
    def type_spec(self) -> Any:
        from tapeflow.sparse.tensor import SparseTensorSpec

        return SparseTensorSpec(self._shape, self._dtype)

    _type_spec = type_spec

    def __repr__(self) -> str:
        created = ""
        if self._keras_history is not None:
            created = f" (created by layer '{self._keras_history[0].name}')"
        return f"<KerasTensor: type_spec={self.type_spec!r}{created}>"


def is_keras_tensor(x: Any) -> bool:
    """True for symbolic functional-API tensors."""
    return isinstance(x, KerasTensor)


class Node:
    """One call of `layer` on symbolic inputs: what it was called with and what it made."""

    def __init__(self, layer: Any, call_inputs: Any, call_args: tuple, call_kwargs: dict,
                 outputs: Any):
        self.layer = layer
        self.call_inputs = call_inputs
        self.call_args = call_args
        self.call_kwargs = call_kwargs
        self.outputs = outputs
        arguments = (call_inputs, call_args, call_kwargs)
        self._flat_arguments = nest.flatten(arguments)
        self.keras_inputs = [x for x in self._flat_arguments if isinstance(x, KerasTensor)]
        self._simple = (not call_args and not call_kwargs and isinstance(call_inputs, KerasTensor))
        self._arguments = arguments
        self.flat_outputs = nest.flatten(outputs)
        self.index = len(layer._inbound_nodes)
        layer._inbound_nodes.append(self)
        for i, out in enumerate(self.flat_outputs):
            out._keras_history = (layer, self.index, i)
        for x in self.keras_inputs:
            if x._keras_history is not None:
                x._keras_history[0]._outbound_nodes.append(self)

    @property
    def input_tensors(self) -> Any:
        return self.call_inputs

    @property
    def output_tensors(self) -> Any:
        return self.outputs

    @property
    def parent_nodes(self) -> list[Node]:
        return [x.node for x in self.keras_inputs if x.node is not None]

    def run(self, values: dict[int, Any]) -> list:
        """Call the layer on the real tensors held in `values` (by KerasTensor id)."""
        if self._simple:
            out = self.layer(values[id(self.call_inputs)])
        else:
            flat = [values[id(x)] if isinstance(x, KerasTensor) else x
                    for x in self._flat_arguments]
            inputs, args, kwargs = nest.pack_sequence_as(self._arguments, flat)
            out = self.layer(inputs, *args, **kwargs)
        return nest.flatten(out)
