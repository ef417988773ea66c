"""Keras objects to and from JSON-able configs, in tf-keras 2.x's format.

``serialize_keras_object(obj)`` gives ``{"module", "class_name", "config", "registered_name"}``
(plus ``build_config`` for built layers), as tf-keras writes it in ``config.json``;
``deserialize_keras_object`` is its inverse. A class is found by name only among tapeflow's
built-in Keras classes, the registered custom classes and the ``custom_objects`` passed in:
nothing named in a file is imported or executed.
"""

from __future__ import annotations

import ast
import importlib
import re
from typing import Any

from tapeflow.keras.saving import object_registration, tf_op_layers

# the public module each kind of built-in object is written under, as tf-keras does
_KINDS = {
    "layers": ("keras.layers", "tapeflow.keras.layers"),
    "initializers": ("keras.initializers", "tapeflow.keras.initializers"),
    "regularizers": ("keras.regularizers", "tapeflow.keras.regularizers"),
    "constraints": ("keras.constraints", "tapeflow.keras.constraints"),
    "losses": ("keras.losses", "tapeflow.keras.losses"),
    "metrics": ("keras.metrics", "tapeflow.keras.metrics"),
    "optimizers": ("keras.optimizers", "tapeflow.keras.optimizers"),
    "schedules": ("keras.optimizers.schedules", "tapeflow.keras.optimizers.schedules"),
}
_MODEL_MODULES = {"Functional": "keras.src.engine.functional", "Sequential": "keras",
                  "Model": "keras"}

# constructor arguments tf-keras writes that tapeflow's layers do not take: dropped on load
# when their value changes nothing (a default, or a choice of implementation only)
_NOT_UNDERSTOOD = re.compile(r"keyword argument\(s\) not understood: (\[.*?\])")
_IMPLEMENTATION_ONLY = frozenset({"implementation", "unroll", "rng_type"})


def _classes(kind: str) -> dict[str, Any]:
    """Built-in classes of one kind by class name (and the models, for layers)."""
    module = importlib.import_module(_KINDS[kind][1])
    out = {name: value for name, value in vars(module).items()
           if isinstance(value, type) and hasattr(value, "get_config")}
    if kind == "layers":
        from tapeflow.keras.engine.functional import Functional
        from tapeflow.keras.engine.op_lambda import TFOpLambda
        from tapeflow.keras.engine.sequential import Sequential
        from tapeflow.keras.engine.training import Model
        from tapeflow.keras.layers.kernelized import RandomFourierFeatures

        out.update(Functional=Functional, Sequential=Sequential, Model=Model,
                   TFOpLambda=TFOpLambda, SlicingOpLambda=TFOpLambda,
                   RandomFourierFeatures=RandomFourierFeatures)  # layers.experimental only
    if kind == "optimizers":
        from tapeflow.keras.mixed_precision import LossScaleOptimizer

        # the legacy classes only where no main class has the name (tf-keras deserializes
        # "SGD" as the main class)
        out.update({k: getattr(module.legacy, k) for k in module.legacy.__all__ if k not in out})
        out["LossScaleOptimizer"] = LossScaleOptimizer  # what compile wraps under mixed_float16
    return out


def _kind_of(obj: Any) -> str | None:
    from tapeflow.keras import constraints, initializers, losses, metrics, optimizers, regularizers
    from tapeflow.keras.engine.base_layer import Layer

    for kind, base in (("layers", Layer), ("metrics", metrics.Metric), ("losses", losses.Loss),
                       ("optimizers", optimizers.Optimizer),
                       ("schedules", optimizers.schedules.LearningRateSchedule),
                       ("initializers", initializers.Initializer),
                       ("regularizers", regularizers.Regularizer),
                       ("constraints", constraints.Constraint)):
        if isinstance(obj, base):
            return kind
    return None


def _is_builtin(cls: type) -> bool:
    return cls.__module__.startswith("tapeflow.") and cls not in \
        object_registration._GLOBAL_CUSTOM_NAMES


