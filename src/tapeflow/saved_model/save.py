"""``tf.saved_model.save(obj, export_dir, signatures=None)``.

Writes ``export_dir/saved_model.json`` (the object graph, the traced functions as graph-IR
JSON (`graph_json`), the signatures) and ``export_dir/variables/variables.safetensors``; a
Keras model also gets ``keras_model.keras`` so ``tf.keras.models.load_model(dir)`` rebuilds
the Keras model itself. The directory is written next to its place and renamed into it, so
a crash never leaves half a SavedModel.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import warnings
from typing import Any

import numpy as np

from tapeflow.saved_model import graph_json
from tapeflow.saved_model import options as options_lib

FORMAT = "tapeflow.saved_model"
SERVING = "serving_default"


class _Writer:
    def __init__(self) -> None:
        self.objects: list[dict] = []
        self.ids: dict[int, int] = {}
        self.variables: list = []
        self.variable_ids: dict[int, int] = {}
        self.concretes: list[dict] = []
        self.concrete_ids: dict[int, int] = {}

    def variable(self, var: Any) -> int:
        if id(var) not in self.variable_ids:
            self.variable_ids[id(var)] = len(self.variables)
            self.variables.append(var)
        return self.variable_ids[id(var)]

    def concrete(self, concrete: Any) -> int:
        if id(concrete) not in self.concrete_ids:
            self.concrete_ids[id(concrete)] = len(self.concretes)
            entry: dict = {}
            self.concretes.append(entry)
            entry.update({
                "name": concrete.name,
                "graph": graph_json.encode_graph(concrete.traced_graph, self.variable),
                "outputs": _encode_structure(concrete.structured_outputs, concrete.name),
                "input_paths": list(concrete.input_paths),
            })
        return self.concrete_ids[id(concrete)]

    def add(self, obj: Any) -> int:
        """The object's node index (walking its children the first time)."""
        from tapeflow.framework.variable import Variable
        from tapeflow.graph.function import Function

        if id(obj) in self.ids:
            return self.ids[id(obj)]
        index = len(self.objects)
        self.ids[id(obj)] = index
        node: dict = {}
        self.objects.append(node)
        if isinstance(obj, Variable):
            node.update(kind="variable", variable=self.variable(obj))
        elif isinstance(obj, Function):
            concretes = list(obj._concretes)
            if not concretes and obj.input_signature is not None:
                concretes = [obj.get_concrete_function()]
            node.update(kind="function", concretes=[self.concrete(c) for c in concretes])
        elif isinstance(obj, (list, tuple)):
            node.update(kind="list", items=[self.add(x) for x in obj if _trackable(x)])
        elif isinstance(obj, dict):
            node.update(kind="dict", items={str(k): self.add(v) for k, v in obj.items()
                                            if _trackable(v)})
        else:
            node.update(kind="object", children={name: self.add(value) for name, value
                                                 in _children(obj)})
        return index


class _Callable:
    """The root saved for a bare tf.function: ``loaded(x)`` calls it."""

    def __init__(self, fn: Any) -> None:
        self.fn = fn


def _trackable(value: Any) -> bool:
    from tapeflow.framework.module import Module
    from tapeflow.framework.variable import Variable
    from tapeflow.graph.function import Function
    from tapeflow.keras.engine.base_layer import Layer

    if isinstance(value, (Variable, Module, Layer, Function)):
        return True
    if isinstance(value, (list, tuple)):
        return any(_trackable(x) for x in value)
    if isinstance(value, dict):
        return any(_trackable(x) for x in value.values())
    return False


def _children(obj: Any) -> list[tuple[str, Any]]:
    """(name, value) of the tracked attributes: variables, modules, layers, tf.functions."""
    from tapeflow.graph.function import Function
    from tapeflow.keras.engine.training import Model

    out = {}
    for name, value in vars(obj).items():
        if not name.startswith("_") and _trackable(value):
            out[name] = value
    for name in dir(type(obj)):
        if (not name.startswith("_") or name == "__call__") and isinstance(
                getattr(type(obj), name, None), Function):
            out[name] = getattr(obj, name)
    if isinstance(obj, Model):
        out["layers"] = obj.layers
    if isinstance(obj, _Callable):
        out = {"__call__": obj.fn}
    return sorted(out.items())


def _encode_structure(structure: Any, name: str) -> Any:
    from tapeflow.graph.function import _PyLeaf

    if isinstance(structure, int):
        return structure
    if isinstance(structure, _PyLeaf):
        value = structure.value
        if value is None or isinstance(value, (bool, int, float, str)):
            return {"py": value}
        raise graph_json.FormatError(f"function {name} returns {type(value).__name__}, which "
                                     "a SavedModel cannot store")
    if isinstance(structure, tuple):
        return {"tuple": [_encode_structure(s, name) for s in structure]}
    if isinstance(structure, list):
        return [_encode_structure(s, name) for s in structure]
    if isinstance(structure, dict):
        return {"dict": {str(k): _encode_structure(v, name) for k, v in structure.items()}}
    raise graph_json.FormatError(f"function {name}: cannot store an output of type "
                                 f"{type(structure).__name__}")


def _input_names(concrete: Any, specs: Any) -> list[str]:
    """Keyword names of a signature: the TensorSpecs' names, else the traced argument paths."""
    paths = [p.replace("[", "_").replace("]", "").split("/")[-1] for p in concrete.input_paths]
    names = [getattr(s, "name", None) for s in (specs or [])]
    if len(names) == len(paths):
        paths = [n or p for n, p in zip(names, paths)]
    return paths


