"""The kernel-and-bias pair that Dense, the convolutions and EinsumDense share: their six
weight arguments, resolved the same way, and the two weights made under Keras's names."""

from __future__ import annotations

from typing import Any

from tapeflow.keras import constraints, initializers, regularizers

_WEIGHT_ARGUMENTS = (("kernel_initializer", initializers), ("bias_initializer", initializers),
                     ("kernel_regularizer", regularizers), ("bias_regularizer", regularizers),
                     ("activity_regularizer", regularizers),
                     ("kernel_constraint", constraints), ("bias_constraint", constraints))


def serialize_argument(value: Any, module: Any) -> Any:
    """Keras's config form of a built-in initializer, regularizer or constraint; None and a
    user's own objects stay as they are (the model saver serializes those)."""
    if value is None or type(value).__module__ != module.__name__:
        return value
    return module.serialize(value)


class KernelAndBias:
    """Mixin for a ``Layer`` with a ``kernel`` and an optional ``bias``."""

    def _weight_arguments(self, kernel_initializer: Any, bias_initializer: Any,
                          kernel_regularizer: Any, bias_regularizer: Any,
                          kernel_constraint: Any, bias_constraint: Any) -> None:
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.bias_constraint = constraints.get(bias_constraint)

    def get_config(self) -> dict:
        """The layer's config with its weight arguments, as tf-keras writes them."""
        config = super().get_config()
        for name, module in _WEIGHT_ARGUMENTS:
            config[name] = serialize_argument(getattr(self, name), module)
        return config

    def _add_kernel_and_bias(self, kernel_shape: Any, bias_shape: Any | None) -> None:
        """``self.kernel``, and ``self.bias`` (None when `bias_shape` is None)."""
        self.kernel = self.add_weight("kernel", shape=kernel_shape,
                                      initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        self.bias = None
        if bias_shape is not None:
            self.bias = self.add_weight("bias", shape=bias_shape,
                                        initializer=self.bias_initializer,
                                        regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint)
