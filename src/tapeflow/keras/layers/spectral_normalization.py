"""``tf.keras.layers.SpectralNormalization`` (Miyato et al. 2018): a ``Wrapper`` that divides
its layer's kernel (or embeddings) by the kernel's largest singular value, estimated by power
iteration on a persistent vector ``vector_u``, before each training call (GAN discriminators).

As tf-keras 2.21: the update runs only with ``training=True`` (the default is False), writes
the normalised kernel back into the wrapped layer's variable, and leaves an all-zero kernel
alone; the singular vectors carry no gradient.
"""

from __future__ import annotations

from typing import Any

import tapeflow as tf
from tapeflow.keras import initializers
from tapeflow.keras.engine.input_spec import InputSpec
from tapeflow.keras.layers.wrappers import Wrapper


class SpectralNormalization(Wrapper):
    """Wrap a layer with a ``kernel`` or ``embeddings`` (Dense, Conv2D, Embedding...) so that
    training calls first rescale it to spectral norm ~1 (`power_iterations` steps a call)."""

    def __init__(self, layer: Any, power_iterations: int = 1, **kwargs: Any):
        super().__init__(layer, **kwargs)
        if power_iterations <= 0:
            raise ValueError("`power_iterations` should be greater than zero. Received: "
                             f"`power_iterations={power_iterations}`")
        self.power_iterations = power_iterations

    @property
    def kernel(self) -> Any:
        """The wrapped layer's kernel (or embeddings) variable."""
        if hasattr(self.layer, "kernel"):
            return self.layer.kernel
        if hasattr(self.layer, "embeddings"):
            return self.layer.embeddings
        raise ValueError(f"{type(self.layer).__name__} object has no attribute 'kernel' nor "
                         "'embeddings'")

    def build(self, input_shape: Any) -> None:
        super().build(input_shape)
        shape = tf.TensorShape(input_shape)
        self.input_spec = InputSpec(shape=[None] + shape.as_list()[1:])
        kernel = self.kernel
        self.kernel_shape = kernel.shape.as_list()
        self.vector_u = self.add_weight(
            name="vector_u", shape=(1, self.kernel_shape[-1]),
            initializer=initializers.TruncatedNormal(stddev=0.02), trainable=False,
            dtype=kernel.dtype)

    def call(self, inputs: Any, training: Any = False) -> Any:
        if training:
            self._update_weights()
        return self.layer(inputs)

    def _update_weights(self) -> None:
        kernel = self.kernel
        normalized, vector_u = self.normalize_weights()
        # an all-zero kernel has no direction to estimate: keep it and u (tf-keras's cond)
        zero = tf.reduce_all(tf.equal(kernel, 0))
        kernel.assign(tf.where(zero, kernel, normalized))
        self.vector_u.assign(tf.where(zero, self.vector_u, vector_u))

    def normalize_weights(self) -> tuple[Any, Any]:
        """(kernel / sigma, the new u): sigma = v W u^T after `power_iterations` steps of
        v = normalize(u W^T), u = normalize(v W), W the kernel as [-1, last dim]."""
        weights = tf.reshape(self.kernel, [-1, self.kernel_shape[-1]])
        vector_u = tf.convert_to_tensor(self.vector_u)
        vector_v = vector_u
        for _ in range(self.power_iterations):
            vector_v = tf.math.l2_normalize(tf.matmul(vector_u, weights, transpose_b=True))
            vector_u = tf.math.l2_normalize(tf.matmul(vector_v, weights))
        vector_u = tf.stop_gradient(vector_u)
        vector_v = tf.stop_gradient(vector_v)
        sigma = tf.matmul(tf.matmul(vector_v, weights), vector_u, transpose_b=True)
        return tf.reshape(weights / sigma, self.kernel_shape), vector_u

    def compute_output_shape(self, input_shape: Any) -> tf.TensorShape:
        return tf.TensorShape(self.layer.compute_output_shape(input_shape).as_list())

    def get_config(self) -> dict:
        return {**super().get_config(), "power_iterations": self.power_iterations}