def _signature_concretes(obj: Any, signatures: Any) -> dict[str, tuple]:
    """{key: (concrete function, input specs)} for the signatures (TF's defaults when None)."""
    from tapeflow.graph.function import ConcreteFunction, Function
    from tapeflow.keras.engine.training import Model

    if signatures is None:
        if isinstance(obj, Model) and _keras_input_specs(obj):
            return {SERVING: _keras_serving(obj)}
        found = [v for _, v in _children(obj) if isinstance(v, Function)
                 and v.input_signature is not None]
        return {SERVING: (found[0].get_concrete_function(), found[0].input_signature)} \
            if len(found) == 1 else {}
    if not isinstance(signatures, dict):
        signatures = {SERVING: signatures}
    out = {}
    for key, fn in signatures.items():
        specs = None
        if isinstance(fn, Function):
            specs = fn.input_signature
            fn = fn.get_concrete_function()
        if not isinstance(fn, ConcreteFunction):
            raise TypeError(f"signatures[{key!r}] must be a tf.function with an "
                            f"input_signature or a concrete function, got {type(fn).__name__}")
        out[key] = (fn, specs)
    return out


def _keras_input_specs(model: Any) -> list | None:
    """The model's input specs: its Inputs, or (subclassed) the shape it was built with."""
    import tapeflow as tf

    inputs = getattr(model, "inputs", None)
    if inputs:
        names = list(getattr(model, "input_names", None) or ["input_1"])
        return [tf.TensorSpec(x.shape.as_list(), x.dtype, name=n) for x, n in zip(inputs, names)]
    shape = getattr(model, "_build_input_shape", None)
    if isinstance(shape, list) and shape and all(d is None or isinstance(d, int) for d in shape):
        return [tf.TensorSpec([None] + shape[1:], model.dtype, name="input_1")]
    return None


def _keras_serving(model: Any) -> Any:
    """Keras's default signature: the model in inference mode on its own inputs."""
    import tapeflow as tf

    specs = _keras_input_specs(model)
    output_names = list(getattr(model, "output_names", None) or ["output_1"])

    def serve(*inputs: Any) -> dict:
        outputs = model(list(inputs) if len(inputs) > 1 else inputs[0], training=False)
        flat = tf.nest.flatten(outputs)
        return {name: out for name, out in zip(output_names, flat)}

    serve.__name__ = "serving_default"
    fn = tf.function(serve, input_signature=specs)
    return fn.get_concrete_function(), specs


def save(obj: Any, export_dir: str, signatures: Any = None, options: Any = None) -> None:
    """Save `obj` (a tf.Module, a Keras model, any object holding variables and
    tf.functions) as a SavedModel directory."""
    from safetensors.numpy import save_file

    from tapeflow.graph.function import Function
    from tapeflow.keras.engine.training import Model

    options_lib.checked(options, options_lib.SaveOptions, "tf.saved_model.save")
    export_dir = os.fspath(export_dir)
    if isinstance(obj, Function):  # a bare tf.function: the loaded object calls it
        if signatures is None and obj.input_signature is not None:
            signatures = obj
        obj = _Callable(obj)
    writer = _Writer()
    signature_map = {key: {"function": writer.concrete(c), "inputs": _input_names(c, specs)}
                     for key, (c, specs) in _signature_concretes(obj, signatures).items()}
    writer.add(obj)
    tracked_paths = _variable_paths(writer)
    arrays = {f"v{i}": np.ascontiguousarray(v.numpy()) for i, v in enumerate(writer.variables)}
    document = {
        "format": FORMAT, "version": graph_json.VERSION,
        "producer": _producer(),
        "objects": writer.objects,
        "concrete_functions": writer.concretes,
        "signatures": signature_map,
        "variables": [{"key": f"v{i}", "name": v.name, "dtype": v.dtype.name,
                       "shape": v.shape.as_list(), "trainable": bool(v.trainable),
                       "path": tracked_paths.get(i)} for i, v in enumerate(writer.variables)],
    }
    parent = os.path.dirname(os.path.abspath(export_dir))
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(dir=parent, prefix=".tmp-saved-model-")
    try:
        os.makedirs(os.path.join(tmp, "variables"))
        save_file(arrays, os.path.join(tmp, "variables", "variables.safetensors"))
        with open(os.path.join(tmp, "saved_model.json"), "w") as f:
            json.dump(document, f)
        if isinstance(obj, Model):
            _save_keras(obj, os.path.join(tmp, "keras_model.keras"))
        if os.path.isdir(export_dir):
            old = export_dir.rstrip("/") + ".old-" + os.path.basename(tmp)
            os.replace(export_dir, old)
            os.replace(tmp, export_dir)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, export_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _save_keras(model: Any, path: str) -> None:
    from tapeflow.keras.saving import keras_zip

    try:
        keras_zip.save(model, path)
    except (NotImplementedError, TypeError, ValueError) as e:
        warnings.warn(f"SavedModel: the Keras model itself is not saved ({e}); load() still "
                      "restores its variables and functions", stacklevel=3)


def _variable_paths(writer: _Writer) -> dict[int, str]:
    """variable index -> its first attribute path from the root ("dense/kernel")."""
    paths: dict[int, str] = {}
    stack = [(0, "")]
    seen = set()
    while stack:
        index, path = stack.pop(0)
        if index in seen:
            continue
        seen.add(index)
        node = writer.objects[index]
        if node["kind"] == "variable":
            paths.setdefault(node["variable"], path)
        children = node.get("children") or node.get("items") or {}
        items = children.items() if isinstance(children, dict) else enumerate(children)
        for name, child in items:
            stack.append((child, f"{path}/{name}" if path else str(name)))
    return paths


def _producer() -> str:
    import tapeflow

    return f"tapeflow {tapeflow.__version__}"