def serialize_keras_object(obj: Any) -> Any:
    """A JSON-able description of `obj` (plain values pass through)."""
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if isinstance(obj, (list, tuple)):
        return [serialize_keras_object(x) for x in obj]
    if isinstance(obj, dict):
        return {k: serialize_keras_object(v) for k, v in obj.items()}
    if not hasattr(obj, "get_config"):
        if callable(obj):  # a function: activations and loss functions go by name
            name = object_registration.get_registered_name(obj)
            return name
        raise TypeError(f"Cannot serialize {obj!r}: it has no get_config")
    cls = type(obj)
    kind = _kind_of(obj)
    builtin = _is_builtin(cls)
    from tapeflow.keras.saving import model_config

    if model_config.is_graph_model(obj):
        config = model_config.model_config(obj)
    elif _is_op_lambda(cls):
        config = _op_lambda_config(obj)
    else:
        config = obj.get_config()
    class_name = cls.__name__
    if builtin:
        module = _MODEL_MODULES.get(cls.__name__) or (_KINDS[kind][0] if kind else None)
        registered = cls.__name__ if cls.__name__ in _MODEL_MODULES else None
    else:
        module, registered = None, object_registration.get_registered_name(cls)
    if _is_op_lambda(cls) and "function" in config:  # an op layer in tf-keras's form
        module, class_name = tf_op_layers.MODULE, config.pop("class_name")
        registered = class_name
    out = {"module": module, "class_name": class_name, "config": _jsonable(config),
           "registered_name": registered}
    shape = _build_shape(obj) if kind == "layers" else None
    if shape is not None:
        out["build_config"] = {"input_shape": _jsonable(shape)}
    return out


def _build_shape(layer: Any) -> Any:
    if not getattr(layer, "built", False):
        return None
    if getattr(layer, "_inbound_nodes", None):
        from tapeflow.framework import nest

        node = layer._inbound_nodes[0]
        if node.call_inputs is None:
            return None
        return nest.map_structure(lambda t: t.shape.as_list(), node.call_inputs)
    return getattr(layer, "_build_input_shape", None)


def _jsonable(value: Any) -> Any:
    """Tuples to lists, NumPy scalars to Python numbers, nested objects serialized."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, (bool, str)):
        return value
    if hasattr(value, "item") and getattr(value, "ndim", 1) == 0:
        return value.item()
    if isinstance(value, (int, float)):
        return value
    if hasattr(value, "as_list"):  # a TensorShape
        return value.as_list()
    if hasattr(value, "name") and hasattr(value, "is_floating"):  # a DType
        return value.name
    return serialize_keras_object(value)


def find_class(config: dict, custom_objects: dict | None = None,
               kind: str | None = None) -> Any:
    """The class a ``{"class_name", "module", "registered_name"}`` dict names."""
    name = config.get("class_name")
    if not isinstance(name, str):
        raise ValueError(f"Not a Keras object config (no 'class_name' string): {config!r}")
    registered = config.get("registered_name")
    short = name.split(">")[-1]  # Keras 2 configs name custom classes "package>Name"
    for key in (registered, name, short):
        if isinstance(key, str):
            found = object_registration.get_registered_object(key, custom_objects)
            if found is not None:
                return found
    kinds = [kind] if kind else list(_KINDS)
    module = config.get("module") or ""
    if not kind and isinstance(module, str):
        for k, (public, _) in _KINDS.items():
            if module == public or module.endswith("." + k):
                kinds = [k] + [x for x in _KINDS if x != k]
    for k in kinds:
        cls = _classes(k).get(short)
        if cls is not None:
            return cls
    what = {"losses": "loss"}.get(kind, kind[:-1]) if kind else "Keras object"
    raise ValueError(f"Unknown {what}: '{name}'"  # tf-keras's "Unknown layer: 'Name'"
                     + (f" (registered as '{registered}')" if registered else "")
                     + ". Please ensure you are using a `keras.utils.custom_object_scope` and "
                       "that this object is included in the scope, or pass it in "
                       "`custom_objects`.")


def deserialize_keras_object(config: Any, custom_objects: dict | None = None,
                             kind: str | None = None) -> Any:
    """The object `config` describes (a plain value or a name is returned as it is)."""
    if config is None or isinstance(config, (bool, int, float, str)):
        return config
    if isinstance(config, list):
        return [deserialize_keras_object(c, custom_objects, kind) for c in config]
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError(f"Could not deserialize {config!r}: expected a dict with 'class_name'")
    cls = find_class(config, custom_objects, kind)
    inner = config.get("config", {})
    if not isinstance(inner, dict):
        raise ValueError(f"{config['class_name']}: 'config' must be a dict, got {inner!r}")
    from tapeflow.keras.saving import model_config

    with object_registration.CustomObjectScope(custom_objects):
        if model_config.is_graph_model_class(cls):
            obj = model_config.model_from_config(cls, inner, custom_objects)
        elif _is_op_lambda(cls):
            obj = _op_lambda_from_config(inner)
        else:
            obj = _from_config(cls, _strip(inner))
        build = config.get("build_config")
        if build and not getattr(obj, "built", True):
            build_from_config(obj, build.get("input_shape"))
    return obj


def _strip(config: dict) -> dict:
    """tf-keras's bookkeeping keys inside nested configs are not constructor arguments."""
    out = {}
    for key, value in config.items():
        if isinstance(value, dict):
            value = {k: v for k, v in value.items() if k != "shared_object_id"}
        out[key] = value
    return out


