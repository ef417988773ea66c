"""Functional and Sequential models as tf-keras 2.x configs, and back.

A functional config lists every layer with its ``inbound_nodes``: for each call of the layer
inside the model, the ``[layer_name, node_index, tensor_index, kwargs]`` of every input, with
node indices counted among the model's own calls of that layer, as Keras numbers them.
Rebuilding calls the layers again in that order, so the new model is wired exactly like the
saved one; `clone_model` is a config round trip.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from tapeflow.framework import nest
from tapeflow.keras.saving import tf_op_layers

_TENSOR_REF = "__keras_tensor__"


def _graph_classes() -> tuple[type, type, type]:
    from tapeflow.keras.engine.functional import Functional
    from tapeflow.keras.engine.sequential import Sequential
    from tapeflow.keras.engine.training import Model

    return Functional, Sequential, Model


def is_graph_model(obj: Any) -> bool:
    """A model whose config is its layer graph (Functional or Sequential, not subclassed)."""
    functional, sequential, _ = _graph_classes()
    return type(obj) in (functional, sequential)


def is_graph_model_class(cls: type) -> bool:
    return cls in _graph_classes()


def model_config(model: Any) -> dict:
    """The ``config`` entry of a Functional or Sequential model's serialization."""
    functional, sequential, _ = _graph_classes()
    if isinstance(model, sequential):
        return _sequential_config(model)
    return _functional_config(model)


def _sequential_config(model: Any) -> dict:
    from tapeflow.keras.saving.serialization import serialize_keras_object

    layers = []
    if model.inputs:
        layers.append(serialize_keras_object(model.inputs[0]._keras_history[0]))
    layers += [serialize_keras_object(layer) for layer in model.layers]
    return {"name": model.name, "layers": layers}


def _functional_config(model: Any) -> dict:
    from tapeflow.keras.saving.serialization import serialize_keras_object

    kept: dict[int, int] = {}  # id(node) -> its index among the model's calls of its layer
    count: dict[int, int] = {}
    for node in model._nodes:
        kept[id(node)] = count.get(id(node.layer), _first_node(node.layer))
        count[id(node.layer)] = kept[id(node)] + 1

    def ref(x: Any) -> list:
        layer, node_index, tensor_index = x._keras_history
        return [layer.name, kept[id(layer._inbound_nodes[node_index])], tensor_index]

    layers = []
    for layer in model.layers:
        entry = serialize_keras_object(layer)
        entry["name"] = layer.name
        entry["inbound_nodes"] = [_node_config(node, ref) for node in layer._inbound_nodes
                                  if id(node) in kept and node.call_inputs is not None]
        layers.append(entry)
    return {"name": model.name, "trainable": model.trainable, "layers": layers,
            "input_layers": [ref(x) for x in model.inputs],
            "output_layers": [ref(x) for x in model.outputs]}


def _first_node(layer: Any) -> int:
    """Keras numbers a nested model's calls from 1: its node 0 is its own Input."""
    return int(is_graph_model(layer) and bool(layer.inputs))


def _node_config(node: Any, ref: Any) -> list:
    from tapeflow.keras.engine.keras_tensor import KerasTensor
    from tapeflow.keras.saving.serialization import _jsonable

    call = tf_op_layers.as_tf_keras_call(node.layer) if _takes_list(node.layer) else None
    if call is not None:  # tf-keras's form: the op's function, its other arguments by name
        inputs = nest.flatten(node.call_inputs)
        kwargs = {k: ref(inputs[1]) if v is tf_op_layers.TENSOR else v
                  for k, v in call[3].items()}
        if call[2]:  # a list of tensors as the first argument
            return [ref(x) + [kwargs] for x in inputs]
        return ref(inputs[0]) + [kwargs]  # one tensor: the entry itself, as tf-keras writes it

    if any(isinstance(a, KerasTensor) for a in nest.flatten(node.call_args)) or node.call_args:
        raise NotImplementedError(f"Layer {node.layer.name!r} was called with extra positional "
                                  "arguments; its model cannot be saved as a config (pass them "
                                  "by keyword).")
    kwargs = {k: (ref(v) if isinstance(v, KerasTensor) else _jsonable(v))
              for k, v in node.call_kwargs.items()}
    entries = [ref(x) + [{}] for x in nest.flatten(node.call_inputs)]
    entries[0][3] = kwargs
    return entries


def model_from_config(cls: type, config: dict, custom_objects: dict | None = None) -> Any:
    """Rebuild a Functional or Sequential model from its config."""
    functional, sequential, _ = _graph_classes()
    if "input_layers" in config:
        return _functional_from_config(config, custom_objects)
    if issubclass(cls, sequential) or "layers" in config:
        return _sequential_from_config(config, custom_objects)
    return cls.from_config(config)


def _layer(entry: dict, custom_objects: dict | None, with_build: bool) -> Any:
    from tapeflow.keras.saving.serialization import deserialize_keras_object

    keys = ("module", "class_name", "config", "registered_name") + (
        ("build_config",) if with_build else ())
    return deserialize_keras_object({k: entry[k] for k in keys if k in entry}, custom_objects,
                                    kind="layers")


