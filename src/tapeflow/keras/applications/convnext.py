"""``tf.keras.applications.convnext``: ConvNeXt Tiny/Small/Base/Large/XLarge (Liu et al.
2022): a 4x4 patchify stem, four stages of blocks (depthwise 7x7 -> LayerNorm -> 4x MLP with
GELU -> layer scale, residual), LayerNorm + 2x2 convolution between stages. Normalization is
inside the model (``include_preprocessing``), so ``preprocess_input`` is the identity."""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow.keras.applications import imagenet_utils
from tapeflow.keras.engine.base_layer import Layer
from tapeflow.keras.layers.separable import DepthwiseConv2D

BASE_URL = "https://storage.googleapis.com/tensorflow/keras-applications/convnext/"
# (depths, projection dims) as tf-keras 2.21 configures them
CONFIGS = {
    "tiny": ((3, 3, 9, 3), (96, 192, 384, 768)),
    "small": ((3, 3, 27, 3), (96, 192, 384, 768)),
    "base": ((3, 3, 27, 3), (128, 256, 512, 1024)),
    "large": ((3, 3, 27, 3), (192, 384, 768, 1536)),
    "xlarge": ((3, 3, 27, 3), (256, 512, 1024, 2048)),
}


class Conv2D(DepthwiseConv2D):
    """Keras's ``Conv2D(filters=C, groups=C)`` on C channels (ConvNeXt's depthwise 7x7), with
    its weights ``kernel`` [kh, kw, 1, C] and ``bias`` [C]; computed as the depthwise
    convolution it is (the kernel read as [kh, kw, C, 1])."""

    def build(self, input_shape: Any) -> None:
        channels = self._channels(input_shape)
        self.kernel = self.add_weight("kernel", shape=self.kernel_size + (1, channels),
                                      initializer=self.depthwise_initializer)
        self._add_bias(channels)
        self.built = True

    def _depthwise(self, x: Any) -> Any:
        import tapeflow as tf
        from tapeflow.ops.conv_extras import depthwise_conv2d

        kernel = tf.reshape(self.kernel, self.kernel_size + (-1, 1))
        return depthwise_conv2d(x, kernel, self.strides, self.padding, self.dilation_rate)


class LayerScale(Layer):
    """x * gamma, gamma [projection_dim] starting at `init_values` (Keras's ConvNeXt layer)."""

    def __init__(self, init_values: float, projection_dim: int, **kwargs: Any):
        super().__init__(**kwargs)
        self.init_values, self.projection_dim = init_values, projection_dim

    def build(self, input_shape: Any) -> None:
        from tapeflow.keras import initializers

        self.gamma = self.add_weight("gamma", shape=(self.projection_dim,),
                                     initializer=initializers.Constant(self.init_values),
                                     trainable=True)
        self.built = True

    def call(self, x: Any) -> Any:
        return x * self.gamma

    def get_config(self) -> dict:
        return {**super().get_config(), "init_values": self.init_values,
                "projection_dim": self.projection_dim}


class StochasticDepth(Layer):
    """Drops the whole residual branch of a sample with probability `drop_path_rate` while
    training (scaling the kept ones by 1 / keep), the identity in inference."""

    def __init__(self, drop_path_rate: float, **kwargs: Any):
        super().__init__(**kwargs)
        self.drop_path_rate = drop_path_rate

    def call(self, x: Any, training: Any = None) -> Any:
        import tapeflow as tf

        if not training:
            return x
        keep = 1.0 - self.drop_path_rate
        shape = tf.concat([tf.shape(x)[:1], tf.ones([len(x.shape) - 1], "int32")], 0)
        return x / keep * tf.floor(keep + tf.random.uniform(shape, 0, 1))

    def get_config(self) -> dict:
        return {**super().get_config(), "drop_path_rate": self.drop_path_rate}


def _block(x: Any, projection_dim: int, drop_path_rate: float, layer_scale_init_value: Any,
           name: str) -> Any:
    from tapeflow.keras import layers

    inputs = x
    x = Conv2D(kernel_size=7, padding="same", name=name + "_depthwise_conv")(x)
    x = layers.LayerNormalization(epsilon=1e-6, name=name + "_layernorm")(x)
    x = layers.Dense(4 * projection_dim, name=name + "_pointwise_conv_1")(x)
    x = layers.Activation("gelu", name=name + "_gelu")(x)
    x = layers.Dense(projection_dim, name=name + "_pointwise_conv_2")(x)
    if layer_scale_init_value is not None:
        x = LayerScale(layer_scale_init_value, projection_dim, name=name + "_layer_scale")(x)
    if drop_path_rate:
        layer = StochasticDepth(drop_path_rate, name=name + "_stochastic_depth")
    else:
        layer = layers.Activation("linear", name=name + "_identity")
    return inputs + layer(x)


