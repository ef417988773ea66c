"""``tf.keras.applications.vgg19``: VGG19 (Simonyan & Zisserman 2014): VGG16 with four
convolutions in each of the last three blocks."""

from __future__ import annotations

from typing import Any

from tapeflow.keras.applications import imagenet_utils, vgg16

_BLOCKS = ((64, 2), (128, 2), (256, 4), (512, 4), (512, 4))


def VGG19(include_top: bool = True, weights: Any = "imagenet",  # noqa: N802
          input_tensor: Any = None, input_shape: Any = None, pooling: Any = None,
          classes: int = 1000, classifier_activation: Any = "softmax") -> Any:
    """VGG19 (143.7M parameters with the top; its top flattens 7x7x512, so it needs 224x224)."""
    return vgg16.build(_BLOCKS, "vgg19", include_top, weights, input_tensor, input_shape,
                       pooling, classes, classifier_activation)


preprocess_input = vgg16.preprocess_input
decode_predictions = imagenet_utils.decode_predictions
