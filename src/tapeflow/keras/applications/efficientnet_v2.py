"""``tf.keras.applications.efficientnet_v2``: EfficientNetV2 B0-B3, S, M, L (Tan & Le 2021):
Fused-MBConv blocks (one full convolution in place of expand + depthwise) in the early
stages, MBConv with squeeze-excite later. Preprocessing is inside the model, so
``preprocess_input`` is the identity, as in Keras."""

from __future__ import annotations

import math
from typing import Any

from tapeflow.keras.applications import imagenet_utils
from tapeflow.keras.applications.efficientnet import (
    CONV_KERNEL_INITIALIZER,
    DENSE_KERNEL_INITIALIZER,
    _init,
)

BASE_URL = "https://storage.googleapis.com/tensorflow/keras-applications/efficientnet_v2/"
# per stage: (fused, repeats, filters in, filters out, expand ratio, se ratio, stride), all
# 3x3 kernels, as tf-keras 2.21 tabulates them
_B = ((1, 1, 32, 16, 1, 0, 1), (1, 2, 16, 32, 4, 0, 2), (1, 2, 32, 48, 4, 0, 2),
      (0, 3, 48, 96, 4, 0.25, 2), (0, 5, 96, 112, 6, 0.25, 1), (0, 8, 112, 192, 6, 0.25, 2))
BLOCKS = {
    "b": _B,
    "s": ((1, 2, 24, 24, 1, 0, 1), (1, 4, 24, 48, 4, 0, 2), (1, 4, 48, 64, 4, 0, 2),
          (0, 6, 64, 128, 4, 0.25, 2), (0, 9, 128, 160, 6, 0.25, 1),
          (0, 15, 160, 256, 6, 0.25, 2)),
    "m": ((1, 3, 24, 24, 1, 0, 1), (1, 5, 24, 48, 4, 0, 2), (1, 5, 48, 80, 4, 0, 2),
          (0, 7, 80, 160, 4, 0.25, 2), (0, 14, 160, 176, 6, 0.25, 1),
          (0, 18, 176, 304, 6, 0.25, 2), (0, 5, 304, 512, 6, 0.25, 1)),
    "l": ((1, 4, 32, 32, 1, 0, 1), (1, 7, 32, 64, 4, 0, 2), (1, 7, 64, 96, 4, 0, 2),
          (0, 10, 96, 192, 4, 0.25, 2), (0, 19, 192, 224, 6, 0.25, 1),
          (0, 25, 224, 384, 6, 0.25, 2), (0, 7, 384, 640, 6, 0.25, 1)),
}
# variant -> (width, depth, default resolution, parameters with the top)
VARIANTS = {"b0": (1.0, 1.0, 224, "7.2"), "b1": (1.0, 1.1, 240, "8.2"),
            "b2": (1.1, 1.2, 260, "10.2"), "b3": (1.2, 1.4, 300, "14.5"),
            "s": (1.0, 1.0, 384, "21.6"), "m": (1.0, 1.0, 480, "54.4"),
            "l": (1.0, 1.0, 480, "119.0")}