def _sequential_from_config(config: Any, custom_objects: dict | None) -> Any:
    _, sequential, _ = _graph_classes()
    entries = config if isinstance(config, list) else config.get("layers", [])
    name = None if isinstance(config, list) else config.get("name")
    model = sequential(name=name)
    for entry in entries:
        model.add(_layer(entry, custom_objects, with_build=False))
    build = None if isinstance(config, list) else config.get("build_input_shape")
    if not model.built and build:
        model.build(tuple(build))
    return model


def _functional_from_config(config: dict, custom_objects: dict | None) -> Any:
    from tapeflow.keras.engine.input_layer import InputLayer

    functional, _, _ = _graph_classes()
    layers: dict[str, Any] = {}
    outputs: dict[tuple[str, int], list] = {}
    done: dict[str, int] = {}
    pending: deque = deque()
    for entry in config["layers"]:
        name = entry.get("name") or entry["config"].get("name")
        layer = layers[name] = _layer(entry, custom_objects, with_build=False)
        if isinstance(layer, InputLayer):
            outputs[(name, 0)] = [layer._inbound_nodes[0].outputs]
            continue
        first = _first_node(layer)
        done[name] = first
        for index, node in enumerate(entry.get("inbound_nodes", [])):
            if isinstance(node, list) and node and isinstance(node[0], str):
                node = _Bare([node])  # one tensor as the first argument (tf-keras's op layers)
            if not isinstance(node, list):
                raise ValueError(f"Layer {name!r}: unsupported inbound node format {node!r} "
                                 "(expected Keras 2's list of [layer, node, tensor, kwargs])")
            pending.append((name, index + first, node))

    def value(ref: list) -> Any:
        found = outputs.get((ref[0], ref[1]))
        return None if found is None else found[ref[2]]

    while pending:
        progress = False
        for _ in range(len(pending)):
            name, index, node = pending.popleft()
            kwargs = dict(node[0][3]) if node and len(node[0]) > 3 else {}
            refs = [entry[:3] for entry in node] + [
                _tensor_ref(v) for v in kwargs.values() if _tensor_ref(v) is not None]
            if done.get(name, 0) != index or any(value(r) is None for r in refs):
                pending.append((name, index, node))
                continue
            kwargs = {k: v if _tensor_ref(v) is None else value(_tensor_ref(v))
                      for k, v in kwargs.items()}
            inputs = [value(entry) for entry in node]
            single = isinstance(node, _Bare) or (len(inputs) == 1 and not isinstance(
                layers[name], tf_op_layers.TFFunctionCall) and not _takes_list(layers[name]))
            out = layers[name](inputs[0] if single else inputs, **kwargs)
            outputs[(name, index)] = nest.flatten(out)
            done[name] = index + 1
            progress = True
        if not progress:
            missing = sorted({n for n, _, _ in pending})
            raise ValueError(f"Cannot rebuild model {config.get('name')!r}: the inputs of "
                             f"layer(s) {missing} are never produced (a corrupt config?)")
    ins = [value(r) for r in config["input_layers"]]
    outs = [value(r) for r in config["output_layers"]]
    if any(x is None for x in ins + outs):
        raise ValueError(f"Model {config.get('name')!r}: input_layers/output_layers name "
                         "tensors that the layers do not produce")
    return functional(ins if len(ins) > 1 else ins[0], outs if len(outs) > 1 else outs[0],
                      name=config.get("name"))


class _Bare(list):
    """An inbound node written as one entry: the layer was called on that tensor alone."""


def _tensor_ref(value: Any) -> list | None:
    """A tensor named in a call's keyword arguments: ``[layer, node, tensor]`` as tf-keras
    writes it (or tapeflow's earlier ``["__keras_tensor__", layer, node, tensor]``)."""
    if isinstance(value, list) and value[:1] == [_TENSOR_REF]:
        value = value[1:]
    if isinstance(value, list) and len(value) == 3 and isinstance(value[0], str) and all(
            isinstance(v, int) and not isinstance(v, bool) for v in value[1:]):
        return value
    return None


def _takes_list(layer: Any) -> bool:
    """TF op layers are always called on a list of their symbolic inputs."""
    from tapeflow.keras.engine.op_lambda import TFOpLambda

    return isinstance(layer, TFOpLambda)


def clone_model(model: Any, input_tensors: Any = None, clone_function: Any = None) -> Any:
    """A new model with the same structure and freshly initialized weights (Keras's
    ``tf.keras.models.clone_model``); `clone_function` maps each layer to its copy."""
    from tapeflow.keras.saving.serialization import (
        deserialize_keras_object,
        serialize_keras_object,
    )

    if input_tensors is not None:
        raise NotImplementedError("clone_model: input_tensors is not supported")
    if clone_function is not None:
        return _clone_with(model, clone_function)
    return deserialize_keras_object(serialize_keras_object(model))


def _clone_with(model: Any, clone_function: Any) -> Any:
    functional, sequential, _ = _graph_classes()
    if not isinstance(model, sequential):
        raise NotImplementedError("clone_model: clone_function is supported for Sequential "
                                  "models")
    clone = sequential(name=model.name)
    if model.inputs:
        clone.add(type(model.inputs[0]._keras_history[0]).from_config(
            model.inputs[0]._keras_history[0].get_config()))
    for layer in model.layers:
        clone.add(clone_function(layer))
    return clone
