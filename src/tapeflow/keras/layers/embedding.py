"""Embedding: a trainable lookup table from integer ids to dense vectors."""

from __future__ import annotations

from typing import Any

import tapeflow as tf
from tapeflow.keras import initializers, regularizers
from tapeflow.keras.engine.base_layer import Layer
from tapeflow.keras.layers.utils import layer_error


class Embedding(Layer):
    """Map ids in [0, input_dim) to rows of an [input_dim, output_dim] table.

    ``Embedding(1000, 64)`` holds 64,000 parameters; [batch, length] ids give
    [batch, length, 64]. The gradient reaches only the rows that were looked up.
    """

    def __init__(self, input_dim: int, output_dim: int, embeddings_initializer: Any = "uniform",
                 embeddings_regularizer: Any = None, activity_regularizer: Any = None,
                 embeddings_constraint: Any = None, mask_zero: bool = False,
                 input_length: int | None = None, **kwargs: Any):
        if "input_shape" not in kwargs and "batch_input_shape" not in kwargs:
            # as Keras: a Sequential starting with an Embedding is built at once ([batch, time])
            kwargs["input_shape"] = (input_length,)
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        if int(input_dim) <= 0 or int(output_dim) <= 0:
            raise layer_error(f"Embedding: input_dim and output_dim must be positive, got "
                             f"input_dim={input_dim}, output_dim={output_dim}")
        self.input_dim = int(input_dim)
        self.output_dim = int(output_dim)
        self.input_length = input_length
        self.mask_zero = bool(mask_zero)
        self.supports_masking = self.mask_zero
        self.embeddings_initializer = initializers.get(embeddings_initializer)
        self.embeddings_regularizer = regularizers.get(embeddings_regularizer)
        self.embeddings_constraint = embeddings_constraint

    def build(self, input_shape: Any) -> None:
        self.embeddings = self.add_weight("embeddings", shape=(self.input_dim, self.output_dim),
                                          initializer=self.embeddings_initializer,
                                          regularizer=self.embeddings_regularizer,
                                          constraint=self.embeddings_constraint)
        self.built = True

    def call(self, inputs: Any):
        if isinstance(inputs, tf.RaggedTensor):  # ragged ids give ragged vectors, as Keras
            return inputs.with_flat_values(self.call(inputs.flat_values))
        ids = tf.convert_to_tensor(inputs)
        if not ids.dtype.is_integer:
            ids = tf.cast(ids, tf.int32)
        return tf.nn.embedding_lookup(self.embeddings, ids)

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """With ``mask_zero``, id 0 is padding: the mask is ``inputs != 0``."""
        if not self.mask_zero:
            return None
        return tf.not_equal(inputs, 0)

    def compute_output_shape(self, input_shape: Any) -> tf.TensorShape:
        return tf.TensorShape(list(tf.TensorShape(input_shape).as_list()) + [self.output_dim])

    def get_config(self) -> dict:
        return {**super().get_config(), "input_dim": self.input_dim,
                "output_dim": self.output_dim, "mask_zero": self.mask_zero,
                "input_length": self.input_length}