def round_filters(filters: float, width: float, divisor: int = 8) -> int:
    """`filters * width` to the nearest multiple of `divisor` (no 10% rule, unlike V1)."""
    filters *= width
    return int(max(divisor, int(filters + divisor / 2) // divisor * divisor))


def _conv(filters: int, kernel_size: int, name: str, strides: int = 1, **kwargs: Any) -> Any:
    from tapeflow.keras import layers

    return layers.Conv2D(filters, kernel_size, strides=strides, padding="same",
                         kernel_initializer=_init(CONV_KERNEL_INITIALIZER), name=name, **kwargs)


def _bn(name: str) -> Any:
    from tapeflow.keras import layers

    return layers.BatchNormalization(axis=3, momentum=0.9, name=name)


def _se(x: Any, filters_in: int, filters: int, se_ratio: float, name: str) -> Any:
    from tapeflow.keras import layers

    se = layers.GlobalAveragePooling2D(name=name + "se_squeeze")(x)
    se = layers.Reshape((1, 1, filters), name=name + "se_reshape")(se)
    se = _conv(max(1, int(filters_in * se_ratio)), 1, name + "se_reduce",
               activation="swish")(se)
    se = _conv(filters, 1, name + "se_expand", activation="sigmoid")(se)
    return layers.multiply([x, se], name=name + "se_excite")


def block(inputs: Any, fused: bool, filters_in: int, filters_out: int, expand_ratio: int,
          se_ratio: float, strides: int, survival_probability: float, name: str) -> Any:
    """One (Fused-)MBConv block: expand (a 3x3 full convolution when fused, else 1x1 then
    depthwise 3x3), squeeze-excite, project; a residual when the shape is kept, behind
    ``Dropout(survival_probability)`` as tf-keras 2.21 writes it."""
    from tapeflow.keras import layers

    filters = filters_in * expand_ratio
    x = inputs
    if expand_ratio != 1:
        x = _conv(filters, 3 if fused else 1, name + "expand_conv", strides if fused else 1,
                  use_bias=False)(x)
        x = _bn(name + "expand_bn")(x)
        x = layers.Activation("swish", name=name + "expand_activation")(x)
    if not fused:
        x = layers.DepthwiseConv2D(3, strides=strides, padding="same", use_bias=False,
                                   depthwise_initializer=_init(CONV_KERNEL_INITIALIZER),
                                   name=name + "dwconv2")(x)
        x = _bn(name + "bn")(x)
        x = layers.Activation("swish", name=name + "activation")(x)
    if 0 < se_ratio <= 1:
        x = _se(x, filters_in, filters, se_ratio, name)
    one = not fused or expand_ratio != 1
    x = _conv(filters_out, 1 if one else 3, name + "project_conv", 1 if one else strides,
              use_bias=False)(x)
    x = _bn(name + "project_bn")(x)
    if fused and expand_ratio == 1:
        x = layers.Activation("swish", name=name + "project_activation")(x)
    if strides == 1 and filters_in == filters_out:
        if survival_probability:
            x = layers.Dropout(survival_probability, noise_shape=(None, 1, 1, 1),
                               name=name + "drop")(x)
        x = layers.add([x, inputs], name=name + "add")
    return x


def build(variant: str, include_top: bool, weights: Any, input_tensor: Any, input_shape: Any,
          pooling: Any, classes: int, classifier_activation: Any, include_preprocessing: bool,
          dropout_rate: float = 0.2, drop_connect_rate: float = 0.2) -> Any:
    from tapeflow.keras import initializers, layers
    from tapeflow.keras.engine.training import Model

    width, depth, default_size, _ = VARIANTS[variant]
    model_name = f"efficientnetv2-{variant}"
    imagenet_utils.validate_weights(weights, include_top, classes)
    input_shape = imagenet_utils.obtain_input_shape(input_shape, default_size, 32, include_top,
                                                    weights)
    x, inputs = imagenet_utils.model_input(input_tensor, input_shape)
    if include_preprocessing and variant.startswith("b") and input_shape[2] == 3:
        x = layers.Rescaling(scale=1.0 / 255)(x)
        x = layers.Normalization(mean=[0.485, 0.456, 0.406],
                                 variance=[0.229 ** 2, 0.224 ** 2, 0.225 ** 2], axis=3)(x)
    elif include_preprocessing:
        x = layers.Rescaling(scale=1.0 / 128.0, offset=-1)(x)
    stages = BLOCKS[variant[0]]
    x = _conv(round_filters(stages[0][2], width), 3, "stem_conv", 2, use_bias=False)(x)
    x = _bn("stem_bn")(x)
    x = layers.Activation("swish", name="stem_activation")(x)
    b, total = 0, float(sum(stage[1] for stage in stages))
    for i, (fused, repeats, f_in, f_out, expand, se, stride) in enumerate(stages):
        f_in, f_out = round_filters(f_in, width), round_filters(f_out, width)
        for j in range(int(math.ceil(depth * repeats))):
            x = block(x, bool(fused), f_in if j == 0 else f_out, f_out, expand, se,
                      stride if j == 0 else 1, drop_connect_rate * b / total,
                      f"block{i + 1}{chr(j + 97)}_")
            b += 1
    x = _conv(round_filters(1280, width), 1, "top_conv", use_bias=False)(x)
    x = _bn("top_bn")(x)
    x = layers.Activation("swish", name="top_activation")(x)
    if include_top:
        x = layers.GlobalAveragePooling2D(name="avg_pool")(x)
        if dropout_rate > 0:
            x = layers.Dropout(dropout_rate, name="top_dropout")(x)
        imagenet_utils.validate_activation(classifier_activation, weights)
        x = layers.Dense(classes, activation=classifier_activation,
                         kernel_initializer=_init(DENSE_KERNEL_INITIALIZER),
                         bias_initializer=initializers.Constant(0), name="predictions")(x)
    else:
        x = imagenet_utils.head(x, False, pooling, classes, classifier_activation, weights)
    model = Model(inputs, x, name=model_name)
    imagenet_utils.load_weights(model, weights, include_top,
                                (model_name + ".h5", model_name + "_notop.h5"), BASE_URL)
    return model


def _variant(variant: str) -> Any:
    def model(include_top: bool = True, weights: Any = "imagenet", input_tensor: Any = None,
              input_shape: Any = None, pooling: Any = None, classes: int = 1000,
              classifier_activation: Any = "softmax",
              include_preprocessing: bool = True) -> Any:
        return build(variant, include_top, weights, input_tensor, input_shape, pooling, classes,
                     classifier_activation, include_preprocessing)

    width, depth, size, params = VARIANTS[variant]
    model.__name__ = model.__qualname__ = f"EfficientNetV2{variant.upper()}"
    model.__doc__ = (f"{model.__name__} ({params}M parameters with the top; {size}x{size} by "
                     f"default).")
    return model


EfficientNetV2B0 = _variant("b0")
EfficientNetV2B1 = _variant("b1")
EfficientNetV2B2 = _variant("b2")
EfficientNetV2B3 = _variant("b3")
EfficientNetV2S = _variant("s")
EfficientNetV2M = _variant("m")
EfficientNetV2L = _variant("l")


def preprocess_input(x: Any, data_format: str | None = None) -> Any:
    """The identity: EfficientNetV2 models rescale inside (Keras's placeholder)."""
    return x


decode_predictions = imagenet_utils.decode_predictions
