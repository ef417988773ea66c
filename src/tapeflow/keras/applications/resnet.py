"""``tf.keras.applications.resnet``: ResNet50/101/152 (He et al. 2015), and the builder the
V2 models share. Layer names follow Keras (``conv2_block1_1_conv`` ...), so its weight files
load."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tapeflow.keras.applications import imagenet_utils

BASE_URL = "https://storage.googleapis.com/tensorflow/keras-applications/resnet/"
_EPS = 1.001e-5


def build(stack_fn: Callable, preact: bool, use_bias: bool, model_name: str, include_top: bool,
          weights: Any, input_tensor: Any, input_shape: Any, pooling: Any, classes: int,
          classifier_activation: Any, files: tuple[str, str]) -> Any:
    """The ResNet skeleton: 7x7 stem, max pool, the stacks, then the head."""
    from tapeflow.keras import layers
    from tapeflow.keras.engine.training import Model

    imagenet_utils.validate_weights(weights, include_top, classes)
    input_shape = imagenet_utils.obtain_input_shape(input_shape, 224, 32, include_top, weights)
    img_input, inputs = imagenet_utils.model_input(input_tensor, input_shape)
    x = layers.ZeroPadding2D(padding=((3, 3), (3, 3)), name="conv1_pad")(img_input)
    x = layers.Conv2D(64, 7, strides=2, use_bias=use_bias, name="conv1_conv")(x)
    if not preact:
        x = layers.BatchNormalization(axis=3, epsilon=_EPS, name="conv1_bn")(x)
        x = layers.Activation("relu", name="conv1_relu")(x)
    x = layers.ZeroPadding2D(padding=((1, 1), (1, 1)), name="pool1_pad")(x)
    x = layers.MaxPooling2D(3, strides=2, name="pool1_pool")(x)
    x = stack_fn(x)
    if preact:
        x = layers.BatchNormalization(axis=3, epsilon=_EPS, name="post_bn")(x)
        x = layers.Activation("relu", name="post_relu")(x)
    x = imagenet_utils.head(x, include_top, pooling, classes, classifier_activation, weights)
    model = Model(inputs, x, name=model_name)
    imagenet_utils.load_weights(model, weights, include_top, files, BASE_URL)
    return model


def block1(x: Any, filters: int, kernel_size: int = 3, stride: int = 1,
           conv_shortcut: bool = True, name: str = "") -> Any:
    """A bottleneck residual block (post-activation)."""
    from tapeflow.keras import layers

    if conv_shortcut:
        shortcut = layers.Conv2D(4 * filters, 1, strides=stride, name=name + "_0_conv")(x)
        shortcut = layers.BatchNormalization(axis=3, epsilon=_EPS, name=name + "_0_bn")(shortcut)
    else:
        shortcut = x
    x = layers.Conv2D(filters, 1, strides=stride, name=name + "_1_conv")(x)
    x = layers.BatchNormalization(axis=3, epsilon=_EPS, name=name + "_1_bn")(x)
    x = layers.Activation("relu", name=name + "_1_relu")(x)
    x = layers.Conv2D(filters, kernel_size, padding="SAME", name=name + "_2_conv")(x)
    x = layers.BatchNormalization(axis=3, epsilon=_EPS, name=name + "_2_bn")(x)
    x = layers.Activation("relu", name=name + "_2_relu")(x)
    x = layers.Conv2D(4 * filters, 1, name=name + "_3_conv")(x)
    x = layers.BatchNormalization(axis=3, epsilon=_EPS, name=name + "_3_bn")(x)
    x = layers.Add(name=name + "_add")([shortcut, x])
    return layers.Activation("relu", name=name + "_out")(x)


def stack1(x: Any, filters: int, blocks: int, stride1: int = 2, name: str = "") -> Any:
    x = block1(x, filters, stride=stride1, name=name + "_block1")
    for i in range(2, blocks + 1):
        x = block1(x, filters, conv_shortcut=False, name=f"{name}_block{i}")
    return x


def stacks(stack: Callable, depths: tuple[int, ...], strides: tuple[int, ...]) -> Callable:
    """The four stages conv2..conv5 (64..512 filters) of `depths` blocks each."""

    def stack_fn(x: Any) -> Any:
        for i, (filters, blocks, stride) in enumerate(zip((64, 128, 256, 512), depths, strides)):
            x = stack(x, filters, blocks, stride1=stride, name=f"conv{i + 2}")
        return x

    return stack_fn


def _resnet(depths: tuple[int, ...], model_name: str, include_top: bool, weights: Any,
            input_tensor: Any, input_shape: Any, pooling: Any, classes: int,
            classifier_activation: Any) -> Any:
    return build(stacks(stack1, depths, (1, 2, 2, 2)), False, True, model_name, include_top,
                 weights, input_tensor, input_shape, pooling, classes, classifier_activation,
                 (f"{model_name}_weights_tf_dim_ordering_tf_kernels.h5",
                  f"{model_name}_weights_tf_dim_ordering_tf_kernels_notop.h5"))


def ResNet50(include_top: bool = True, weights: Any = "imagenet",  # noqa: N802
             input_tensor: Any = None, input_shape: Any = None, pooling: Any = None,
             classes: int = 1000, classifier_activation: Any = "softmax", **kwargs: Any) -> Any:
    """ResNet50 (25.6M parameters with the top)."""
    return _resnet((3, 4, 6, 3), "resnet50", include_top, weights, input_tensor, input_shape,
                   pooling, classes, classifier_activation)


def ResNet101(include_top: bool = True, weights: Any = "imagenet",  # noqa: N802
              input_tensor: Any = None, input_shape: Any = None, pooling: Any = None,
              classes: int = 1000, classifier_activation: Any = "softmax", **kwargs: Any) -> Any:
    """ResNet101 (44.7M parameters with the top)."""
    return _resnet((3, 4, 23, 3), "resnet101", include_top, weights, input_tensor, input_shape,
                   pooling, classes, classifier_activation)


def ResNet152(include_top: bool = True, weights: Any = "imagenet",  # noqa: N802
              input_tensor: Any = None, input_shape: Any = None, pooling: Any = None,
              classes: int = 1000, classifier_activation: Any = "softmax", **kwargs: Any) -> Any:
    """ResNet152 (60.4M parameters with the top)."""
    return _resnet((3, 8, 36, 3), "resnet152", include_top, weights, input_tensor, input_shape,
                   pooling, classes, classifier_activation)


def preprocess_input(x: Any, data_format: str | None = None) -> Any:
    """Caffe mode: RGB -> BGR and minus the ImageNet mean (no scaling)."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="caffe")


decode_predictions = imagenet_utils.decode_predictions
