"""``tf.keras.applications.resnet_v2``: ResNet50V2/101V2/152V2 (pre-activation blocks,
He et al. 2016)."""

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


def _resnet_v2(depths: tuple[int, ...], model_name: str, include_top: bool, weights: Any,
               input_tensor: Any, input_shape: Any, pooling: Any, classes: int,
               classifier_activation: Any) -> Any:
    return resnet.build(resnet.stacks(stack2, depths, (2, 2, 2, 1)), True, True, model_name,
                        include_top, weights, input_tensor, input_shape, pooling, classes,
                        classifier_activation,
                        (f"{model_name}_weights_tf_dim_ordering_tf_kernels.h5",
                         f"{model_name}_weights_tf_dim_ordering_tf_kernels_notop.h5"))


def ResNet50V2(include_top: bool = True, weights: Any = "imagenet",  # noqa: N802
               input_tensor: Any = None, input_shape: Any = None, pooling: Any = None,
               classes: int = 1000, classifier_activation: Any = "softmax") -> Any:
    """ResNet50V2 (25.6M parameters with the top)."""
    return _resnet_v2((3, 4, 6, 3), "resnet50v2", include_top, weights, input_tensor,
                      input_shape, pooling, classes, classifier_activation)


def ResNet101V2(include_top: bool = True, weights: Any = "imagenet",  # noqa: N802
                input_tensor: Any = None, input_shape: Any = None, pooling: Any = None,
                classes: int = 1000, classifier_activation: Any = "softmax") -> Any:
    """ResNet101V2 (44.7M parameters with the top)."""
    return _resnet_v2((3, 4, 23, 3), "resnet101v2", include_top, weights, input_tensor,
                      input_shape, pooling, classes, classifier_activation)


def ResNet152V2(include_top: bool = True, weights: Any = "imagenet",  # noqa: N802
                input_tensor: Any = None, input_shape: Any = None, pooling: Any = None,
                classes: int = 1000, classifier_activation: Any = "softmax") -> Any:
    """ResNet152V2 (60.4M parameters with the top)."""
    return _resnet_v2((3, 8, 36, 3), "resnet152v2", include_top, weights, input_tensor,
                      input_shape, pooling, classes, classifier_activation)


def preprocess_input(x: Any, data_format: str | None = None) -> Any:
    """tf mode: pixels scaled to [-1, 1]."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="tf")


decode_predictions = imagenet_utils.decode_predictions
