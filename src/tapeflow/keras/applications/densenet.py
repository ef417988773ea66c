"""``tf.keras.applications.densenet``: DenseNet121/169/201 (Huang et al. 2016): dense blocks whose
layers each add 32 channels to a growing concatenation, halved by transition blocks."""

from __future__ import annotations

from typing import Any

from tapeflow.keras.applications import imagenet_utils

BASE_URL = "https://storage.googleapis.com/tensorflow/keras-applications/densenet/"
_EPS = 1.001e-5


def _bn(name: str) -> Any:
    from tapeflow.keras import layers

    return layers.BatchNormalization(axis=3, epsilon=_EPS, name=name)


def conv_block(x: Any, growth_rate: int, name: str) -> Any:
    """BN-ReLU-Conv1x1(4k)-BN-ReLU-Conv3x3(k), concatenated onto the input."""
    from tapeflow.keras import layers

    x1 = _bn(name + "_0_bn")(x)
    x1 = layers.Activation("relu", name=name + "_0_relu")(x1)
    x1 = layers.Conv2D(4 * growth_rate, 1, use_bias=False, name=name + "_1_conv")(x1)
    x1 = _bn(name + "_1_bn")(x1)
    x1 = layers.Activation("relu", name=name + "_1_relu")(x1)
    x1 = layers.Conv2D(growth_rate, 3, padding="same", use_bias=False, name=name + "_2_conv")(x1)
    return layers.Concatenate(axis=3, name=name + "_concat")([x, x1])


def dense_block(x: Any, blocks: int, name: str) -> Any:
    for i in range(blocks):
        x = conv_block(x, 32, name=f"{name}_block{i + 1}")
    return x


def transition_block(x: Any, reduction: float, name: str) -> Any:
    from tapeflow.keras import layers

    x = _bn(name + "_bn")(x)
    x = layers.Activation("relu", name=name + "_relu")(x)
    x = layers.Conv2D(int(x.shape[3] * reduction), 1, use_bias=False, name=name + "_conv")(x)
    return layers.AveragePooling2D(2, strides=2, name=name + "_pool")(x)


def build(blocks: tuple[int, ...], model_name: str, include_top: bool, weights: Any,
          input_tensor: Any, input_shape: Any, pooling: Any, classes: int,
          classifier_activation: Any, files: tuple[str, str]) -> Any:
    from tapeflow.keras import layers
    from tapeflow.keras.engine.training import Model

    imagenet_utils.validate_weights(weights, include_top, classes)
    input_shape = imagenet_utils.obtain_input_shape(input_shape, 224, 32, include_top, weights)
    img_input, inputs = imagenet_utils.model_input(input_tensor, input_shape)
    x = layers.ZeroPadding2D(padding=((3, 3), (3, 3)))(img_input)
    x = layers.Conv2D(64, 7, strides=2, use_bias=False, name="conv1/conv")(x)
    x = _bn("conv1/bn")(x)
    x = layers.Activation("relu", name="conv1/relu")(x)
    x = layers.ZeroPadding2D(padding=((1, 1), (1, 1)))(x)
    x = layers.MaxPooling2D(3, strides=2, name="pool1")(x)
    for i, n in enumerate(blocks):
        x = dense_block(x, n, name=f"conv{i + 2}")
        if i < len(blocks) - 1:
            x = transition_block(x, 0.5, name=f"pool{i + 2}")
    x = _bn("bn")(x)
    x = layers.Activation("relu", name="relu")(x)
    x = imagenet_utils.head(x, include_top, pooling, classes, classifier_activation, weights)
    model = Model(inputs, x, name=model_name)
    imagenet_utils.load_weights(model, weights, include_top, files, BASE_URL)
    return model


def DenseNet121(include_top: bool = True, weights: Any = "imagenet",  # noqa: N802
                input_tensor: Any = None, input_shape: Any = None, pooling: Any = None,
                classes: int = 1000, classifier_activation: Any = "softmax") -> Any:
    """DenseNet121 (8.1M parameters with the top)."""
    return build((6, 12, 24, 16), "densenet121", include_top, weights, input_tensor,
                 input_shape, pooling, classes, classifier_activation,
                 ("densenet121_weights_tf_dim_ordering_tf_kernels.h5",
                  "densenet121_weights_tf_dim_ordering_tf_kernels_notop.h5"))


def DenseNet169(include_top: bool = True, weights: Any = "imagenet",  # noqa: N802
                input_tensor: Any = None, input_shape: Any = None, pooling: Any = None,
                classes: int = 1000, classifier_activation: Any = "softmax") -> Any:
    """DenseNet169 (14.3M parameters with the top)."""
    return build((6, 12, 32, 32), "densenet169", include_top, weights, input_tensor,
                 input_shape, pooling, classes, classifier_activation,
                 ("densenet169_weights_tf_dim_ordering_tf_kernels.h5",
                  "densenet169_weights_tf_dim_ordering_tf_kernels_notop.h5"))


def DenseNet201(include_top: bool = True, weights: Any = "imagenet",  # noqa: N802
                input_tensor: Any = None, input_shape: Any = None, pooling: Any = None,
                classes: int = 1000, classifier_activation: Any = "softmax") -> Any:
    """DenseNet201 (20.2M parameters with the top)."""
    return build((6, 12, 48, 32), "densenet201", include_top, weights, input_tensor,
                 input_shape, pooling, classes, classifier_activation,
                 ("densenet201_weights_tf_dim_ordering_tf_kernels.h5",
                  "densenet201_weights_tf_dim_ordering_tf_kernels_notop.h5"))


def preprocess_input(x: Any, data_format: str | None = None) -> Any:
    """torch mode: to [0, 1], minus the ImageNet mean, over its std, per channel."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="torch")


decode_predictions = imagenet_utils.decode_predictions
