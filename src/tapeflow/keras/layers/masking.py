"""Masking: mark padded time steps so the layers after it skip them."""

from __future__ import annotations

from typing import Any

import tapeflow as tf
from tapeflow.keras.engine.base_layer import Layer


class Masking(Layer):
    """Steps whose features all equal `mask_value` are masked out: they come out as zeros and
    the output carries a [batch, time] ``_keras_mask`` that recurrent layers, attention,
    pooling and the losses in ``fit`` honour."""

    def __init__(self, mask_value: float = 0.0, **kwargs: Any):
        super().__init__(**kwargs)
        self.mask_value = mask_value

    def _keep(self, inputs: Any) -> Any:
        return tf.reduce_any(tf.not_equal(inputs, self.mask_value), axis=-1)

    def call(self, inputs: Any):
        if _per_step(inputs):  # ragged steps: masked on the flat values, as Keras
            return inputs.with_flat_values(self.call(inputs.flat_values))
        x = tf.convert_to_tensor(inputs)
        return x * tf.cast(tf.expand_dims(self._keep(x), -1), x.dtype)

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        if _per_step(inputs):
            return inputs.with_flat_values(self._keep(inputs.flat_values))
        return self._keep(tf.convert_to_tensor(inputs))

    def get_config(self) -> dict:
        return {**super().get_config(), "mask_value": self.mask_value}


def _per_step(inputs: Any) -> bool:
    """A RaggedTensor whose steps have a feature axis (flat values [steps, features])."""
    return isinstance(inputs, tf.RaggedTensor) and inputs.flat_values.shape.rank >= 2
