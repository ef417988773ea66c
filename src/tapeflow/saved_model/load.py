"""``tf.saved_model.load(export_dir)``: the saved object rebuilt from JSON and safetensors.

Nothing from the directory is executed: the JSON names ops (looked up in tapeflow's
registry) and object kinds; variables are arrays. The result is a plain object with the
saved attributes: variables (``loaded.dense.kernel``), sub-objects, lists and dicts, and
restored functions, which are callable with the input signatures they were traced for and
differentiable (their graphs carry tapeflow's gradient rules). ``loaded.signatures`` maps
signature keys to functions taking keyword tensors and returning a dict of outputs.
"""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np

from tapeflow.saved_model import graph_json
from tapeflow.saved_model import options as options_lib
from tapeflow.saved_model.save import FORMAT

_MAX_JSON = 512 << 20


class RestoredObject:
    """A saved object: its attributes are the saved children."""

    def _walk(self, seen: set) -> list:
        from tapeflow.framework.variable import Variable

        out: list = []

        def visit(item: Any) -> None:
            if id(item) in seen:
                return
            seen.add(id(item))
            if isinstance(item, Variable):
                out.append(item)
            elif isinstance(item, RestoredObject):
                out.extend(item._walk(seen))
            elif isinstance(item, (list, dict)):
                for child in (item if isinstance(item, list) else item.values()):
                    visit(child)

        for name in sorted(vars(self)):
            visit(vars(self)[name])
        return out

    @property
    def variables(self) -> list:
        return self._walk(set())

    @property
    def trainable_variables(self) -> list:
        return [v for v in self.variables if v.trainable]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        fn = vars(self).get("__call__")
        if fn is None:
            raise TypeError("this restored object was saved without a __call__ tf.function")
        return fn(*args, **kwargs)

    def __repr__(self) -> str:
        names = ", ".join(sorted(k for k in vars(self) if not k.startswith("_")))
        return f"<RestoredObject ({names})>"


class RestoredFunction:
    """A saved tf.function: runs the concrete function whose input signature fits."""

    def __init__(self, name: str, concretes: list) -> None:
        self.name, self.concrete_functions = name, concretes

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        errors = []
        for concrete in self.concrete_functions:
            try:
                return concrete(*args, **kwargs)
            except (TypeError, ValueError) as e:
                errors.append(str(e).splitlines()[0])
        signatures = [c.pretty_printed_signature() for c in self.concrete_functions]
        raise TypeError(f"restored function {self.name!r}: no saved signature matches the "
                        f"arguments. Saved: {signatures}. Errors: {errors}")

    def get_concrete_function(self, *args: Any, **kwargs: Any) -> Any:
        if not args and not kwargs and len(self.concrete_functions) == 1:
            return self.concrete_functions[0]
        raise NotImplementedError("get_concrete_function on a restored function: use "
                                  ".concrete_functions")


class SignatureFunction:
    """``loaded.signatures[key]``: keyword tensors in, a dict of named outputs out."""

    def __init__(self, concrete: Any, input_names: list[str]) -> None:
        self.concrete = concrete
        self.input_names = list(input_names)

    @property
    def structured_input_signature(self) -> Any:
        return self.concrete.structured_input_signature

    def __call__(self, *args: Any, **kwargs: Any) -> dict:
        if kwargs:
            missing = [n for n in self.input_names if n not in kwargs]
            if missing or args:
                raise TypeError(f"signature takes keyword arguments {self.input_names}, got "
                                f"{sorted(kwargs)}" + (" and positional ones" if args else ""))
            args = tuple(kwargs[n] for n in self.input_names)
        out = self.concrete(*args)
        if isinstance(out, dict):
            return out
        import tapeflow as tf

        return {f"output_{i}": t for i, t in enumerate(tf.nest.flatten(out))}


def _read_json(path: str) -> dict:
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{os.path.dirname(path)} is not a SavedModel directory (no "
                                "saved_model.json)")
    if os.path.getsize(path) > _MAX_JSON:
        raise graph_json.FormatError(f"{path} is larger than {_MAX_JSON >> 20} MB")
    try:
        with open(path, encoding="utf8") as f:
            document = json.load(f)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise graph_json.FormatError(f"{path} is not valid JSON ({e})") from None
    found = document.get("format") if isinstance(document, dict) else None
    if found != FORMAT:
        raise graph_json.FormatError(f"{path} is not a tapeflow SavedModel (format {found!r})")
    version = document.get("version")
    if not isinstance(version, int) or version > graph_json.VERSION:
        raise graph_json.FormatError(f"{path}: format version {version!r} is newer than this "
                                     f"tapeflow reads ({graph_json.VERSION})")
    return document


