"""``tf.keras.applications.xception``: Xception (Chollet 2017): depthwise-separable
convolutions with residual connections; inputs at least 71x71."""

from __future__ import annotations

from typing import Any

from tapeflow.keras.applications import imagenet_utils

BASE_URL = "https://storage.googleapis.com/tensorflow/keras-applications/xception/"


def _sep(x: Any, filters: int, name: str, act_name: str | None) -> Any:
    """(ReLU ->) SeparableConv 3x3 -> BN, with Keras's names."""
    from tapeflow.keras import layers

    if act_name is not None:
        x = layers.Activation("relu", name=act_name)(x)
    x = layers.SeparableConv2D(filters, (3, 3), padding="same", use_bias=False, name=name)(x)
    return layers.BatchNormalization(axis=-1, name=name + "_bn")(x)


def _residual(x: Any, filters: int) -> Any:
    from tapeflow.keras import layers

    r = layers.Conv2D(filters, (1, 1), strides=(2, 2), padding="same", use_bias=False)(x)
    return layers.BatchNormalization(axis=-1)(r)


def _pool(x: Any, name: str) -> Any:
    from tapeflow.keras import layers

    return layers.MaxPooling2D((3, 3), strides=(2, 2), padding="same", name=name)(x)


def Xception(include_top: bool = True, weights: Any = "imagenet",  # noqa: N802
             input_tensor: Any = None, input_shape: Any = None, pooling: Any = None,
             classes: int = 1000, classifier_activation: Any = "softmax") -> Any:
    """Xception (22.9M parameters with the top)."""
    from tapeflow.keras import layers
    from tapeflow.keras.engine.training import Model

    imagenet_utils.validate_weights(weights, include_top, classes)
    input_shape = imagenet_utils.obtain_input_shape(input_shape, 299, 71, include_top, weights)
    img_input, inputs = imagenet_utils.model_input(input_tensor, input_shape)
    x = layers.Conv2D(32, (3, 3), strides=(2, 2), use_bias=False, name="block1_conv1")(img_input)
    x = layers.BatchNormalization(axis=-1, name="block1_conv1_bn")(x)
    x = layers.Activation("relu", name="block1_conv1_act")(x)
    x = layers.Conv2D(64, (3, 3), use_bias=False, name="block1_conv2")(x)
    x = layers.BatchNormalization(axis=-1, name="block1_conv2_bn")(x)
    x = layers.Activation("relu", name="block1_conv2_act")(x)

    residual = _residual(x, 128)
    x = _sep(x, 128, "block2_sepconv1", None)
    x = _sep(x, 128, "block2_sepconv2", "block2_sepconv2_act")
    x = layers.add([_pool(x, "block2_pool"), residual])
    for block, filters in ((3, 256), (4, 728)):
        residual = _residual(x, filters)
        x = _sep(x, filters, f"block{block}_sepconv1", f"block{block}_sepconv1_act")
        x = _sep(x, filters, f"block{block}_sepconv2", f"block{block}_sepconv2_act")
        x = layers.add([_pool(x, f"block{block}_pool"), residual])
    for i in range(8):
        residual = x
        prefix = f"block{i + 5}"
        for j in (1, 2, 3):
            x = _sep(x, 728, f"{prefix}_sepconv{j}", f"{prefix}_sepconv{j}_act")
        x = layers.add([x, residual])

    residual = _residual(x, 1024)
    x = _sep(x, 728, "block13_sepconv1", "block13_sepconv1_act")
    x = _sep(x, 1024, "block13_sepconv2", "block13_sepconv2_act")
    x = layers.add([_pool(x, "block13_pool"), residual])

    x = _sep(x, 1536, "block14_sepconv1", None)
    x = layers.Activation("relu", name="block14_sepconv1_act")(x)
    x = _sep(x, 2048, "block14_sepconv2", None)
    x = layers.Activation("relu", name="block14_sepconv2_act")(x)
    x = imagenet_utils.head(x, include_top, pooling, classes, classifier_activation, weights,
                            names=("avg_pool", None) if include_top else (None, None))
    model = Model(inputs, x, name="xception")
    imagenet_utils.load_weights(model, weights, include_top,
                                ("xception_weights_tf_dim_ordering_tf_kernels.h5",
                                 "xception_weights_tf_dim_ordering_tf_kernels_notop.h5"),
                                BASE_URL)
    return model


def preprocess_input(x: Any, data_format: str | None = None) -> Any:
    """tf mode: pixels scaled to [-1, 1]."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="tf")


decode_predictions = imagenet_utils.decode_predictions