def _harmless(key: str, value: Any) -> bool:
    return key in _IMPLEMENTATION_ONLY or value is None or value is False or (
        isinstance(value, (int, float)) and not isinstance(value, bool) and value == 0) or (
        isinstance(value, (dict, list)) and not value)


def _from_config(cls: type, config: dict) -> Any:
    """``cls.from_config(config)``, leaving out tf-keras arguments that tapeflow's layers do
    not take when their value changes nothing; any other one is an error naming it."""
    try:
        return cls.from_config(config)
    except TypeError as e:
        match = _NOT_UNDERSTOOD.search(str(e))
        if not match:
            raise
        keys = [k for k in ast.literal_eval(match.group(1)) if k in config]
        if not keys:
            raise
        meaningful = {k: config[k] for k in keys if not _harmless(k, config[k])}
        if meaningful:
            raise ValueError(f"{cls.__name__}: tapeflow does not support the saved "
                             f"argument(s) {meaningful}") from e
        return _from_config(cls, {k: v for k, v in config.items() if k not in keys})


def build_from_config(obj: Any, input_shape: Any) -> None:
    """Create a layer's weights for the input shape it was built with when saved."""
    if input_shape is None or getattr(obj, "built", False):
        return
    from tapeflow.keras.engine.keras_tensor import KerasTensor
    from tapeflow.keras.engine.training import Model

    if isinstance(obj, Model):  # a subclassed model: run it once on zeros
        obj.build(tuple(input_shape))
        return
    nested = isinstance(input_shape, list) and input_shape and isinstance(input_shape[0], list)
    obj._maybe_build([KerasTensor(s) for s in input_shape] if nested else KerasTensor(input_shape))


# --- TF ops on KerasTensors (``x * 2`` in a functional model) ---------------------------------
def _is_op_lambda(cls: type) -> bool:
    from tapeflow.keras.engine.op_lambda import TFOpLambda

    return cls is TFOpLambda


def _op_lambda_config(layer: Any) -> dict:
    """tf-keras's form when the op is one TensorFlow function call (``tf_op_layers``), else
    the op by its registry name, its attributes and constant inputs as tagged JSON (the
    graph-IR encoding of SavedModels), which only tapeflow reads."""
    from tapeflow.saved_model import graph_json

    call = tf_op_layers.as_tf_keras_call(layer)
    if call is not None:
        return {"name": layer.name, "trainable": layer.trainable, "dtype": layer.dtype,
                "function": call[1], "class_name": call[0]}

    def refuse(var: Any) -> Any:
        raise ValueError(f"layer {layer.name!r}: a variable inside a TF op layer cannot be "
                         "saved in a Keras file")

    node = type("Node", (), {"op": layer.op, "name": layer.name, "location": ""})
    encode = lambda key, value: graph_json._encode_value(value, node, key, refuse, [])  # noqa: E731
    return {"name": layer.name, "trainable": layer.trainable, "dtype": layer.dtype,
            "op": layer.op.name, "attrs": {k: encode(k, v) for k, v in layer.attrs.items()},
            "template": encode("template", tuple(layer._template))}


def _op_lambda_from_config(config: dict) -> Any:
    from tapeflow.framework.dispatch import REGISTRY
    from tapeflow.keras.engine.op_lambda import TFOpLambda
    from tapeflow.saved_model import graph_json

    if "function" in config:  # tf-keras's form: a public TensorFlow function
        return tf_op_layers.TFFunctionCall(config)
    op = REGISTRY.get(config.get("op"))
    if op is None:
        raise ValueError(f"TF op layer {config.get('name')!r}: unknown op {config.get('op')!r}")
    decode = lambda value: graph_json._decode_value(value, [], None, [])  # noqa: E731
    name = str(config.get("name", "tf.op"))
    layer = TFOpLambda(op, {k: decode(v) for k, v in config.get("attrs", {}).items()},
                       decode(config["template"]), name[3:] if name.startswith("tf.") else name)
    layer._name = name
    return layer
