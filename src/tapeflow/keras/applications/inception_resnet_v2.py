"""``tf.keras.applications.inception_resnet_v2``: InceptionResNetV2 (Szegedy et al. 2016):
Inception branches whose concatenation, projected back by a 1x1 convolution and scaled, is
added to the block's input (10 block35, 20 block17, 10 block8)."""

from __future__ import annotations

from typing import Any

from tapeflow.keras.applications import imagenet_utils
from tapeflow.keras.engine.base_layer import Layer

BASE_URL = ("https://storage.googleapis.com/tensorflow/keras-applications/"
            "inception_resnet_v2/")
# block type -> branches, each a list of (filters, kernel size) convolutions
_BLOCKS = {
    "block35": (((32, 1),), ((32, 1), (32, 3)), ((32, 1), (48, 3), (64, 3))),
    "block17": (((192, 1),), ((128, 1), (160, (1, 7)), (192, (7, 1)))),
    "block8": (((192, 1),), ((192, 1), (224, (1, 3)), (256, (3, 1)))),
}


class CustomScaleLayer(Layer):
    """inputs[0] + inputs[1] * scale: the scaled residual (Keras's layer, same name)."""

    def __init__(self, scale: float, **kwargs: Any):
        super().__init__(**kwargs)
        self.scale = scale

    def call(self, inputs: Any) -> Any:
        return inputs[0] + inputs[1] * self.scale

    def get_config(self) -> dict:
        return {**super().get_config(), "scale": self.scale}


def conv2d_bn(x: Any, filters: int, kernel_size: Any, strides: int = 1, padding: str = "same",
              activation: Any = "relu", use_bias: bool = False, name: str | None = None) -> Any:
    """Convolution, then (without a bias) batch norm without scale, then the activation."""
    from tapeflow.keras import layers

    x = layers.Conv2D(filters, kernel_size, strides=strides, padding=padding,
                      use_bias=use_bias, name=name)(x)
    if not use_bias:
        x = layers.BatchNormalization(axis=3, scale=False,
                                      name=None if name is None else name + "_bn")(x)
    if activation is not None:
        x = layers.Activation(activation, name=None if name is None else name + "_ac")(x)
    return x


def inception_resnet_block(x: Any, scale: float, block_type: str, block_idx: int,
                           activation: Any = "relu") -> Any:
    from tapeflow.keras import layers

    if block_type not in _BLOCKS:
        raise ValueError(f'Unknown Inception-ResNet block type. Expects "block35", "block17" '
                         f'or "block8", but got: {block_type}')
    branches = []
    for convs in _BLOCKS[block_type]:
        branch = x
        for filters, kernel in convs:
            branch = conv2d_bn(branch, filters, kernel)
        branches.append(branch)
    name = f"{block_type}_{block_idx}"
    mixed = layers.Concatenate(axis=3, name=name + "_mixed")(branches)
    up = conv2d_bn(mixed, x.shape[3], 1, activation=None, use_bias=True, name=name + "_conv")
    x = CustomScaleLayer(scale)([x, up])
    if activation is not None:
        x = layers.Activation(activation, name=name + "_ac")(x)
    return x


def _reduction(x: Any, branches: tuple, name: str) -> Any:
    """Strided branches (each a list of (filters, kernel, stride)) and a max pool, joined."""
    from tapeflow.keras import layers

    outs = []
    for convs in branches:
        branch = x
        for filters, kernel, stride in convs:
            branch = conv2d_bn(branch, filters, kernel, strides=stride,
                               padding="valid" if stride == 2 else "same")
        outs.append(branch)
    outs.append(layers.MaxPooling2D(3, strides=2, padding="valid")(x))
    return layers.Concatenate(axis=3, name=name)(outs)


def InceptionResNetV2(include_top: bool = True, weights: Any = "imagenet",  # noqa: N802
                      input_tensor: Any = None, input_shape: Any = None, pooling: Any = None,
                      classes: int = 1000, classifier_activation: Any = "softmax",
                      **kwargs: Any) -> Any:
    """InceptionResNetV2 (55.9M parameters with the top; at least 75x75)."""
    from tapeflow.keras import layers
    from tapeflow.keras.engine.training import Model

    if kwargs:
        raise ValueError(f"Unknown argument(s): {kwargs}")
    imagenet_utils.validate_weights(weights, include_top, classes)
    input_shape = imagenet_utils.obtain_input_shape(input_shape, 299, 75, include_top, weights)
    img_input, inputs = imagenet_utils.model_input(input_tensor, input_shape)
    x = conv2d_bn(img_input, 32, 3, strides=2, padding="valid")
    x = conv2d_bn(x, 32, 3, padding="valid")
    x = conv2d_bn(x, 64, 3)
    x = layers.MaxPooling2D(3, strides=2)(x)
    x = conv2d_bn(x, 80, 1, padding="valid")
    x = conv2d_bn(x, 192, 3, padding="valid")
    x = layers.MaxPooling2D(3, strides=2)(x)
    branch_0 = conv2d_bn(x, 96, 1)
    branch_1 = conv2d_bn(conv2d_bn(x, 48, 1), 64, 5)
    branch_2 = conv2d_bn(conv2d_bn(conv2d_bn(x, 64, 1), 96, 3), 96, 3)
    branch_pool = conv2d_bn(layers.AveragePooling2D(3, strides=1, padding="same")(x), 64, 1)
    x = layers.Concatenate(axis=3, name="mixed_5b")([branch_0, branch_1, branch_2,
                                                     branch_pool])
    for block_idx in range(1, 11):
        x = inception_resnet_block(x, scale=0.17, block_type="block35", block_idx=block_idx)
    x = _reduction(x, (((384, 3, 2),), ((256, 1, 1), (256, 3, 1), (384, 3, 2))), "mixed_6a")
    for block_idx in range(1, 21):
        x = inception_resnet_block(x, scale=0.1, block_type="block17", block_idx=block_idx)
    x = _reduction(x, (((256, 1, 1), (384, 3, 2)), ((256, 1, 1), (288, 3, 2)),
                       ((256, 1, 1), (288, 3, 1), (320, 3, 2))), "mixed_7a")
    for block_idx in range(1, 10):
        x = inception_resnet_block(x, scale=0.2, block_type="block8", block_idx=block_idx)
    x = inception_resnet_block(x, scale=1.0, activation=None, block_type="block8",
                               block_idx=10)
    x = conv2d_bn(x, 1536, 1, name="conv_7b")
    x = imagenet_utils.head(x, include_top, pooling, classes, classifier_activation, weights,
                            names=("avg_pool", None) if include_top else (None, None))
    model = Model(inputs, x, name="inception_resnet_v2")
    imagenet_utils.load_weights(
        model, weights, include_top,
        ("inception_resnet_v2_weights_tf_dim_ordering_tf_kernels.h5",
         "inception_resnet_v2_weights_tf_dim_ordering_tf_kernels_notop.h5"), BASE_URL)
    return model


def preprocess_input(x: Any, data_format: str | None = None) -> Any:
    """tf mode: pixels scaled to [-1, 1]."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="tf")


decode_predictions = imagenet_utils.decode_predictions
