"""``tf.keras.applications.mobilenet_v2``: MobileNetV2 (Sandler et al. 2018): inverted residual
blocks of expand (1x1) -> depthwise 3x3 -> project (1x1), ReLU6, width multiplier `alpha`."""

from __future__ import annotations

from typing import Any

from tapeflow.keras.applications import imagenet_utils

BASE_URL = "https://storage.googleapis.com/tensorflow/keras-applications/mobilenet_v2/"
# (filters, stride, expansion) of blocks 0..16
_BLOCKS = ((16, 1, 1), (24, 2, 6), (24, 1, 6), (32, 2, 6), (32, 1, 6), (32, 1, 6),
           (64, 2, 6), (64, 1, 6), (64, 1, 6), (64, 1, 6), (96, 1, 6), (96, 1, 6), (96, 1, 6),
           (160, 2, 6), (160, 1, 6), (160, 1, 6), (320, 1, 6))


def _make_divisible(v: float, divisor: int, min_value: int | None = None) -> int:
    """`v` rounded to a multiple of `divisor`, never more than 10% down."""
    min_value = divisor if min_value is None else min_value
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    return new_v + divisor if new_v < 0.9 * v else new_v


def _bn(name: str) -> Any:
    from tapeflow.keras import layers

    return layers.BatchNormalization(axis=-1, epsilon=1e-3, momentum=0.999, name=name)


def _inverted_res_block(inputs: Any, expansion: int, stride: int, alpha: float, filters: int,
                        block_id: int) -> Any:
    from tapeflow.keras import layers

    in_channels = inputs.shape[-1]
    pointwise_filters = _make_divisible(int(filters * alpha), 8)
    x = inputs
    prefix = f"block_{block_id}_"
    if block_id:
        x = layers.Conv2D(expansion * in_channels, kernel_size=1, padding="same", use_bias=False,
                          activation=None, name=prefix + "expand")(x)
        x = _bn(prefix + "expand_BN")(x)
        x = layers.ReLU(6.0, name=prefix + "expand_relu")(x)
    else:
        prefix = "expanded_conv_"
    if stride == 2:
        x = layers.ZeroPadding2D(padding=imagenet_utils.correct_pad(x, 3),
                                 name=prefix + "pad")(x)
    x = layers.DepthwiseConv2D(kernel_size=3, strides=stride, activation=None, use_bias=False,
                               padding="same" if stride == 1 else "valid",
                               name=prefix + "depthwise")(x)
    x = _bn(prefix + "depthwise_BN")(x)
    x = layers.ReLU(6.0, name=prefix + "depthwise_relu")(x)
    x = layers.Conv2D(pointwise_filters, kernel_size=1, padding="same", use_bias=False,
                      activation=None, name=prefix + "project")(x)
    x = _bn(prefix + "project_BN")(x)
    if in_channels == pointwise_filters and stride == 1:
        return layers.Add(name=prefix + "add")([inputs, x])
    return x


def MobileNetV2(input_shape: Any = None, alpha: float = 1.0,  # noqa: N802
                include_top: bool = True, weights: Any = "imagenet", input_tensor: Any = None,
                pooling: Any = None, classes: int = 1000,
                classifier_activation: Any = "softmax", **kwargs: Any) -> Any:
    """MobileNetV2 (3.5M parameters at alpha=1 with the top), named
    ``mobilenetv2_<alpha>_<rows>`` as in Keras."""
    from tapeflow.keras import layers
    from tapeflow.keras.engine.training import Model

    if kwargs:
        raise ValueError(f"Unknown argument(s): {kwargs}")
    imagenet_utils.validate_weights(weights, include_top, classes)
    if weights == "imagenet" and alpha not in (0.35, 0.50, 0.75, 1.0, 1.3, 1.4):
        raise ValueError(f"If imagenet weights are being loaded, alpha must be one of `0.35`, "
                         f"`0.50`, `0.75`, `1.0`, `1.3` or `1.4` only;  Received "
                         f"`alpha={alpha}`")
    default_size = 224
    if input_shape is not None and input_shape[0] is not None and \
            input_shape[0] == input_shape[1] and input_shape[0] in (96, 128, 160, 192, 224):
        default_size = input_shape[0]
    input_shape = imagenet_utils.obtain_input_shape(input_shape, default_size, 32, include_top,
                                                    weights)
    rows = input_shape[0]
    if weights == "imagenet" and (rows != input_shape[1] or
                                  rows not in (96, 128, 160, 192, 224)):
        rows = 224  # Keras loads the 224 weights then (and warns)
    img_input, inputs = imagenet_utils.model_input(input_tensor, input_shape)
    x = layers.Conv2D(_make_divisible(32 * alpha, 8), kernel_size=3, strides=(2, 2),
                      padding="same", use_bias=False, name="Conv1")(img_input)
    x = _bn("bn_Conv1")(x)
    x = layers.ReLU(6.0, name="Conv1_relu")(x)
    for block_id, (filters, stride, expansion) in enumerate(_BLOCKS):
        x = _inverted_res_block(x, filters=filters, alpha=alpha, stride=stride,
                                expansion=expansion, block_id=block_id)
    last = _make_divisible(1280 * alpha, 8) if alpha > 1.0 else 1280
    x = layers.Conv2D(last, kernel_size=1, use_bias=False, name="Conv_1")(x)
    x = _bn("Conv_1_bn")(x)
    x = layers.ReLU(6.0, name="out_relu")(x)
    x = imagenet_utils.head(x, include_top, pooling, classes, classifier_activation, weights,
                            names=(None, None))
    model = Model(inputs, x, name=f"mobilenetv2_{alpha:0.2f}_{rows}")
    if weights == "imagenet":
        base = f"mobilenet_v2_weights_tf_dim_ordering_tf_kernels_{alpha:g}_{rows}"
        files = (base + ".h5", base + "_no_top.h5")
    else:
        files = ("", "")
    imagenet_utils.load_weights(model, weights, include_top, files, BASE_URL)
    return model


def preprocess_input(x: Any, data_format: str | None = None) -> Any:
    """tf mode: pixels scaled to [-1, 1]."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="tf")


decode_predictions = imagenet_utils.decode_predictions
