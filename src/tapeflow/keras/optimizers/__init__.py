"""``tf.keras.optimizers``: SGD, Adam, AdamW, RMSprop, Adagrad, Adadelta, Adamax, Nadam, Ftrl,
Lion with Keras 2 update rules, and schedules.

``tf.keras.optimizers.legacy`` (legacy.py) holds subclasses with the Keras 2 (optimizer_v2)
differences: Adagrad's epsilon outside the root, Nadam's momentum schedule, and TF's sparse
kernels that leave rows without a gradient alone.
"""

from __future__ import annotations

from typing import Any

from tapeflow.keras.optimizers import legacy, schedules
from tapeflow.keras.optimizers.adadelta import Adadelta
from tapeflow.keras.optimizers.adafactor import Adafactor
from tapeflow.keras.optimizers.adagrad import Adagrad
from tapeflow.keras.optimizers.adam import Adam
from tapeflow.keras.optimizers.adamax import Adamax
from tapeflow.keras.optimizers.adamw import AdamW
from tapeflow.keras.optimizers.ftrl import Ftrl
from tapeflow.keras.optimizers.lion import Lion
from tapeflow.keras.optimizers.nadam import Nadam
from tapeflow.keras.optimizers.optimizer import Optimizer
from tapeflow.keras.optimizers.rmsprop import RMSprop
from tapeflow.keras.optimizers.sgd import SGD

_BY_NAME = {"sgd": SGD, "adam": Adam, "adamw": AdamW, "rmsprop": RMSprop, "adagrad": Adagrad,
            "adadelta": Adadelta, "adafactor": Adafactor, "adamax": Adamax, "nadam": Nadam,
            "ftrl": Ftrl, "lion": Lion}



def serialize(optimizer: Optimizer) -> dict[str, Any]:
    """{'class_name': ..., 'config': ...} describing `optimizer`."""
    return {"class_name": type(optimizer).__name__, "config": optimizer.get_config()}


def deserialize(config: dict[str, Any], custom_objects: dict | None = None) -> Optimizer:
    """The optimizer `serialize` described (class names matched case-insensitively)."""
    classes = {k: v for k, v in _BY_NAME.items()}
    classes.update({k.lower(): v for k, v in (custom_objects or {}).items()})
    name = str(config.get("class_name", "")).lower()
    if name not in classes:
        raise ValueError(f"Unknown optimizer: {config.get('class_name')!r}. Known: "
                         f"{sorted(classes)}")
    return classes[name].from_config(config.get("config", {}))


def get(identifier: Any) -> Optimizer:
    """An optimizer from a name ('adam'), a config dict or an instance (returned as is)."""
    if isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str):
        cls = _BY_NAME.get(identifier.lower())
        if cls is None:
            raise ValueError(f"Unknown optimizer: {identifier!r}. Known: {sorted(_BY_NAME)}")
        return cls()
    raise ValueError(f"Could not interpret optimizer identifier: {identifier!r} (expected a "
                     f"name such as 'adam', a config dict or an Optimizer instance)")


__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adafactor",
           "Adamax",
           "Nadam", "Ftrl", "Lion", "schedules", "legacy", "get", "serialize", "deserialize"]