def build(size: str, model_name: str, include_top: bool, include_preprocessing: bool,
          weights: Any, input_tensor: Any, input_shape: Any, pooling: Any, classes: int,
          classifier_activation: Any, drop_path_rate: float = 0.0,
          layer_scale_init_value: float = 1e-6) -> Any:
    from tapeflow.keras import layers
    from tapeflow.keras.engine.sequential import Sequential
    from tapeflow.keras.engine.training import Model

    depths, dims = CONFIGS[size]
    imagenet_utils.validate_weights(weights, include_top, classes)
    input_shape = imagenet_utils.obtain_input_shape(input_shape, 224, 32, include_top, weights)
    x, inputs = imagenet_utils.model_input(input_tensor, input_shape)
    if isinstance(inputs, list):
        inputs = x = inputs[0]
    if include_preprocessing and input_shape[2] == 3:
        x = layers.Normalization(mean=[0.485 * 255, 0.456 * 255, 0.406 * 255],
                                 variance=[(0.229 * 255) ** 2, (0.224 * 255) ** 2,
                                           (0.225 * 255) ** 2],
                                 name=model_name + "_prestem_normalization")(x)
    downsample = [Sequential([
        layers.Conv2D(dims[0], kernel_size=4, strides=4, name=model_name + "_stem_conv"),
        layers.LayerNormalization(epsilon=1e-6, name=model_name + "_stem_layernorm"),
    ], name=model_name + "_stem")]
    for i in range(3):
        downsample.append(Sequential([
            layers.LayerNormalization(epsilon=1e-6,
                                      name=f"{model_name}_downsampling_layernorm_{i}"),
            layers.Conv2D(dims[i + 1], kernel_size=2, strides=2,
                          name=f"{model_name}_downsampling_conv_{i}"),
        ], name=f"{model_name}_downsampling_block_{i}"))
    rates = [float(r) for r in np.linspace(0.0, drop_path_rate, sum(depths))]
    cur = 0
    for i in range(4):
        x = downsample[i](x)
        for j in range(depths[i]):
            x = _block(x, dims[i], rates[cur + j], layer_scale_init_value,
                       f"{model_name}_stage_{i}_block_{j}")
        cur += depths[i]
    if include_top:
        imagenet_utils.validate_activation(classifier_activation, weights)
        x = layers.GlobalAveragePooling2D(name=model_name + "_head_gap")(x)
        x = layers.LayerNormalization(epsilon=1e-6, name=model_name + "_head_layernorm")(x)
        x = layers.Dense(classes, activation=classifier_activation,
                         name=model_name + "_head_dense")(x)
    else:
        x = imagenet_utils.head(x, False, pooling, classes, classifier_activation, weights,
                                names=(None, None))
        x = layers.LayerNormalization(epsilon=1e-6)(x)
    model = Model(inputs, x, name=model_name)
    imagenet_utils.load_weights(model, weights, include_top,
                                (model_name + ".h5", model_name + "_notop.h5"), BASE_URL)
    return model


def _variant(size: str, params: str) -> Any:
    def model(model_name: str = f"convnext_{size}", include_top: bool = True,
              include_preprocessing: bool = True, weights: Any = "imagenet",
              input_tensor: Any = None, input_shape: Any = None, pooling: Any = None,
              classes: int = 1000, classifier_activation: Any = "softmax") -> Any:
        return build(size, model_name, include_top, include_preprocessing, weights,
                     input_tensor, input_shape, pooling, classes, classifier_activation)

    model.__name__ = model.__qualname__ = f"ConvNeXt{size.capitalize().replace('Xl', 'XL')}"
    model.__doc__ = f"{model.__name__} ({params}M parameters with the top)."
    return model


ConvNeXtTiny = _variant("tiny", "28.6")
ConvNeXtSmall = _variant("small", "50.2")
ConvNeXtBase = _variant("base", "88.6")
ConvNeXtLarge = _variant("large", "197.8")
ConvNeXtXLarge = _variant("xlarge", "350.1")


def preprocess_input(x: Any, data_format: str | None = None) -> Any:
    """The identity: ConvNeXt models normalize inside (Keras's placeholder)."""
    return x


decode_predictions = imagenet_utils.decode_predictions
