"""``tf.keras.layers.serialize`` / ``deserialize``: a layer to and from its config dict.

The format is tf-keras 2's: ``{"module": "keras.layers", "class_name": "Dense", "config":
{...}, "registered_name": None}`` (plus ``build_config`` for a built layer), or the legacy
``{"class_name", "config"}`` with ``use_legacy_format=True``. Classes are found among
tapeflow's layers, the registered custom objects and `custom_objects`: nothing named in a
config is imported.
"""

from __future__ import annotations

from typing import Any

from tapeflow.keras.saving import serialization


def serialize(layer: Any, use_legacy_format: bool = False) -> dict:
    """The config dict that `deserialize` turns back into an equivalent layer."""
    from tapeflow.keras.engine.base_layer import Layer

    if not isinstance(layer, Layer):
        raise TypeError(f"tf.keras.layers.serialize: expected a Layer, got {layer!r}")
    config = serialization.serialize_keras_object(layer)
    if use_legacy_format:
        return {"class_name": config["class_name"], "config": config["config"]}
    return config


def deserialize(config: dict, custom_objects: dict | None = None,
                use_legacy_format: bool = False) -> Any:
    """The layer (or model) a `serialize`d config describes."""
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError("tf.keras.layers.deserialize: expected a dict with 'class_name' and "
                         f"'config', got {config!r}")
    return serialization.deserialize_keras_object(config, custom_objects, kind="layers")
