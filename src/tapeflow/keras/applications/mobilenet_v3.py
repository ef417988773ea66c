"""``tf.keras.applications.mobilenet_v3``: MobileNetV3Small / MobileNetV3Large (Howard et al.
2019): inverted residual blocks with optional squeeze-and-excite and hard-swish, a 1x1
convolution top. ``minimalistic`` drops SE, hard-swish and 5x5 kernels. Preprocessing is
inside the model (``Rescaling(1/127.5, offset=-1)``, unless ``include_preprocessing=False``),
so ``preprocess_input`` is the identity, as in Keras."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tapeflow.keras.applications import imagenet_utils
from tapeflow.keras.applications.mobilenet_v2 import _make_divisible as _depth

BASE_URL = "https://storage.googleapis.com/tensorflow/keras-applications/mobilenet_v3/"
# (expansion, filters, kernel ("k": 5x5 unless minimalistic), stride, SE, activation ("a":
# hard-swish unless minimalistic)) of each block, as tf-keras 2.21 stacks them
_SMALL = ((1, 16, 3, 2, True, "relu"), (72 / 16, 24, 3, 2, False, "relu"),
          (88 / 24, 24, 3, 1, False, "relu"), (4, 40, "k", 2, True, "a"),
          (6, 40, "k", 1, True, "a"), (6, 40, "k", 1, True, "a"), (3, 48, "k", 1, True, "a"),
          (3, 48, "k", 1, True, "a"), (6, 96, "k", 2, True, "a"), (6, 96, "k", 1, True, "a"),
          (6, 96, "k", 1, True, "a"))
_LARGE = ((1, 16, 3, 1, False, "relu"), (4, 24, 3, 2, False, "relu"),
          (3, 24, 3, 1, False, "relu"), (3, 40, "k", 2, True, "relu"),
          (3, 40, "k", 1, True, "relu"), (3, 40, "k", 1, True, "relu"),
          (6, 80, 3, 2, False, "a"), (2.5, 80, 3, 1, False, "a"), (2.3, 80, 3, 1, False, "a"),
          (2.3, 80, 3, 1, False, "a"), (6, 112, 3, 1, True, "a"), (6, 112, 3, 1, True, "a"),
          (6, 160, "k", 2, True, "a"), (6, 160, "k", 1, True, "a"), (6, 160, "k", 1, True, "a"))


def relu(x: Any) -> Any:
    from tapeflow.keras import layers

    return layers.ReLU()(x)


def hard_sigmoid(x: Any) -> Any:
    """ReLU6(x + 3) / 6, built from the same (auto-named) layers Keras builds it from."""
    from tapeflow.keras import layers

    return layers.ReLU(6.0)(x + 3.0) * (1.0 / 6.0)


def hard_swish(x: Any) -> Any:
    from tapeflow.keras import layers

    return layers.Multiply()([x, hard_sigmoid(x)])


def _bn(name: str) -> Any:
    from tapeflow.keras import layers

    return layers.BatchNormalization(axis=-1, epsilon=1e-3, momentum=0.999, name=name)


def _se_block(inputs: Any, filters: int, se_ratio: float, prefix: str) -> Any:
    from tapeflow.keras import layers

    x = layers.GlobalAveragePooling2D(keepdims=True, name=prefix + "squeeze_excite/AvgPool")(
        inputs)
    x = layers.Conv2D(_depth(filters * se_ratio, 8), kernel_size=1, padding="same",
                      name=prefix + "squeeze_excite/Conv")(x)
    x = layers.ReLU(name=prefix + "squeeze_excite/Relu")(x)
    x = layers.Conv2D(filters, kernel_size=1, padding="same",
                      name=prefix + "squeeze_excite/Conv_1")(x)
    x = hard_sigmoid(x)
    return layers.Multiply(name=prefix + "squeeze_excite/Mul")([inputs, x])


def _inverted_res_block(x: Any, expansion: float, filters: int, kernel_size: int, stride: int,
                        se_ratio: float | None, activation: Callable, block_id: int) -> Any:
    from tapeflow.keras import layers

    shortcut = x
    prefix = "expanded_conv/"
    infilters = x.shape[-1]
    if block_id:
        prefix = f"expanded_conv_{block_id}/"
        x = layers.Conv2D(_depth(infilters * expansion, 8), kernel_size=1, padding="same",
                          use_bias=False, name=prefix + "expand")(x)
        x = _bn(prefix + "expand/BatchNorm")(x)
        x = activation(x)
    if stride == 2:
        x = layers.ZeroPadding2D(padding=imagenet_utils.correct_pad(x, kernel_size),
                                 name=prefix + "depthwise/pad")(x)
    x = layers.DepthwiseConv2D(kernel_size, strides=stride,
                               padding="same" if stride == 1 else "valid", use_bias=False,
                               name=prefix + "depthwise")(x)
    x = _bn(prefix + "depthwise/BatchNorm")(x)
    x = activation(x)
    if se_ratio:
        x = _se_block(x, _depth(infilters * expansion, 8), se_ratio, prefix)
    x = layers.Conv2D(filters, kernel_size=1, padding="same", use_bias=False,
                      name=prefix + "project")(x)
    x = _bn(prefix + "project/BatchNorm")(x)
    if stride == 1 and infilters == filters:
        x = layers.Add(name=prefix + "Add")([shortcut, x])
    return x


def _input_shape(input_shape: Any, input_tensor: Any) -> tuple:
    """Keras's MobileNetV3 input rules: from the tensor when no shape, (None, None, 3) when
    neither, at least 32x32 (no fixed size is needed with the top: it is convolutional)."""
    if input_shape is None and input_tensor is not None:
        shape = tuple(input_tensor.shape)
        input_shape = (shape[2], shape[1], 3)  # (cols, rows, 3), as Keras writes it
    if input_shape is None:
        input_shape = (None, None, 3)
    input_shape = tuple(input_shape)
    rows, cols = input_shape[0], input_shape[1]
    if rows and cols and (rows < 32 or cols < 32):
        raise ValueError(f"Input size must be at least 32x32; Received `input_shape="
                         f"{input_shape}`")
    return input_shape


def build(blocks: tuple, last_point_ch: int, input_shape: Any, alpha: float, model_type: str,
          minimalistic: bool, include_top: bool, weights: Any, input_tensor: Any, classes: int,
          pooling: Any, dropout_rate: float, classifier_activation: Any,
          include_preprocessing: bool) -> Any:
    from tapeflow.keras import layers
    from tapeflow.keras.engine.training import Model

    imagenet_utils.validate_weights(weights, include_top, classes)
    input_shape = _input_shape(input_shape, input_tensor)
    if weights == "imagenet" and ((not minimalistic and alpha not in (0.75, 1.0))
                                  or (minimalistic and alpha != 1.0)):
        raise ValueError("If imagenet weights are being loaded, alpha can be one of `0.75`, "
                         "`1.0` for non minimalistic or `1.0` for minimalistic only.")
    img_input, inputs = imagenet_utils.model_input(input_tensor, input_shape)
    kernel, activation, se_ratio = (3, relu, None) if minimalistic else (5, hard_swish, 0.25)
    x = img_input
    if include_preprocessing:
        x = layers.Rescaling(scale=1.0 / 127.5, offset=-1.0)(x)
    x = layers.Conv2D(16, kernel_size=3, strides=(2, 2), padding="same", use_bias=False,
                      name="Conv")(x)
    x = _bn("Conv/BatchNorm")(x)
    x = activation(x)
    for block_id, (expansion, filters, k, stride, se, act) in enumerate(blocks):
        x = _inverted_res_block(x, expansion, _depth(filters * alpha, 8),
                                kernel if k == "k" else k, stride, se_ratio if se else None,
                                activation if act == "a" else relu, block_id)
    last_conv_ch = _depth(x.shape[-1] * 6, 8)
    if alpha > 1.0:
        last_point_ch = _depth(last_point_ch * alpha, 8)
    x = layers.Conv2D(last_conv_ch, kernel_size=1, padding="same", use_bias=False,
                      name="Conv_1")(x)
    x = _bn("Conv_1/BatchNorm")(x)
    x = activation(x)
    if include_top:
        x = layers.GlobalAveragePooling2D(keepdims=True)(x)
        x = layers.Conv2D(last_point_ch, kernel_size=1, padding="same", use_bias=True,
                          name="Conv_2")(x)
        x = activation(x)
        if dropout_rate > 0:
            x = layers.Dropout(dropout_rate)(x)
        x = layers.Conv2D(classes, kernel_size=1, padding="same", name="Logits")(x)
        x = layers.Flatten()(x)
        imagenet_utils.validate_activation(classifier_activation, weights)
        x = layers.Activation(activation=classifier_activation, name="Predictions")(x)
    else:
        x = imagenet_utils.head(x, False, pooling, classes, classifier_activation, weights)
    model = Model(inputs, x, name="MobilenetV3" + model_type)
    files = ("", "")
    if weights == "imagenet":
        name = f"{model_type}{'_minimalistic' if minimalistic else ''}_224_{alpha}_float"
        files = (f"weights_mobilenet_v3_{name}.h5", f"weights_mobilenet_v3_{name}_no_top_v2.h5")
    imagenet_utils.load_weights(model, weights, include_top, files, BASE_URL)
    return model


def MobileNetV3Small(input_shape: Any = None, alpha: float = 1.0,  # noqa: N802
                     minimalistic: bool = False, include_top: bool = True,
                     weights: Any = "imagenet", input_tensor: Any = None, classes: int = 1000,
                     pooling: Any = None, dropout_rate: float = 0.2,
                     classifier_activation: Any = "softmax",
                     include_preprocessing: bool = True) -> Any:
    """MobileNetV3Small (2.55M parameters at alpha=1 with the top)."""
    return build(_SMALL, 1024, input_shape, alpha, "small", minimalistic, include_top, weights,
                 input_tensor, classes, pooling, dropout_rate, classifier_activation,
                 include_preprocessing)


def MobileNetV3Large(input_shape: Any = None, alpha: float = 1.0,  # noqa: N802
                     minimalistic: bool = False, include_top: bool = True,
                     weights: Any = "imagenet", input_tensor: Any = None, classes: int = 1000,
                     pooling: Any = None, dropout_rate: float = 0.2,
                     classifier_activation: Any = "softmax",
                     include_preprocessing: bool = True) -> Any:
    """MobileNetV3Large (5.5M parameters at alpha=1 with the top)."""
    return build(_LARGE, 1280, input_shape, alpha, "large", minimalistic, include_top, weights,
                 input_tensor, classes, pooling, dropout_rate, classifier_activation,
                 include_preprocessing)


def preprocess_input(x: Any, data_format: str | None = None) -> Any:
    """The identity: MobileNetV3 models rescale inside (Keras's placeholder)."""
    return x


decode_predictions = imagenet_utils.decode_predictions
