"""``tf.keras.applications.resnet_v2``: ResNet50V2 (pre-activation blocks, He et al. 2016)."""

from __future__ import annotations

from typing import Any

from tapeflow.keras.applications import imagenet_utils, resnet

_EPS = 1.001e-5


def block2(x: Any, filters: int, kernel_size: int = 3, stride: int = 1,
           conv_shortcut: bool = False, name: str = "") -> Any:
    """A pre-activation bottleneck block; the stride is on its 3x3 convolution."""
    from tapeflow.keras import layers

    preact = layers.BatchNormalization(axis=3, epsilon=_EPS, name=name + "_preact_bn")(x)
    preact = layers.Activation("relu", name=name + "_preact_relu")(preact)
    if conv_shortcut:
        shortcut = layers.Conv2D(4 * filters, 1, strides=stride, name=name + "_0_conv")(preact)
    else:
        shortcut = layers.MaxPooling2D(1, strides=stride)(x) if stride > 1 else x
    x = layers.Conv2D(filters, 1, strides=1, use_bias=False, name=name + "_1_conv")(preact)
    x = layers.BatchNormalization(axis=3, epsilon=_EPS, name=name + "_1_bn")(x)
    x = layers.Activation("relu", name=name + "_1_relu")(x)
    x = layers.ZeroPadding2D(padding=((1, 1), (1, 1)), name=name + "_2_pad")(x)
    x = layers.Conv2D(filters, kernel_size, strides=stride, use_bias=False,
                      name=name + "_2_conv")(x)
    x = layers.BatchNormalization(axis=3, epsilon=_EPS, name=name + "_2_bn")(x)
    x = layers.Activation("relu", name=name + "_2_relu")(x)
    x = layers.Conv2D(4 * filters, 1, name=name + "_3_conv")(x)
    return layers.Add(name=name + "_out")([shortcut, x])


def stack2(x: Any, filters: int, blocks: int, stride1: int = 2, name: str = "") -> Any:
    x = block2(x, filters, conv_shortcut=True, name=name + "_block1")
    for i in range(2, blocks):
        x = block2(x, filters, name=f"{name}_block{i}")
    return block2(x, filters, stride=stride1, name=f"{name}_block{blocks}")


def ResNet50V2(include_top: bool = True, weights: Any = "imagenet",  # noqa: N802
               input_tensor: Any = None, input_shape: Any = None, pooling: Any = None,
               classes: int = 1000, classifier_activation: Any = "softmax") -> Any:
    """ResNet50V2 (25.6M parameters with the top)."""

    def stack_fn(x: Any) -> Any:
        x = stack2(x, 64, 3, name="conv2")
        x = stack2(x, 128, 4, name="conv3")
        x = stack2(x, 256, 6, name="conv4")
        return stack2(x, 512, 3, stride1=1, name="conv5")

    return resnet.build(stack_fn, True, True, "resnet50v2", include_top, weights, input_tensor,
                        input_shape, pooling, classes, classifier_activation,
                        ("resnet50v2_weights_tf_dim_ordering_tf_kernels.h5",
                         "resnet50v2_weights_tf_dim_ordering_tf_kernels_notop.h5"))


def preprocess_input(x: Any, data_format: str | None = None) -> Any:
    """tf mode: pixels scaled to [-1, 1]."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="tf")


decode_predictions = imagenet_utils.decode_predictions
