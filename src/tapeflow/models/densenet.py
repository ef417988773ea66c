"""DenseNet (seed 001): dense blocks of BN-ReLU-Conv3x3 whose outputs are concatenated.

``DenseNet`` builds it with the functional API; ``DenseNetSequential`` (the seed's bonus) builds
the same network with ``Sequential`` and a custom ``DenseBlock`` layer. Both have the same
weights, so the same parameter count: 129,930 for the default 32x32x3 configuration without
the head normalization (``head_norm=False``), as the issue specifies.
"""

from __future__ import annotations

from typing import Any

import tapeflow as tf
from tapeflow import keras
from tapeflow.keras import layers


def _block_channels(initial_filters: int, num_blocks: int, layers_per_block: int,
                    growth_rate: int) -> list[int]:
    """Channels after each dense block (transitions keep the channel count)."""
    out, channels = [], initial_filters
    for _ in range(num_blocks):
        channels += layers_per_block * growth_rate
        out.append(channels)
    return out


def _check(num_blocks: int, layers_per_block: int, growth_rate: int) -> None:
    for name, value in (("num_blocks", num_blocks), ("layers_per_block", layers_per_block),
                        ("growth_rate", growth_rate)):
        if int(value) < 1:
            raise ValueError(f"DenseNet: `{name}` must be a positive integer, got {value}")


def DenseNet(input_shape: Any = (32, 32, 3), num_classes: int = 10,  # noqa: N802
             growth_rate: int = 12, num_blocks: int = 3, layers_per_block: int = 4,
             initial_filters: int = 16, head_norm: bool = True, bn_momentum: float = 0.99,
             stem_strides: int = 1, name: str = "densenet") -> keras.Model:
    """Functional DenseNet returning logits.

    Conv3x3(initial_filters) -> num_blocks x [layers_per_block x (BN-ReLU-Conv3x3(growth_rate),
    concat)] with BN-ReLU-Conv1x1-AvgPool2 transitions between blocks -> [BN-ReLU] ->
    GlobalAveragePooling -> Dense(num_classes). A lower `bn_momentum` than Keras's 0.99 lets
    the moving statistics (used at inference) catch up within a few hundred steps;
    ``stem_strides=2`` halves the resolution the blocks run at (a quarter of the compute).
    """
    _check(num_blocks, layers_per_block, growth_rate)

    def norm() -> layers.BatchNormalization:
        return layers.BatchNormalization(momentum=bn_momentum)

    inputs = keras.Input(shape=tuple(input_shape))
    x = layers.Conv2D(initial_filters, 3, strides=stem_strides, padding="same")(inputs)
    channels = _block_channels(initial_filters, num_blocks, layers_per_block, growth_rate)
    for b in range(num_blocks):
        for _ in range(layers_per_block):
            y = norm()(x)
            y = layers.Activation("relu")(y)
            y = layers.Conv2D(growth_rate, 3, padding="same")(y)
            x = layers.Concatenate()([x, y])
        if b < num_blocks - 1:
            x = norm()(x)
            x = layers.Activation("relu")(x)
            x = layers.Conv2D(channels[b], 1)(x)
            x = layers.AveragePooling2D(2)(x)
    if head_norm:
        x = norm()(x)
        x = layers.Activation("relu")(x)
    x = layers.GlobalAveragePooling2D()(x)
    outputs = layers.Dense(num_classes)(x)
    return keras.Model(inputs, outputs, name=name)


@keras.utils.register_keras_serializable(package="tapeflow")  # .keras files load by name
class DenseBlock(layers.Layer):
    """`num_layers` x [BN-ReLU-Conv3x3(growth_rate)], each output concatenated to its input."""

    def __init__(self, num_layers: int, growth_rate: int, **kwargs: Any):
        super().__init__(**kwargs)
        self.num_layers = int(num_layers)
        self.growth_rate = int(growth_rate)
        # (norm, conv) pairs: weights come out in the functional DenseNet's order
        self.pairs = [(layers.BatchNormalization(),
                       layers.Conv2D(self.growth_rate, 3, padding="same"))
                      for _ in range(self.num_layers)]

    def call(self, inputs: Any, training: Any = None):
        x = inputs
        for norm, conv in self.pairs:
            y = conv(tf.nn.relu(norm(x, training=training)))
            x = tf.concat([x, y], axis=-1)
        return x

    def get_config(self) -> dict:
        return {**super().get_config(), "num_layers": self.num_layers,
                "growth_rate": self.growth_rate}


def DenseNetSequential(input_shape: Any = (32, 32, 3), num_classes: int = 10,  # noqa: N802
                       growth_rate: int = 12, num_blocks: int = 3, layers_per_block: int = 4,
                       initial_filters: int = 16, head_norm: bool = True,
                       name: str = "densenet_sequential") -> keras.Sequential:
    """The same network as `DenseNet`, as a ``Sequential`` stack with ``DenseBlock`` layers."""
    _check(num_blocks, layers_per_block, growth_rate)
    channels = _block_channels(initial_filters, num_blocks, layers_per_block, growth_rate)
    stack: list = [layers.Conv2D(initial_filters, 3, padding="same",
                                 input_shape=tuple(input_shape))]
    for b in range(num_blocks):
        stack.append(DenseBlock(layers_per_block, growth_rate))
        if b < num_blocks - 1:
            stack += [layers.BatchNormalization(), layers.Activation("relu"),
                      layers.Conv2D(channels[b], 1), layers.AveragePooling2D(2)]
    if head_norm:
        stack += [layers.BatchNormalization(), layers.Activation("relu")]
    stack += [layers.GlobalAveragePooling2D(), layers.Dense(num_classes)]
    return keras.Sequential(stack, name=name)
