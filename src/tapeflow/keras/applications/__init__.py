"""``tf.keras.applications``: Keras's ImageNet architectures with its layer names, so Keras's
weight files load by name (``weights="path.h5"``). See docs/keras_applications.md."""

from __future__ import annotations

import importlib
from typing import Any

_MODELS = {
    "ResNet50": "resnet", "ResNet101": "resnet", "ResNet152": "resnet",
    "ResNet50V2": "resnet_v2", "ResNet101V2": "resnet_v2", "ResNet152V2": "resnet_v2",
    "MobileNet": "mobilenet", "MobileNetV2": "mobilenet_v2",
    "MobileNetV3Small": "mobilenet_v3", "MobileNetV3Large": "mobilenet_v3",
    "VGG16": "vgg16", "VGG19": "vgg19",
    "DenseNet121": "densenet", "DenseNet169": "densenet", "DenseNet201": "densenet",
    **{f"EfficientNetB{b}": "efficientnet" for b in range(8)},
    **{f"EfficientNetV2{v}": "efficientnet_v2" for v in ("B0", "B1", "B2", "B3", "S", "M", "L")},
    **{f"ConvNeXt{v}": "convnext" for v in ("Tiny", "Small", "Base", "Large", "XLarge")},
    "Xception": "xception", "InceptionV3": "inception_v3",
    "InceptionResNetV2": "inception_resnet_v2",
}
_SUBMODULES = ("convnext", "densenet", "efficientnet", "efficientnet_v2", "imagenet_utils",
               "inception_resnet_v2", "inception_v3", "mobilenet", "mobilenet_v2",
               "mobilenet_v3", "resnet", "resnet50", "resnet_v2", "vgg16", "vgg19", "xception")


def __getattr__(name: str) -> Any:
    if name in _MODELS:
        return getattr(importlib.import_module(f"tapeflow.keras.applications.{_MODELS[name]}"),
                       name)
    if name in _SUBMODULES:
        module = "resnet" if name == "resnet50" else name  # keras.applications.resnet50 alias
        return importlib.import_module(f"tapeflow.keras.applications.{module}")
    raise AttributeError(f"module 'tapeflow.keras.applications' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_MODELS) | set(_SUBMODULES))
