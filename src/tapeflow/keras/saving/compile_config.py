"""What ``compile`` was given, as tf-keras writes it (``compile_config`` / ``training_config``),
and the optimizer's variables, so a loaded model goes on training where it stopped."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from tapeflow.keras.saving.serialization import deserialize_keras_object, serialize_keras_object


def compile_config(model: Any) -> dict | None:
    """``{"optimizer", "loss", "metrics", "loss_weights", ...}`` of a compiled model."""
    if getattr(model, "optimizer", None) is None or getattr(model, "compiled_loss", None) is None:
        return None
    metrics = model.compiled_metrics._spec if model.compiled_metrics is not None else None
    optimizer = serialize_keras_object(model.optimizer)
    if not optimizer["config"].get("decay"):  # tf-keras's optimizers refuse a `decay` argument
        optimizer["config"].pop("decay", None)
    return {"optimizer": optimizer,
            "loss": serialize_keras_object(model.compiled_loss._spec),
            "metrics": serialize_keras_object(metrics),
            "loss_weights": serialize_keras_object(model.compiled_loss._weights_spec),
            "weighted_metrics": None, "run_eagerly": None, "steps_per_execution": None,
            "jit_compile": None}


def compile_from_config(model: Any, config: dict, custom_objects: dict | None = None) -> None:
    """``model.compile(...)`` with what `compile_config` recorded (tf-keras's too)."""
    optimizer = config.get("optimizer") or config.get("optimizer_config")
    if isinstance(optimizer, dict):
        optimizer = dict(optimizer)
        if isinstance(optimizer.get("class_name"), str) and optimizer["class_name"].startswith(
                "Custom>"):  # tf-keras's legacy h5 files name built-in optimizers so
            optimizer["class_name"] = optimizer["class_name"][len("Custom>"):]
        inner = dict(optimizer.get("config", {}))
        if inner.get("use_ema") or inner.get("weight_decay"):
            raise ValueError(f"{optimizer.get('class_name')}: use_ema and weight_decay "
                             "(Keras 3 style optimizers) are not supported by tapeflow's "
                             "Keras 2 optimizers")
        optimizer["config"] = {k: v for k, v in inner.items() if k not in _NEW_OPTIMIZER_ONLY}
    model.compile(optimizer=deserialize_keras_object(optimizer, custom_objects,
                                                     kind="optimizers"),
                  loss=_objects(config.get("loss"), custom_objects, "losses"),
                  metrics=_objects(config.get("metrics"), custom_objects, "metrics"),
                  loss_weights=config.get("loss_weights"),
                  weighted_metrics=_objects(config.get("weighted_metrics"), custom_objects,
                                            "metrics"))


# tf-keras's (Keras 3 style) optimizer arguments with no meaning in Keras 2's optimizers
_NEW_OPTIMIZER_ONLY = frozenset({"weight_decay", "use_ema", "ema_momentum",
                                 "ema_overwrite_frequency", "jit_compile", "is_legacy_optimizer"})


def _objects(spec: Any, custom_objects: dict | None, kind: str) -> Any:
    if isinstance(spec, dict) and "class_name" in spec:
        return deserialize_keras_object(spec, custom_objects, kind=kind)
    if isinstance(spec, dict):
        return {k: _objects(v, custom_objects, kind) for k, v in spec.items()}
    if isinstance(spec, list):
        return [_objects(v, custom_objects, kind) for v in spec]
    return spec


def build_optimizer_slots(model: Any) -> list:
    """Create the optimizer's slots for every trainable variable (in training's order) and
    return all its variables: what a saved optimizer state is restored into."""
    optimizer = model.optimizer
    for var in model.trainable_variables:
        optimizer._create_slots(var)
    return optimizer.variables()


def restore_optimizer(model: Any, values: list[np.ndarray]) -> None:
    """Assign saved optimizer variables; warn and skip (as Keras does) when they differ."""
    optimizer = model.optimizer
    if len(values) == 1:  # iterations only: the optimizer had not stepped when saved
        variables = optimizer.variables()[:1]
    else:
        variables = build_optimizer_slots(model)
    shapes_ok = len(values) == len(variables) and all(
        tuple(v.shape.as_list()) == np.shape(x) for v, x in zip(variables, values))
    if not shapes_ok:
        warnings.warn(f"Skipping variable loading for optimizer '{optimizer.name}': it has "
                      f"{len(variables)} variables whereas the saved optimizer has "
                      f"{len(values)} variables.", stacklevel=3)
        return
    for var, value in zip(variables, values):
        var.assign(np.asarray(value, dtype=var.dtype.as_numpy_dtype))
