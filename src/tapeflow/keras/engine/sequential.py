"""``tf.keras.Sequential``: a plain stack of layers, each feeding the next.

When the input shape is known (an ``input_shape=`` on the first layer, an ``Input``, or the
first call), the stack is also run once symbolically so every layer is built and knows its
output shape for ``summary()``; calls themselves go straight through the layers.
"""

from __future__ import annotations

from typing import Any

from tapeflow.framework.shapes import as_shape
from tapeflow.keras.engine.base_layer import Layer
from tapeflow.keras.engine.input_layer import Input, InputLayer
from tapeflow.keras.engine.keras_tensor import KerasTensor
from tapeflow.keras.engine.training import Model


class Sequential(Model):
    """Layers applied one after the other: ``Sequential([Dense(64), Dense(10)])``."""

    def __init__(self, layers: list | None = None, name: str | None = None, **kwargs: Any):
        super().__init__(name=name, **kwargs)
        self._layers: list[Layer] = []
        self._input: KerasTensor | None = None
        self._output: KerasTensor | None = None
        for layer in layers or []:
            self.add(layer)

    @property
    def layers(self) -> list:
        """The distinct layers, in order: one added twice (weights shared) is listed once."""
        return list(dict.fromkeys(self._layers))

    def add(self, layer: Any) -> None:
        """Append a layer (or an ``Input``); builds it now when the input shape is known."""
        if isinstance(layer, KerasTensor):
            layer = layer._keras_history[0]
        if not isinstance(layer, Layer):
            raise TypeError("The added layer must be an instance of class Layer. Received: "
                            f"layer={layer!r} of type {type(layer)}.")
        if any(existing.name == layer.name and existing is not layer
               for existing in self._layers):
            raise ValueError(f'All layers added to a Sequential model should have unique names. '
                             f'Name "{layer.name}" is already the name of a layer in this model. '
                             'Update the `name` argument to pass a unique name.')
        if isinstance(layer, InputLayer):
            self._input = self._output = layer._inbound_nodes[0].outputs
            return
        if self._input is None and not self._layers and layer._batch_input_shape is not None:
            self._input = self._output = Input(batch_shape=layer._batch_input_shape,
                                               dtype=layer.dtype, name=f"{layer.name}_input")
        self._layers.append(layer)
        if self._output is not None:
            self._output = layer(self._output)
            self.built = True

    def pop(self) -> None:
        """Remove the last layer."""
        if not self._layers:
            raise TypeError("There are no layers in the model.")
        self._layers.pop()
        if self._input is not None:
            self._output = self._input
            for layer in self._layers:
                self._output = layer(self._output)

    def _maybe_build(self, inputs: Any) -> None:
        if not self.built and isinstance(inputs, dict):
            # Keras 2's deferred mode for dict inputs (DenseFeatures first): no Input network;
            # each layer builds on its first call
            self.built = True
        elif not self.built:  # the first call's batch size is not part of the model
            self.build((None,) + tuple(inputs.shape.as_list()[1:]))

    def build(self, input_shape: Any = None) -> None:
        """Build every layer for `input_shape` (batch dim included).

        Weights are named after the layers alone (``dense/kernel:0``), as when the input shape
        is given up front.
        """
        if self._input is not None:
            self.built = True
            return
        if input_shape is None:
            raise ValueError("You must provide an `input_shape` argument.")
        self._input = self._output = Input(batch_shape=tuple(as_shape(input_shape).as_list()))
        for layer in self._layers:
            self._output = layer(self._output)
        self.built = True

    def call(self, inputs: Any, training: Any = None, mask: Any = None) -> Any:
        x = inputs
        for layer in self._layers:
            x = layer(x)
        return x

    @property
    def input_shape(self) -> Any:
        if self._input is None:
            raise AttributeError(f"Sequential model {self.name!r} has no input shape yet.")
        return self._input.shape.as_tuple()

    @property
    def output_shape(self) -> Any:
        if self._output is None:
            raise AttributeError(f"Sequential model {self.name!r} has not been built yet.")
        return self._output.shape.as_tuple()

    @property
    def output_names(self) -> list[str] | None:
        """The last layer's name once the model is built (what a dict `y` is keyed by)."""
        return [self._layers[-1].name] if self._output is not None and self._layers else None

    @property
    def inputs(self) -> list:
        return [self._input] if self._input is not None else []

    @property
    def outputs(self) -> list:
        return [self._output] if self._output is not None else []

    def get_config(self) -> dict:
        return {"name": self.name,
                "layers": [{"class_name": type(layer).__name__, "config": layer.get_config()}
                           for layer in self._layers]}
