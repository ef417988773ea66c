"""``model.save`` / ``tf.keras.models.load_model`` and the weights-only files: one entry
point that picks the format from the path, as tf-keras does.

- ``*.keras``: the zip format (`keras_zip`); ``*.h5`` / ``*.hdf5``: Keras 2's HDF5 files
  (`legacy_h5`); any other path: a SavedModel directory (`tapeflow.saved_model`).
- ``save_weights``: ``*.weights.h5`` in the ``.keras`` weights layout, other ``*.h5`` in
  Keras 2's layout, anything else a tapeflow checkpoint.
"""

from __future__ import annotations

import json
import os
from typing import Any

from tapeflow.keras.saving import h5_store, keras_zip, legacy_h5
from tapeflow.keras.saving.serialization import deserialize_keras_object, serialize_keras_object

_H5 = (".h5", ".hdf5")


def _ext(filepath: Any) -> str:
    return os.path.splitext(os.fspath(filepath))[1].lower()


def save_model(model: Any, filepath: Any, overwrite: bool = True, include_optimizer: bool = True,
               save_format: str | None = None, **kwargs: Any) -> None:
    """Save `model` in the format its path (or `save_format`) names."""
    filepath = os.fspath(filepath)
    fmt = save_format or {".keras": "keras", ".h5": "h5", ".hdf5": "h5"}.get(_ext(filepath), "tf")
    if not overwrite and os.path.exists(filepath):
        raise FileExistsError(f"{filepath} exists and overwrite=False")
    if fmt == "keras":
        keras_zip.save(model, filepath, include_optimizer)
    elif fmt == "h5":
        legacy_h5.save(model, filepath, include_optimizer)
    elif fmt == "tf":
        from tapeflow import saved_model

        saved_model.save(model, filepath, signatures=kwargs.get("signatures"))
    else:
        raise ValueError(f"Unknown save_format {save_format!r}: use 'keras', 'h5' or 'tf'")


def load_model(filepath: Any, custom_objects: dict | None = None, compile: bool = True,
               safe_mode: bool = True, **kwargs: Any) -> Any:
    """The model saved at `filepath` (``.keras``, ``.h5`` or a SavedModel directory)."""
    filepath = os.fspath(filepath)
    if os.path.isdir(filepath):
        keras_file = os.path.join(filepath, "keras_model.keras")
        if os.path.isfile(keras_file):  # a Keras model's SavedModel holds the model itself
            return keras_zip.load(keras_file, custom_objects, compile)
        from tapeflow import saved_model

        return saved_model.load(filepath)
    if not os.path.exists(filepath):
        raise FileNotFoundError(f"No file or directory found at {filepath}")
    with open(filepath, "rb") as f:
        head = f.read(8)
    if legacy_h5.is_hdf5(head):
        return legacy_h5.load(filepath, custom_objects, compile)
    if head[:2] == b"PK":
        return keras_zip.load(filepath, custom_objects, compile)
    raise ValueError(f"{filepath}: neither a .keras (zip) nor an HDF5 file, nor a SavedModel "
                     "directory")


def save_weights(model: Any, filepath: Any, save_format: str | None = None) -> bool:
    """Write an HDF5 weights file when the path ends in .h5 (or `save_format` is "h5");
    False for other paths (the caller writes a checkpoint)."""
    filepath = os.fspath(filepath)
    if filepath.endswith(".weights.h5"):
        with h5_store.atomic_write(filepath) as out, h5_store.open_h5(out, "w") as f:
            keras_zip.write_weights(f, model, include_optimizer=False)
        return True
    if save_format == "h5" or _ext(filepath) in _H5:
        legacy_h5.save_weights(model, filepath)
        return True
    return False


def load_weights(model: Any, filepath: Any, by_name: bool = False,
                 skip_mismatch: bool = False) -> bool:
    """Read an HDF5 weights file (either layout); False when `filepath` is not HDF5."""
    filepath = os.fspath(filepath)
    if not os.path.isfile(filepath):
        return False
    with open(filepath, "rb") as f:
        if not legacy_h5.is_hdf5(f.read(8)):
            return False
    with h5_store.open_h5(filepath, "r", filepath) as f:
        if "layer_names" in f.attrs:
            legacy_h5.read_weight_groups(f, model, filepath, by_name, skip_mismatch)
        elif "model_weights" in f:
            legacy_h5.read_weight_groups(f["model_weights"], model, filepath, by_name,
                                         skip_mismatch)
        else:
            keras_zip.read_weights(f, model, filepath, restore_optimizer=False)
    return True


def model_to_json(model: Any, **kwargs: Any) -> str:
    config = legacy_h5.legacy_config(serialize_keras_object(model))
    return json.dumps({"class_name": config["class_name"], "config": config["config"],
                       "keras_version": keras_zip.FORMAT_VERSION, "backend": "tensorflow"},
                      **kwargs)


def model_from_json(json_string: str, custom_objects: dict | None = None) -> Any:
    """The (untrained) model a ``to_json`` string describes."""
    try:
        config = json.loads(json_string)
    except json.JSONDecodeError as e:
        raise ValueError(f"model_from_json: not valid JSON ({e})") from None
    return deserialize_keras_object(config, custom_objects)


def model_from_config(config: dict, custom_objects: dict | None = None) -> Any:
    return deserialize_keras_object(config, custom_objects)
