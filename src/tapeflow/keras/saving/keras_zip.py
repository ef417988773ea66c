"""The ``.keras`` format of tf-keras 2.x: a zip of ``config.json``, ``metadata.json`` and
``model.weights.h5`` (HDF5 through h5py; layout in `weights_tree`).

Loading reads JSON and arrays only: the config names classes that must be built in or
registered (`serialization`), so a file cannot run code.
"""

from __future__ import annotations

import datetime
import io
import json
import zipfile
from typing import Any

from tapeflow.keras.saving import compile_config as compile_lib
from tapeflow.keras.saving import h5_store, weights_tree
from tapeflow.keras.saving.serialization import deserialize_keras_object, serialize_keras_object

FORMAT_VERSION = "2.21.0"  # the tf-keras release whose file layout this follows
_NAMES = ("config.json", "metadata.json", "model.weights.h5")
_MAX_JSON = 64 << 20


def save(model: Any, filepath: str, include_optimizer: bool = True) -> None:
    """Write `model` (config, compile state, weights, optimizer state) to `filepath`."""
    import tapeflow

    config = serialize_keras_object(model)
    compiled = compile_lib.compile_config(model) if include_optimizer else None
    if compiled is not None:
        config["compile_config"] = compiled
    metadata = {"keras_version": FORMAT_VERSION, "tapeflow_version": tapeflow.__version__,
                "date_saved": datetime.datetime.now().strftime("%Y-%m-%d@%H:%M:%S")}
    weights = io.BytesIO()
    with h5_store.open_h5(weights, "w") as f:
        write_weights(f, model, include_optimizer)
    with h5_store.atomic_write(filepath) as out, zipfile.ZipFile(out, "w") as zf:
        zf.writestr("metadata.json", json.dumps(metadata))
        zf.writestr("config.json", json.dumps(config))
        zf.writestr("model.weights.h5", weights.getvalue())


def write_weights(f: Any, model: Any, include_optimizer: bool = True) -> None:
    """Every layer's variables (and the optimizer's) in tf-keras's ``.weights.h5`` layout."""
    for path, layer in weights_tree.walk(model):
        group = f.create_group(f"{path}/vars" if path else "vars")
        for i, var in enumerate(weights_tree.own_variables(layer)):
            group.create_dataset(str(i), data=var.numpy())
    optimizer = getattr(model, "optimizer", None)
    if include_optimizer and optimizer is not None:
        group = f.create_group("optimizer/vars")
        for i, var in enumerate(optimizer.variables()):
            group.create_dataset(str(i), data=var.numpy())


def read_weights(f: Any, model: Any, source: str, restore_optimizer: bool = True) -> None:
    """Assign the variables `write_weights` wrote (by tapeflow or tf-keras) to `model`."""
    for path, layer in weights_tree.walk(model):
        variables = weights_tree.own_variables(layer)
        key = f"{path}/vars" if path else "vars"
        stored = h5_store.datasets(f, key, source) if key in f else []
        if len(stored) != len(variables):
            raise ValueError(
                f"{source}: layer '{layer.name}' ({type(layer).__name__}, at '{key}') expects "
                f"{len(variables)} variables, but the file holds {len(stored)}. Was it saved "
                "from a model with a different architecture?")
        h5_store.assign(variables, stored, f"{source}: layer '{layer.name}'")
    optimizer = getattr(model, "optimizer", None)
    if restore_optimizer and optimizer is not None and "optimizer/vars" in f:
        compile_lib.restore_optimizer(model, h5_store.datasets(f, "optimizer/vars", source))


def load(filepath: str, custom_objects: dict | None = None, compile: bool = True) -> Any:
    """The model a ``.keras`` file holds."""
    try:
        zf = zipfile.ZipFile(filepath)
    except zipfile.BadZipFile as e:
        raise ValueError(f"{filepath}: not a .keras file (not a zip archive: {e})") from None
    with zf:
        names = set(zf.namelist())
        missing = [n for n in ("config.json", "model.weights.h5") if n not in names]
        if missing:
            raise ValueError(f"{filepath}: not a .keras file, missing {missing} (has "
                             f"{sorted(names)[:10]})")
        config = _json(zf, "config.json", filepath)
        weights = zf.read("model.weights.h5")
    if not isinstance(config, dict):
        raise ValueError(f"{filepath}: config.json must hold a JSON object")
    model = deserialize_keras_object(config, custom_objects)
    if compile and config.get("compile_config"):
        compile_lib.compile_from_config(model, config["compile_config"], custom_objects)
    with h5_store.open_h5(io.BytesIO(weights), "r", filepath) as f:
        read_weights(f, model, filepath, restore_optimizer=compile)
    return model


def _json(zf: zipfile.ZipFile, name: str, source: str) -> Any:
    if zf.getinfo(name).file_size > _MAX_JSON:
        raise ValueError(f"{source}: {name} is larger than {_MAX_JSON >> 20} MB")
    try:
        return json.loads(zf.read(name))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{source}: {name} is not valid JSON ({e})") from None

