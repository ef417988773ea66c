"""Keras model files: ``.keras`` (zip), Keras 2 HDF5, configs and custom-object registration.

See docs/saving.md for the formats and how tapeflow reads and writes them.
"""

from tapeflow.keras.saving.model_config import clone_model
from tapeflow.keras.saving.object_registration import (
    CustomObjectScope,
    custom_object_scope,
    get_custom_objects,
    get_registered_name,
    get_registered_object,
    register_keras_serializable,
)
from tapeflow.keras.saving.saving_api import (
    load_model,
    model_from_config,
    model_from_json,
    save_model,
)
from tapeflow.keras.saving.serialization import deserialize_keras_object, serialize_keras_object

__all__ = ["CustomObjectScope", "clone_model", "custom_object_scope", "deserialize_keras_object",
           "get_custom_objects", "get_registered_name", "get_registered_object", "load_model",
           "model_from_config", "model_from_json", "register_keras_serializable", "save_model",
           "serialize_keras_object"]
