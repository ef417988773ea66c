"""``tf.keras.applications.mobilenet``: MobileNet (v1, Howard et al. 2017): a 3x3 convolution
then 13 depthwise-separable blocks (depthwise 3x3 -> BN -> ReLU6 -> pointwise 1x1 -> BN ->
ReLU6), width multiplier `alpha`, depthwise `depth_multiplier`; the top is a 1x1 convolution."""

from __future__ import annotations

from typing import Any

from tapeflow.keras.applications import imagenet_utils

BASE_URL = "https://storage.googleapis.com/tensorflow/keras-applications/mobilenet/"
# (pointwise filters, stride) of blocks 1..13
_BLOCKS = ((64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2), (512, 1), (512, 1),
           (512, 1), (512, 1), (512, 1), (1024, 2), (1024, 1))


def _depthwise_conv_block(x: Any, filters: int, alpha: float, depth_multiplier: int,
                          stride: int, block_id: int) -> Any:
    from tapeflow.keras import layers

    if stride != 1:
        x = layers.ZeroPadding2D(((0, 1), (0, 1)), name=f"conv_pad_{block_id}")(x)
    x = layers.DepthwiseConv2D((3, 3), padding="same" if stride == 1 else "valid",
                               depth_multiplier=depth_multiplier, strides=stride,
                               use_bias=False, name=f"conv_dw_{block_id}")(x)
    x = layers.BatchNormalization(axis=-1, name=f"conv_dw_{block_id}_bn")(x)
    x = layers.ReLU(6.0, name=f"conv_dw_{block_id}_relu")(x)
    x = layers.Conv2D(int(filters * alpha), (1, 1), padding="same", use_bias=False,
                      name=f"conv_pw_{block_id}")(x)
    x = layers.BatchNormalization(axis=-1, name=f"conv_pw_{block_id}_bn")(x)
    return layers.ReLU(6.0, name=f"conv_pw_{block_id}_relu")(x)


def _check_imagenet(weights: Any, alpha: float, depth_multiplier: int) -> None:
    if weights != "imagenet":
        return
    if depth_multiplier != 1:
        raise ValueError(f"If imagenet weights are being loaded, depth multiplier must be 1.  "
                         f"Received depth_multiplier={depth_multiplier}")
    if alpha not in (0.25, 0.50, 0.75, 1.0):
        raise ValueError(f"If imagenet weights are being loaded, alpha can be one of`0.25`, "
                         f"`0.50`, `0.75` or `1.0` only.  Received alpha={alpha}")


def MobileNet(input_shape: Any = None, alpha: float = 1.0,  # noqa: N802
              depth_multiplier: int = 1, dropout: float = 1e-3, include_top: bool = True,
              weights: Any = "imagenet", input_tensor: Any = None, pooling: Any = None,
              classes: int = 1000, classifier_activation: Any = "softmax",
              **kwargs: Any) -> Any:
    """MobileNet (4.3M parameters at alpha=1 with the top), named ``mobilenet_<alpha>_<rows>``
    as in Keras."""
    from tapeflow.keras import layers
    from tapeflow.keras.engine.training import Model

    if kwargs:
        raise ValueError(f"Unknown argument(s): {(kwargs,)}")
    imagenet_utils.validate_weights(weights, include_top, classes)
    default_size = 224
    if input_shape is not None and input_shape[0] == input_shape[1] and \
            input_shape[0] in (128, 160, 192, 224):
        default_size = input_shape[0]
    input_shape = imagenet_utils.obtain_input_shape(input_shape, default_size, 32, include_top,
                                                    weights)
    rows = input_shape[0]
    _check_imagenet(weights, alpha, depth_multiplier)
    if weights == "imagenet" and (rows != input_shape[1] or rows not in (128, 160, 192, 224)):
        rows = 224  # Keras loads the 224 weights then (and warns)
    img_input, inputs = imagenet_utils.model_input(input_tensor, input_shape)
    x = layers.Conv2D(int(32 * alpha), (3, 3), padding="same", use_bias=False, strides=(2, 2),
                      name="conv1")(img_input)
    x = layers.BatchNormalization(axis=-1, name="conv1_bn")(x)
    x = layers.ReLU(6.0, name="conv1_relu")(x)
    for block_id, (filters, stride) in enumerate(_BLOCKS, start=1):
        x = _depthwise_conv_block(x, filters, alpha, depth_multiplier, stride, block_id)
    if include_top:
        x = layers.GlobalAveragePooling2D(keepdims=True)(x)
        x = layers.Dropout(dropout, name="dropout")(x)
        x = layers.Conv2D(classes, (1, 1), padding="same", name="conv_preds")(x)
        x = layers.Reshape((classes,), name="reshape_2")(x)
        imagenet_utils.validate_activation(classifier_activation, weights)
        x = layers.Activation(activation=classifier_activation, name="predictions")(x)
    else:
        x = imagenet_utils.head(x, False, pooling, classes, classifier_activation, weights,
                                names=(None, None))
    model = Model(inputs, x, name=f"mobilenet_{alpha:0.2f}_{rows}")
    files = ("", "")
    if weights == "imagenet":
        text = {1.0: "1_0", 0.75: "7_5", 0.5: "5_0"}.get(alpha, "2_5")
        files = (f"mobilenet_{text}_{rows}_tf.h5", f"mobilenet_{text}_{rows}_tf_no_top.h5")
    imagenet_utils.load_weights(model, weights, include_top, files, BASE_URL)
    return model


def preprocess_input(x: Any, data_format: str | None = None) -> Any:
    """tf mode: pixels scaled to [-1, 1]."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="tf")


decode_predictions = imagenet_utils.decode_predictions