def _variables(export_dir: str, specs: list) -> list:
    from safetensors import SafetensorError
    from safetensors.numpy import load_file

    from tapeflow.framework.dtypes import as_dtype
    from tapeflow.framework.variable import Variable

    path = os.path.join(export_dir, "variables", "variables.safetensors")
    try:
        arrays = load_file(path) if specs else {}
    except (SafetensorError, OSError, ValueError) as e:
        raise graph_json.FormatError(f"{path}: cannot read the variables ({e})") from None
    out = []
    for spec in specs:
        value = arrays.get(spec["key"])
        if value is None:
            raise graph_json.FormatError(f"{path}: variable {spec['name']!r} is missing")
        if value.size == int(np.prod(spec["shape"])):  # safetensors keeps 0-d arrays as [1]
            value = value.reshape(spec["shape"])
        if list(value.shape) != list(spec["shape"]) or as_dtype(spec["dtype"])._np != value.dtype:
            raise graph_json.FormatError(
                f"{path}: variable {spec['name']!r} has shape {value.shape} {value.dtype}, the "
                f"SavedModel says {spec['shape']} {spec['dtype']}")
        name = spec["name"][:-2] if spec["name"].endswith(":0") else spec["name"]
        out.append(Variable(np.array(value), trainable=bool(spec["trainable"]), name=name))
    return out


def _decode_structure(s: Any) -> Any:
    from tapeflow.graph.function import _PyLeaf

    if isinstance(s, int):
        return s
    if isinstance(s, list):
        return [_decode_structure(x) for x in s]
    if isinstance(s, dict) and len(s) == 1:
        (tag, body), = s.items()
        if tag == "py":
            return _PyLeaf(body)
        if tag == "tuple":
            return tuple(_decode_structure(x) for x in body)
        if tag == "dict":
            return {k: _decode_structure(v) for k, v in body.items()}
    raise graph_json.FormatError(f"bad output structure {s!r}")


def load(export_dir: str, tags: Any = None, options: Any = None) -> RestoredObject:
    """The object saved in `export_dir` (see the module docstring)."""
    from tapeflow.graph.function import ConcreteFunction

    options_lib.checked(options, options_lib.LoadOptions, "tf.saved_model.load")
    export_dir = os.fspath(export_dir)
    document = _read_json(os.path.join(export_dir, "saved_model.json"))
    try:
        variables = _variables(export_dir, document["variables"])
        concretes = []
        for entry in document["concrete_functions"]:
            graph = graph_json.decode_graph(entry["graph"], variables)
            concretes.append(ConcreteFunction(graph, _decode_structure(entry["outputs"]),
                                              entry["name"],
                                              input_paths=list(entry["input_paths"])))
        objects = _objects(document["objects"], variables, concretes)
        root = objects[0]
        if not isinstance(root, RestoredObject):
            raise graph_json.FormatError("the root object is not an object")
        root.signatures = {key: SignatureFunction(concretes[entry["function"]], entry["inputs"])
                           for key, entry in document["signatures"].items()}
        return root
    except graph_json.FormatError as e:
        raise graph_json.FormatError(f"SavedModel {export_dir}: {e}") from None
    except (KeyError, IndexError, TypeError, AttributeError) as e:
        raise graph_json.FormatError(f"SavedModel {export_dir} is corrupt: "
                                     f"{type(e).__name__}: {e}") from None


def _objects(nodes: list, variables: list, concretes: list) -> list:
    """Build every node (objects first, then their children, so cycles are fine)."""
    built: list = []
    for node in nodes:
        kind = node["kind"]
        if kind == "object":
            built.append(RestoredObject())
        elif kind == "list":
            built.append([])
        elif kind == "dict":
            built.append({})
        elif kind == "variable":
            built.append(variables[node["variable"]])
        elif kind == "function":
            built.append(None)
        else:
            raise graph_json.FormatError(f"unknown object kind {kind!r}")
    names = {}
    for node in nodes:
        for name, child in (node.get("children") or {}).items():
            if nodes[child]["kind"] == "function":
                names.setdefault(child, name)
    for index, node in enumerate(nodes):
        if node["kind"] == "function":
            built[index] = RestoredFunction(names.get(index, f"function_{index}"),
                                            [concretes[i] for i in node["concretes"]])
    for index, node in enumerate(nodes):
        kind = node["kind"]
        if kind == "object":
            for name, child in node["children"].items():
                if not isinstance(name, str) or (name.startswith("_") and name != "__call__") \
                        or name in (
                        "variables", "trainable_variables", "signatures"):
                    raise graph_json.FormatError(f"object attribute name {name!r} not allowed")
                setattr(built[index], name, built[child])
        elif kind == "list":
            built[index].extend(built[i] for i in node["items"])
        elif kind == "dict":
            built[index].update({k: built[i] for k, i in node["items"].items()})
    return built
