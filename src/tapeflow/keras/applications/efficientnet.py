"""``tf.keras.applications.efficientnet``: EfficientNetB0..B7 (Tan & Le 2019): MBConv blocks with
squeeze-and-excitation, swish, stochastic depth. Preprocessing is inside the model
(Rescaling and Normalization layers), so ``preprocess_input`` is the identity, as in Keras."""

from __future__ import annotations

import copy
import math
from typing import Any

from tapeflow.keras.applications import imagenet_utils

BASE_URL = "https://storage.googleapis.com/keras-applications/"
IMAGENET_STDDEV_RGB = (0.229, 0.224, 0.225)

DEFAULT_BLOCKS_ARGS = [
    {"kernel_size": 3, "repeats": 1, "filters_in": 32, "filters_out": 16, "expand_ratio": 1,
     "id_skip": True, "strides": 1, "se_ratio": 0.25},
    {"kernel_size": 3, "repeats": 2, "filters_in": 16, "filters_out": 24, "expand_ratio": 6,
     "id_skip": True, "strides": 2, "se_ratio": 0.25},
    {"kernel_size": 5, "repeats": 2, "filters_in": 24, "filters_out": 40, "expand_ratio": 6,
     "id_skip": True, "strides": 2, "se_ratio": 0.25},
    {"kernel_size": 3, "repeats": 3, "filters_in": 40, "filters_out": 80, "expand_ratio": 6,
     "id_skip": True, "strides": 2, "se_ratio": 0.25},
    {"kernel_size": 5, "repeats": 3, "filters_in": 80, "filters_out": 112, "expand_ratio": 6,
     "id_skip": True, "strides": 1, "se_ratio": 0.25},
    {"kernel_size": 5, "repeats": 4, "filters_in": 112, "filters_out": 192, "expand_ratio": 6,
     "id_skip": True, "strides": 2, "se_ratio": 0.25},
    {"kernel_size": 3, "repeats": 1, "filters_in": 192, "filters_out": 320, "expand_ratio": 6,
     "id_skip": True, "strides": 1, "se_ratio": 0.25},
]
CONV_KERNEL_INITIALIZER = {"class_name": "VarianceScaling",
                           "config": {"scale": 2.0, "mode": "fan_out",
                                      "distribution": "truncated_normal"}}
DENSE_KERNEL_INITIALIZER = {"class_name": "VarianceScaling",
                            "config": {"scale": 1.0 / 3.0, "mode": "fan_out",
                                       "distribution": "uniform"}}


def _init(spec: dict) -> Any:
    from tapeflow.keras import initializers

    return initializers.get(copy.deepcopy(spec))


def block(inputs: Any, activation: str = "swish", drop_rate: float = 0.0, name: str = "",
          filters_in: int = 32, filters_out: int = 16, kernel_size: int = 3, strides: int = 1,
          expand_ratio: int = 1, se_ratio: float = 0.0, id_skip: bool = True) -> Any:
    """One MBConv block: expand, depthwise, squeeze-excite, project (+ dropped residual)."""
    from tapeflow.keras import layers

    filters = filters_in * expand_ratio
    if expand_ratio != 1:
        x = layers.Conv2D(filters, 1, padding="same", use_bias=False,
                          kernel_initializer=_init(CONV_KERNEL_INITIALIZER),
                          name=name + "expand_conv")(inputs)
        x = layers.BatchNormalization(axis=3, name=name + "expand_bn")(x)
        x = layers.Activation(activation, name=name + "expand_activation")(x)
    else:
        x = inputs
    if strides == 2:
        x = layers.ZeroPadding2D(padding=imagenet_utils.correct_pad(x, kernel_size),
                                 name=name + "dwconv_pad")(x)
    x = layers.DepthwiseConv2D(kernel_size, strides=strides,
                               padding="valid" if strides == 2 else "same", use_bias=False,
                               depthwise_initializer=_init(CONV_KERNEL_INITIALIZER),
                               name=name + "dwconv")(x)
    x = layers.BatchNormalization(axis=3, name=name + "bn")(x)
    x = layers.Activation(activation, name=name + "activation")(x)
    if 0 < se_ratio <= 1:
        filters_se = max(1, int(filters_in * se_ratio))
        se = layers.GlobalAveragePooling2D(name=name + "se_squeeze")(x)
        se = layers.Reshape((1, 1, filters), name=name + "se_reshape")(se)
        se = layers.Conv2D(filters_se, 1, padding="same", activation=activation,
                           kernel_initializer=_init(CONV_KERNEL_INITIALIZER),
                           name=name + "se_reduce")(se)
        se = layers.Conv2D(filters, 1, padding="same", activation="sigmoid",
                           kernel_initializer=_init(CONV_KERNEL_INITIALIZER),
                           name=name + "se_expand")(se)
        x = layers.multiply([x, se], name=name + "se_excite")
    x = layers.Conv2D(filters_out, 1, padding="same", use_bias=False,
                      kernel_initializer=_init(CONV_KERNEL_INITIALIZER),
                      name=name + "project_conv")(x)
    x = layers.BatchNormalization(axis=3, name=name + "project_bn")(x)
    if id_skip and strides == 1 and filters_in == filters_out:
        if drop_rate > 0:
            x = layers.Dropout(drop_rate, noise_shape=(None, 1, 1, 1), name=name + "drop")(x)
        x = layers.add([x, inputs], name=name + "add")
    return x


