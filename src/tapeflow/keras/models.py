"""``tf.keras.models``: the model classes under their Keras module path."""

from tapeflow.keras.engine.functional import Functional
from tapeflow.keras.engine.sequential import Sequential
from tapeflow.keras.engine.training import Model
from tapeflow.keras.saving import (
    clone_model,
    load_model,
    model_from_config,
    model_from_json,
    save_model,
)

__all__ = ["Functional", "Model", "Sequential", "clone_model", "load_model", "model_from_config",
           "model_from_json", "save_model"]
