"""``tf.keras``: layers, models, losses, metrics, optimizers, callbacks and the training loop.

Submodules load on first access (``tf.keras.layers`` imports the layer library only when used),
which keeps ``import tapeflow`` fast and lets the engine and the layer library import each other
without cycles.
"""

from __future__ import annotations

import importlib
from typing import Any

from tapeflow.version import KERAS_VERSION as __version__

_SUBMODULES = ("activations", "applications", "backend", "callbacks", "constraints", "datasets",
               "engine", "initializers", "layers", "losses", "metrics", "mixed_precision",
               "models", "optimizers", "preprocessing", "regularizers", "saving", "utils")

_NAMES = {
    "Model": "tapeflow.keras.engine.training",
    "Sequential": "tapeflow.keras.engine.sequential",
    "Input": "tapeflow.keras.engine.input_layer",
}


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"tapeflow.keras.{name}")
    if name in _NAMES:
        return getattr(importlib.import_module(_NAMES[name]), name)
    raise AttributeError(f"module 'tapeflow.keras' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_SUBMODULES) | set(_NAMES))
