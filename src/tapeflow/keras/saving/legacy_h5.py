"""Keras 2's HDF5 files: ``model.save("m.h5")`` and ``save_weights("w.h5")``.

Root attributes ``model_config`` / ``training_config`` (JSON), a ``model_weights`` group (the
whole file, for ``save_weights``) with ``layer_names``, one group per layer with
``weight_names`` and a dataset per weight under its name (``dense/kernel:0``), and
``optimizer_weights``. Weights are matched to layers in order, layers with no weights left
out (``by_name=True`` matches layer names instead), as Keras 2 does.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from tapeflow.keras.saving import compile_config as compile_lib
from tapeflow.keras.saving import h5_store
from tapeflow.keras.saving.keras_zip import FORMAT_VERSION
from tapeflow.keras.saving.serialization import deserialize_keras_object, serialize_keras_object


def _names(values: list[str]) -> np.ndarray:
    return np.array([v.encode("utf8") for v in values], dtype=object) if values else \
        np.array([], dtype="S1")


def _decode(values: Any) -> list[str]:
    return [v.decode("utf8") if isinstance(v, bytes) else str(v) for v in values]


def _unique(names: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for name in names:
        seen[name] = seen.get(name, -1) + 1
        out.append(name if not seen[name] else f"{name}_{seen[name]}")
    return out


def write_weight_groups(group: Any, model: Any) -> None:
    """``layer_names`` plus one group per layer (the Keras 2 weights layout)."""
    group.attrs["backend"] = "tensorflow"
    group.attrs["keras_version"] = FORMAT_VERSION
    group.attrs["layer_names"] = _names([layer.name for layer in model.layers])
    for layer in model.layers:
        sub = group.create_group(layer.name)
        variables = layer.weights
        names = _unique([v.name for v in variables])
        sub.attrs["weight_names"] = _names(names)
        for name, var in zip(names, variables):
            sub.create_dataset(name, data=var.numpy())
    top = group.create_group("top_level_model_weights")
    top.attrs["weight_names"] = _names([])


def read_weight_groups(group: Any, model: Any, source: str, by_name: bool = False,
                       skip_mismatch: bool = False) -> None:
    """Assign the weights `write_weight_groups` (or Keras 2) wrote."""
    if "layer_names" not in group.attrs:
        raise ValueError(f"{source}: no 'layer_names' attribute: not a Keras 2 weights file")
    stored = []
    for name in _decode(group.attrs["layer_names"]):
        g = group[name]
        weight_names = _decode(g.attrs.get("weight_names", []))
        if weight_names:
            stored.append((name, [np.asarray(g[w]) for w in weight_names]))
    if by_name:
        layers = {layer.name: layer for layer in model.layers}
        for name, values in stored:
            if name in layers:
                _set(layers[name], values, source, skip_mismatch)
        return
    layers = [layer for layer in model.layers if layer.weights]
    if len(layers) != len(stored):
        raise ValueError(f"{source}: the file holds weights for {len(stored)} layers "
                         f"({[n for n, _ in stored]}), but the model has {len(layers)} layers "
                         f"with weights ({[layer.name for layer in layers]})")
    for layer, (_, values) in zip(layers, stored):
        _set(layer, values, source, skip_mismatch)


def _set(layer: Any, values: list, source: str, skip_mismatch: bool) -> None:
    variables = layer.weights
    if len(variables) != len(values) or any(
            tuple(v.shape.as_list()) != x.shape for v, x in zip(variables, values)):
        if skip_mismatch:
            return
        raise ValueError(f"{source}: layer '{layer.name}' has weights of shapes "
                         f"{[tuple(v.shape.as_list()) for v in variables]}, the file holds "
                         f"{[x.shape for x in values]}")
    h5_store.assign(variables, values, f"{source}: layer '{layer.name}'")


def save_weights(model: Any, filepath: str) -> None:
    with h5_store.atomic_write(filepath) as out, h5_store.open_h5(out, "w") as f:
        write_weight_groups(f, model)


def save(model: Any, filepath: str, include_optimizer: bool = True) -> None:
    """``model.save("m.h5")``: config, weights and (optionally) training state."""
    from tapeflow.keras.engine.functional import Functional
    from tapeflow.keras.engine.sequential import Sequential

    if not isinstance(model, (Functional, Sequential)):  # tf-keras's refusal, word for word
        raise NotImplementedError(
            "Saving the model to HDF5 format requires the model to be a Functional model or a "
            "Sequential model. It does not work for subclassed models, because such models are "
            "defined via the body of a Python method, which isn't safely serializable. Consider "
            "saving to the Tensorflow SavedModel format (by setting save_format=\"tf\") or "
            "using `save_weights`.")
    config = serialize_keras_object(model)
    with h5_store.atomic_write(filepath) as out, h5_store.open_h5(out, "w") as f:
        f.attrs["backend"] = "tensorflow"
        f.attrs["keras_version"] = FORMAT_VERSION
        f.attrs["model_config"] = json.dumps(legacy_config(config))
        write_weight_groups(f.create_group("model_weights"), model)
        compiled = compile_lib.compile_config(model) if include_optimizer else None
        if compiled is not None:
            training = {k: compiled[k] for k in ("loss", "metrics", "loss_weights",
                                                 "weighted_metrics")}
            training["optimizer_config"] = {k: compiled["optimizer"][k]
                                            for k in ("class_name", "config")}
            f.attrs["training_config"] = json.dumps(training)
            variables = model.optimizer.variables()
            group = f.create_group("optimizer_weights")
            names = _unique([v.name for v in variables])
            group.attrs["weight_names"] = _names(names)
            for name, var in zip(names, variables):
                group.create_dataset(name, data=var.numpy())


def legacy_config(config: Any) -> Any:
    """Keras 2's form of a config: a custom class goes by its registered name
    (``"class_name": "fixtures>Scaled"``), with no ``module``/``registered_name`` keys."""
    if isinstance(config, list):
        return [legacy_config(c) for c in config]
    if not isinstance(config, dict):
        return config
    out = {k: legacy_config(v) for k, v in config.items()
           if k not in ("module", "registered_name")}
    registered = config.get("registered_name")
    if "class_name" in config and isinstance(registered, str) and ">" in registered:
        out["class_name"] = registered
    return out


def _json_attr(f: Any, key: str, source: str) -> Any:
    raw = f.attrs.get(key)
    if raw is None:
        return None
    try:
        return json.loads(raw.decode("utf8") if isinstance(raw, bytes) else raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{source}: attribute {key!r} is not valid JSON ({e})") from None


def load(filepath: str, custom_objects: dict | None = None, compile: bool = True) -> Any:
    """The model a Keras 2 ``.h5`` file holds."""
    with h5_store.open_h5(filepath, "r", filepath) as f:
        config = _json_attr(f, "model_config", filepath)
        if config is None:
            raise ValueError(f"{filepath}: no model found in config file (no 'model_config' "
                             "attribute; a weights-only file is read by load_weights)")
        model = deserialize_keras_object(config, custom_objects)
        read_weight_groups(f["model_weights"], model, filepath)
        training = _json_attr(f, "training_config", filepath) if compile else None
        if training:
            compile_lib.compile_from_config(model, training, custom_objects)
            if "optimizer_weights" in f:
                g = f["optimizer_weights"]
                values = [np.asarray(g[w]) for w in _decode(g.attrs.get("weight_names", []))]
                compile_lib.restore_optimizer(model, values)
    return model


def is_hdf5(data: bytes) -> bool:
    return data[:8] == b"\x89HDF\r\n\x1a\n"


