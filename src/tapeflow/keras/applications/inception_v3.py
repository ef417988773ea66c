"""``tf.keras.applications.inception_v3``: InceptionV3 (Szegedy et al. 2015); inputs at least
75x75. Every convolution is Conv (no bias) -> BN (no scale) -> ReLU."""

from __future__ import annotations

from typing import Any

from tapeflow.keras.applications import imagenet_utils

BASE_URL = "https://storage.googleapis.com/tensorflow/keras-applications/inception_v3/"


def conv2d_bn(x: Any, filters: int, num_row: int, num_col: int, padding: str = "same",
              strides: tuple = (1, 1), name: str | None = None) -> Any:
    from tapeflow.keras import layers

    x = layers.Conv2D(filters, (num_row, num_col), strides=strides, padding=padding,
                      use_bias=False, name=None if name is None else name + "_conv")(x)
    x = layers.BatchNormalization(axis=3, scale=False,
                                  name=None if name is None else name + "_bn")(x)
    return layers.Activation("relu", name=name)(x)


def _avg_branch(x: Any, filters: int) -> Any:
    from tapeflow.keras import layers

    pool = layers.AveragePooling2D((3, 3), strides=(1, 1), padding="same")(x)
    return conv2d_bn(pool, filters, 1, 1)


def _max_pool(x: Any) -> Any:
    from tapeflow.keras import layers

    return layers.MaxPooling2D((3, 3), strides=(2, 2))(x)


def InceptionV3(include_top: bool = True, weights: Any = "imagenet",  # noqa: N802
                input_tensor: Any = None, input_shape: Any = None, pooling: Any = None,
                classes: int = 1000, classifier_activation: Any = "softmax") -> Any:
    """InceptionV3 (23.9M parameters with the top)."""
    from tapeflow.keras import layers
    from tapeflow.keras.engine.training import Model

    imagenet_utils.validate_weights(weights, include_top, classes)
    input_shape = imagenet_utils.obtain_input_shape(input_shape, 299, 75, include_top, weights)
    img_input, inputs = imagenet_utils.model_input(input_tensor, input_shape)
    cat = layers.concatenate
    x = conv2d_bn(img_input, 32, 3, 3, strides=(2, 2), padding="valid")
    x = conv2d_bn(x, 32, 3, 3, padding="valid")
    x = conv2d_bn(x, 64, 3, 3)
    x = _max_pool(x)
    x = conv2d_bn(x, 80, 1, 1, padding="valid")
    x = conv2d_bn(x, 192, 3, 3, padding="valid")
    x = _max_pool(x)

    for i, pool_filters in enumerate((32, 64, 64)):  # mixed 0-2: 35 x 35
        b1 = conv2d_bn(x, 64, 1, 1)
        b5 = conv2d_bn(conv2d_bn(x, 48, 1, 1), 64, 5, 5)
        b3 = conv2d_bn(conv2d_bn(conv2d_bn(x, 64, 1, 1), 96, 3, 3), 96, 3, 3)
        x = cat([b1, b5, b3, _avg_branch(x, pool_filters)], axis=3, name=f"mixed{i}")

    b3 = conv2d_bn(x, 384, 3, 3, strides=(2, 2), padding="valid")  # mixed 3: 17 x 17
    bd = conv2d_bn(conv2d_bn(x, 64, 1, 1), 96, 3, 3)
    bd = conv2d_bn(bd, 96, 3, 3, strides=(2, 2), padding="valid")
    x = cat([b3, bd, _max_pool(x)], axis=3, name="mixed3")

    for i, width in enumerate((128, 160, 160, 192)):  # mixed 4-7
        b1 = conv2d_bn(x, 192, 1, 1)
        b7 = conv2d_bn(conv2d_bn(conv2d_bn(x, width, 1, 1), width, 1, 7), 192, 7, 1)
        bd = conv2d_bn(x, width, 1, 1)
        for filters, rows, cols in ((width, 7, 1), (width, 1, 7), (width, 7, 1), (192, 1, 7)):
            bd = conv2d_bn(bd, filters, rows, cols)
        x = cat([b1, b7, bd, _avg_branch(x, 192)], axis=3, name=f"mixed{4 + i}")

    b3 = conv2d_bn(conv2d_bn(x, 192, 1, 1), 320, 3, 3, strides=(2, 2), padding="valid")
    b7 = conv2d_bn(conv2d_bn(conv2d_bn(x, 192, 1, 1), 192, 1, 7), 192, 7, 1)
    b7 = conv2d_bn(b7, 192, 3, 3, strides=(2, 2), padding="valid")
    x = cat([b3, b7, _max_pool(x)], axis=3, name="mixed8")  # 8 x 8

    for i in range(2):  # mixed 9-10
        b1 = conv2d_bn(x, 320, 1, 1)
        b3 = conv2d_bn(x, 384, 1, 1)
        b3 = cat([conv2d_bn(b3, 384, 1, 3), conv2d_bn(b3, 384, 3, 1)], axis=3,
                 name=f"mixed9_{i}")
        bd = conv2d_bn(conv2d_bn(x, 448, 1, 1), 384, 3, 3)
        bd = cat([conv2d_bn(bd, 384, 1, 3), conv2d_bn(bd, 384, 3, 1)], axis=3)
        x = cat([b1, b3, bd, _avg_branch(x, 192)], axis=3, name=f"mixed{9 + i}")
    x = imagenet_utils.head(x, include_top, pooling, classes, classifier_activation, weights,
                            names=("avg_pool", None) if include_top else (None, None))
    model = Model(inputs, x, name="inception_v3")
    imagenet_utils.load_weights(model, weights, include_top,
                                ("inception_v3_weights_tf_dim_ordering_tf_kernels.h5",
                                 "inception_v3_weights_tf_dim_ordering_tf_kernels_notop.h5"),
                                BASE_URL)
    return model


def preprocess_input(x: Any, data_format: str | None = None) -> Any:
    """tf mode: pixels scaled to [-1, 1]."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="tf")


decode_predictions = imagenet_utils.decode_predictions
