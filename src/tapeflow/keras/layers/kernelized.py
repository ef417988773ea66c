"""``tf.keras.layers.experimental.RandomFourierFeatures`` (Rahimi & Recht 2007): maps inputs
to ``cos(x @ (W / scale) + b)`` with a fixed random W and b, so that dot products of the
outputs (times 2 / output_dim) approximate a shift-invariant kernel: Gaussian (W ~ N(0, 1))
``exp(-|x - y|^2 / (2 scale^2))`` or Laplacian (W ~ Cauchy) ``exp(-|x - y|_1 / scale)``.

As tf-keras 2.21: the layer is not trainable by default; when it is, only ``kernel_scale``
learns (kept non-negative); the Laplacian kernel's Cauchy samples come from NumPy's global
generator, the Gaussian's from the initializer.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import tapeflow as tf
from tapeflow.keras import initializers
from tapeflow.keras.engine.base_layer import Layer
from tapeflow.keras.engine.input_spec import InputSpec

_KERNELS = ("gaussian", "laplacian")


class RandomFourierFeatures(Layer):
    """Random features of an RBF kernel: [batch, d] -> [batch, output_dim] in [-1, 1]."""

    def __init__(self, output_dim: int, kernel_initializer: Any = "gaussian",
                 scale: float | None = None, trainable: bool = False,
                 name: str | None = None, **kwargs: Any):
        if output_dim <= 0:
            raise ValueError(f"`output_dim` should be a positive integer. Received: "
                             f"{output_dim}")
        if isinstance(kernel_initializer, str) and kernel_initializer.lower() not in _KERNELS:
            raise ValueError(f"Unsupported `kernel_initializer`: {kernel_initializer} Expected "
                             f"one of: {list(_KERNELS)}")
        if scale is not None and scale <= 0.0:
            raise ValueError(f"When provided, `scale` should be a positive float. Received: "
                             f"{scale}")
        super().__init__(trainable=trainable, name=name, **kwargs)
        self.output_dim = output_dim
        self.kernel_initializer = kernel_initializer
        self.scale = scale

    def build(self, input_shape: Any) -> None:
        shape = tf.TensorShape(input_shape)
        if shape.rank != 2:
            raise ValueError(f"The rank of the input tensor should be 2. Received input with "
                             f"rank {shape.rank} instead. Full input shape received: {shape}")
        if shape[1] is None:
            raise ValueError("The last dimension of the input tensor should be defined. Found "
                             f"`None`. Full input shape received: {shape}")
        input_dim = int(shape[1])
        self.input_spec = InputSpec(ndim=2, axes={1: input_dim})
        self.unscaled_kernel = self.add_weight(
            "unscaled_kernel", shape=(input_dim, self.output_dim), dtype="float32",
            initializer=_features_initializer(self.kernel_initializer,
                                              (input_dim, self.output_dim)),
            trainable=False)
        self.bias = self.add_weight("bias", shape=(self.output_dim,), dtype="float32",
                                    initializer=initializers.RandomUniform(0.0, 2 * np.pi),
                                    trainable=False)
        if self.scale is None:
            gaussian = isinstance(self.kernel_initializer, str) and \
                self.kernel_initializer.lower() == "gaussian"
            self.scale = math.sqrt(input_dim / 2.0) if gaussian else 1.0
        self.kernel_scale = self.add_weight(
            "kernel_scale", shape=(1,), dtype="float32",
            initializer=initializers.Constant(self.scale), trainable=True,
            constraint="non_neg")
        self.built = True

    def call(self, inputs: Any) -> Any:
        x = tf.cast(tf.convert_to_tensor(inputs), tf.float32)
        kernel = (1.0 / self.kernel_scale) * self.unscaled_kernel
        return tf.cos(tf.nn.bias_add(tf.matmul(x, kernel), self.bias))

    def compute_output_shape(self, input_shape: Any) -> tf.TensorShape:
        shape = tf.TensorShape(input_shape)
        if shape.rank != 2 or shape[-1] is None:
            raise ValueError("The last dimension of the input tensor should be defined. Found "
                             f"`None`. Full input shape received: {shape}")
        return tf.TensorShape([shape[0], self.output_dim])

    def get_config(self) -> dict:
        kernel_initializer = self.kernel_initializer
        if not isinstance(kernel_initializer, str):
            kernel_initializer = initializers.serialize(kernel_initializer)
        return {**super().get_config(), "output_dim": self.output_dim,
                "kernel_initializer": kernel_initializer, "scale": self.scale}


def _features_initializer(initializer: Any, shape: tuple) -> Any:
    if not isinstance(initializer, str):
        return initializer
    if initializer.lower() == "gaussian":
        return initializers.RandomNormal(stddev=1.0)
    # Cauchy samples (the Laplacian kernel's spectrum), drawn now as tf-keras draws them
    samples = np.tan(np.pi * (np.random.uniform(0.0, 1.0, size=shape) - 0.5))

    def cauchy(shape: Any = None, dtype: Any = None, **_: Any) -> Any:
        return tf.constant(samples, dtype=dtype or tf.float32)

    return cauchy
