"""``tf.keras.models``: the model classes under their Keras module path."""

from tapeflow.keras.engine.functional import Functional
from tapeflow.keras.engine.sequential import Sequential
from tapeflow.keras.engine.training import Model

__all__ = ["Functional", "Model", "Sequential"]