def build(width_coefficient: float, depth_coefficient: float, default_size: int,
          dropout_rate: float = 0.2, drop_connect_rate: float = 0.2, depth_divisor: int = 8,
          activation: str = "swish", blocks_args: Any = "default",
          model_name: str = "efficientnet", include_top: bool = True, weights: Any = "imagenet",
          input_tensor: Any = None, input_shape: Any = None, pooling: Any = None,
          classes: int = 1000, classifier_activation: Any = "softmax",
          files: tuple[str, str] = ("", "")) -> Any:
    from tapeflow.keras import layers
    from tapeflow.keras.engine.training import Model

    if blocks_args == "default":
        blocks_args = DEFAULT_BLOCKS_ARGS
    imagenet_utils.validate_weights(weights, include_top, classes)
    input_shape = imagenet_utils.obtain_input_shape(input_shape, default_size, 32, include_top,
                                                    weights)
    img_input, inputs = imagenet_utils.model_input(input_tensor, input_shape)

    def round_filters(filters: float) -> int:
        filters *= width_coefficient
        new = max(depth_divisor, int(filters + depth_divisor / 2) // depth_divisor * depth_divisor)
        return int(new + depth_divisor if new < 0.9 * filters else new)

    def round_repeats(repeats: int) -> int:
        return int(math.ceil(depth_coefficient * repeats))

    x = layers.Rescaling(1.0 / 255.0)(img_input)
    x = layers.Normalization(axis=3)(x)
    if weights == "imagenet":  # the original divides by the variance, Normalization by its root
        x = layers.Rescaling([1.0 / math.sqrt(s) for s in IMAGENET_STDDEV_RGB])(x)
    x = layers.ZeroPadding2D(padding=imagenet_utils.correct_pad(x, 3), name="stem_conv_pad")(x)
    x = layers.Conv2D(round_filters(32), 3, strides=2, padding="valid", use_bias=False,
                      kernel_initializer=_init(CONV_KERNEL_INITIALIZER), name="stem_conv")(x)
    x = layers.BatchNormalization(axis=3, name="stem_bn")(x)
    x = layers.Activation(activation, name="stem_activation")(x)

    blocks_args = copy.deepcopy(blocks_args)
    b = 0
    total = float(sum(round_repeats(args["repeats"]) for args in blocks_args))
    for i, args in enumerate(blocks_args):
        args["filters_in"] = round_filters(args["filters_in"])
        args["filters_out"] = round_filters(args["filters_out"])
        for j in range(round_repeats(args.pop("repeats"))):
            if j > 0:
                args["strides"] = 1
                args["filters_in"] = args["filters_out"]
            x = block(x, activation, drop_connect_rate * b / total,
                      name=f"block{i + 1}{chr(j + 97)}_", **args)
            b += 1

    x = layers.Conv2D(round_filters(1280), 1, padding="same", use_bias=False,
                      kernel_initializer=_init(CONV_KERNEL_INITIALIZER), name="top_conv")(x)
    x = layers.BatchNormalization(axis=3, name="top_bn")(x)
    x = layers.Activation(activation, name="top_activation")(x)
    if include_top:
        imagenet_utils.validate_activation(classifier_activation, weights)
        x = layers.GlobalAveragePooling2D(name="avg_pool")(x)
        if dropout_rate > 0:
            x = layers.Dropout(dropout_rate, name="top_dropout")(x)
        x = layers.Dense(classes, activation=classifier_activation,
                         kernel_initializer=_init(DENSE_KERNEL_INITIALIZER),
                         name="predictions")(x)
    else:
        x = imagenet_utils.head(x, False, pooling, classes, classifier_activation, weights)
    model = Model(inputs, x, name=model_name)
    imagenet_utils.load_weights(model, weights, include_top, files, BASE_URL)
    return model


# (width, depth, default resolution, top dropout) of B0..B7, as tf-keras 2.21 scales them
SCALING = ((1.0, 1.0, 224, 0.2), (1.0, 1.1, 240, 0.2), (1.1, 1.2, 260, 0.3),
           (1.2, 1.4, 300, 0.3), (1.4, 1.8, 380, 0.4), (1.6, 2.2, 456, 0.4),
           (1.8, 2.6, 528, 0.5), (2.0, 3.1, 600, 0.5))


def _variant(b: int, params: str) -> Any:
    width, depth, size, dropout = SCALING[b]

    def model(include_top: bool = True, weights: Any = "imagenet", input_tensor: Any = None,
              input_shape: Any = None, pooling: Any = None, classes: int = 1000,
              classifier_activation: Any = "softmax", **kwargs: Any) -> Any:
        return build(width, depth, size, dropout, model_name=f"efficientnetb{b}",
                     include_top=include_top, weights=weights, input_tensor=input_tensor,
                     input_shape=input_shape, pooling=pooling, classes=classes,
                     classifier_activation=classifier_activation,
                     files=(f"efficientnetb{b}.h5", f"efficientnetb{b}_notop.h5"), **kwargs)

    model.__name__ = model.__qualname__ = f"EfficientNetB{b}"
    model.__doc__ = (f"EfficientNetB{b} ({params}M parameters with the top; width x{width}, "
                     f"depth x{depth}, {size}x{size} by default, top dropout {dropout}).")
    return model


EfficientNetB0 = _variant(0, "5.3")
EfficientNetB1 = _variant(1, "7.9")
EfficientNetB2 = _variant(2, "9.2")
EfficientNetB3 = _variant(3, "12.3")
EfficientNetB4 = _variant(4, "19.5")
EfficientNetB5 = _variant(5, "30.6")
EfficientNetB6 = _variant(6, "43.3")
EfficientNetB7 = _variant(7, "66.7")


def preprocess_input(x: Any, data_format: str | None = None) -> Any:
    """The identity: EfficientNet models rescale and normalize inside (Keras's placeholder)."""
    return x


decode_predictions = imagenet_utils.decode_predictions
