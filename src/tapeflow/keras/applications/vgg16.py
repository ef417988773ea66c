"""``tf.keras.applications.vgg16``: VGG16 (Simonyan & Zisserman 2014), and the builder VGG19
shares."""

from __future__ import annotations

from typing import Any

from tapeflow.keras.applications import imagenet_utils

BASE_URL = "https://storage.googleapis.com/tensorflow/keras-applications/"
_BLOCKS = ((64, 2), (128, 2), (256, 3), (512, 3), (512, 3))


def build(blocks: tuple[tuple[int, int], ...], model_name: str, include_top: bool, weights: Any,
          input_tensor: Any, input_shape: Any, pooling: Any, classes: int,
          classifier_activation: Any) -> Any:
    """Five blocks of (filters, convolutions) 3x3 ReLU convolutions each max pooled, then
    two 4096 fully connected layers on the flattened features."""
    from tapeflow.keras import layers
    from tapeflow.keras.engine.training import Model

    imagenet_utils.validate_weights(weights, include_top, classes)
    input_shape = imagenet_utils.obtain_input_shape(input_shape, 224, 32, include_top, weights)
    img_input, inputs = imagenet_utils.model_input(input_tensor, input_shape)
    x = img_input
    for block, (filters, convs) in enumerate(blocks, start=1):
        for i in range(1, convs + 1):
            x = layers.Conv2D(filters, (3, 3), activation="relu", padding="same",
                              name=f"block{block}_conv{i}")(x)
        x = layers.MaxPooling2D((2, 2), strides=(2, 2), name=f"block{block}_pool")(x)
    if include_top:
        imagenet_utils.validate_activation(classifier_activation, weights)
        x = layers.Flatten(name="flatten")(x)
        x = layers.Dense(4096, activation="relu", name="fc1")(x)
        x = layers.Dense(4096, activation="relu", name="fc2")(x)
        x = layers.Dense(classes, activation=classifier_activation, name="predictions")(x)
    elif pooling == "avg":
        x = layers.GlobalAveragePooling2D()(x)
    elif pooling == "max":
        x = layers.GlobalMaxPooling2D()(x)
    model = Model(inputs, x, name=model_name)
    imagenet_utils.load_weights(model, weights, include_top,
                                (f"{model_name}_weights_tf_dim_ordering_tf_kernels.h5",
                                 f"{model_name}_weights_tf_dim_ordering_tf_kernels_notop.h5"),
                                f"{BASE_URL}{model_name}/")
    return model


def VGG16(include_top: bool = True, weights: Any = "imagenet",  # noqa: N802
          input_tensor: Any = None, input_shape: Any = None, pooling: Any = None,
          classes: int = 1000, classifier_activation: Any = "softmax") -> Any:
    """VGG16 (138M parameters with the top; its top flattens 7x7x512, so it needs 224x224)."""
    return build(_BLOCKS, "vgg16", include_top, weights, input_tensor, input_shape, pooling,
                 classes, classifier_activation)


def preprocess_input(x: Any, data_format: str | None = None) -> Any:
    """Caffe mode: RGB -> BGR and minus the ImageNet mean (no scaling)."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="caffe")


decode_predictions = imagenet_utils.decode_predictions
