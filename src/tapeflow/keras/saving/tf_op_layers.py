"""TF ops on KerasTensors in tf-keras's file form: ``TFOpLambda`` / ``SlicingOpLambda``
layers that name a public TensorFlow function (``"function": "math.multiply"``) and carry the
call's other arguments in their inbound node (``{"y": 2.0}``, ``{"y": ["dense", 0, 0]}``).

Reading: the function is looked up in tapeflow's public API, only among the array functions
of its op library (``tf.math``, ``tf.nn``, ``tf.linalg``, ``tf.image``, ``tf.concat`` ...), never
an I/O, Python-calling or printing one, and called on the symbolic inputs, so tapeflow's own
op layers record it. Writing: a tapeflow op layer whose primitive is one TensorFlow function
call (arithmetic, activations, reductions, reshapes, casts, concat, slicing ...) is written in
that form, so tf-keras reads it; any other keeps tapeflow's form (op name and attributes).
"""

from __future__ import annotations

from typing import Any

from tapeflow.framework import dtypes

MODULE = "tf_keras.src.layers.core.tf_op_layer"
CLASSES = ("TFOpLambda", "SlicingOpLambda")
# modules whose public functions a file may name (pure array functions)
_SAFE_MODULES = ("tapeflow.ops.", "tapeflow.image.", "tapeflow.linalg.", "tapeflow.signal.",
                 "tapeflow.math.", "tapeflow.nn.")
_NAMESPACES = frozenset({"math", "nn", "linalg", "image", "signal", "bitwise", "strings",
                         "random"})
_UNSAFE_NAMES = frozenset({"py_function", "numpy_function", "py_func", "print", "Print",
                           "Assert", "ensure_shape", "map_fn", "vectorized_map", "cond", "case",
                           "switch_case", "while_loop", "scan", "foldl", "foldr", "function",
                           "custom_gradient", "recompute_grad", "load_op_library",
                           "load_library", "timestamp", "check_numerics"})


class TFFunctionCall:
    """A tf-keras TF op layer read from a file: calling it applies the function it names."""

    def __init__(self, config: dict):
        self.name = str(config.get("name", "tf.op"))
        self.path = config.get("function")
        self.function = resolve(self.path, self.name)

    def __call__(self, inputs: Any, **kwargs: Any) -> Any:
        kwargs.pop("name", None)
        out = self.function(inputs, **kwargs)
        history = getattr(out, "_keras_history", None)
        if history is not None:  # the op layer that made the output keeps the file's name
            history[0]._name = self.name
        return out


def _getitem(x: Any, slice_spec: list) -> Any:
    key = []
    for item in slice_spec:
        if isinstance(item, dict):
            key.append(slice(item.get("start"), item.get("stop"), item.get("step")))
        else:
            key.append(item)  # an index, or None for a new axis
    return x[tuple(key)]


def _add(x: Any, y: Any, name: Any = None) -> Any:
    return x + y


def _equal(x: Any, y: Any, name: Any = None) -> Any:
    from tapeflow.ops import math_ops

    return math_ops.equal(x, y)


def _not_equal(x: Any, y: Any, name: Any = None) -> Any:
    from tapeflow.ops import math_ops

    return math_ops.not_equal(x, y)


# tf.__operators__: what Python's operators on KerasTensors record in tf-keras
_OPERATORS = {"add": _add, "getitem": _getitem, "eq": _equal, "ne": _not_equal}


def resolve(path: Any, layer: str) -> Any:
    """The tapeflow function a tf-keras op layer names (``"nn.relu"``), if it is a safe one."""
    import tapeflow

    def refuse(why: str) -> ValueError:
        return ValueError(f"TF op layer {layer!r}: cannot use function {path!r} ({why})")

    if not isinstance(path, str) or not path:
        raise refuse("not a function name")
    parts = path.split(".")
    if parts[0] == "__operators__":
        if len(parts) != 2 or parts[1] not in _OPERATORS:
            raise refuse("not an operator tapeflow knows")
        return _OPERATORS[parts[1]]
    namespace = parts[:-1] if parts[:2] != ["compat", "v1"] else parts[2:-1]
    if any(p.startswith("_") or not p.isidentifier() for p in parts) or parts[-1] in \
            _UNSAFE_NAMES or (namespace and (len(namespace) > 1 or namespace[0] not in
                                             _NAMESPACES)):
        raise refuse("not a public array function")
    found: Any = tapeflow
    for part in parts:
        found = getattr(found, part, None)
        if found is None:
            raise refuse("tapeflow has no such function")
    found = getattr(found, "_tf_api", found)
    module = getattr(found, "__module__", "") or ""
    if isinstance(found, type) or not callable(found) or not module.startswith(_SAFE_MODULES):
        raise refuse("not an array function of tapeflow's op library")
    return found


# --- writing ---------------------------------------------------------------------------------
_BINARY = {"AddV2": "__operators__.add", "Sub": "math.subtract", "Mul": "math.multiply",
           "RealDiv": "math.truediv", "Maximum": "math.maximum", "Minimum": "math.minimum",
           "Pow": "math.pow", "FloorDiv": "math.floordiv", "FloorMod": "math.floormod",
           "SquaredDifference": "math.squared_difference"}
_COMMUTATIVE = frozenset({"AddV2", "Mul", "Maximum", "Minimum", "SquaredDifference"})
_UNARY = {"Relu": "nn.relu", "Relu6": "nn.relu6", "Elu": "nn.elu", "Selu": "nn.selu",
          "Sigmoid": "math.sigmoid", "Tanh": "math.tanh", "Softplus": "math.softplus",
          "Exp": "math.exp", "Log": "math.log", "Log1p": "math.log1p", "Square": "math.square",
          "Sqrt": "math.sqrt", "Rsqrt": "math.rsqrt", "Abs": "math.abs", "Neg": "math.negative",
          "Sin": "math.sin", "Cos": "math.cos", "Floor": "math.floor", "Ceil": "math.ceil",
          "Round": "math.round", "Sign": "math.sign", "Erf": "math.erf",
          "Reciprocal": "math.reciprocal", "LogicalNot": "math.logical_not"}
_REDUCE = {"Sum": "math.reduce_sum", "Mean": "math.reduce_mean", "Max": "math.reduce_max",
           "Min": "math.reduce_min", "Prod": "math.reduce_prod"}
_ATTR_CALLS = {  # op -> (function, {tapeflow attribute: keyword})
    "Softmax": ("nn.softmax", {"axis": "axis"}), "LogSoftmax": ("nn.log_softmax", {"axis": "axis"}),
    "ConcatV2": ("concat", {"axis": "axis"}), "Pack": ("stack", {"axis": "axis"}),
    "Reshape": ("reshape", {"shape": "shape"}), "Transpose": ("transpose", {"perm": "perm"}),
    "ExpandDims": ("expand_dims", {"axis": "axis"}), "Squeeze": ("squeeze", {"axis": "axis"}),
    "Cast": ("cast", {"dtype": "dtype"}),
}
_LIST_INPUT = frozenset({"ConcatV2", "Pack"})
TENSOR = object()  # marks a keyword argument that is one of the layer's symbolic inputs


def _plain(value: Any) -> Any:
    if isinstance(value, dtypes.DType):
        return value.name
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if hasattr(value, "item") and getattr(value, "ndim", 1) == 0:
        return value.item()
    return value


def _slice_spec(spec: tuple) -> list | None:
    out: list = []
    for item in spec:
        if item[0] == "s":
            out.append({"start": item[1], "stop": item[2], "step": item[3]})
        elif item[0] == "i":
            out.append(item[1])
        elif item[0] == "n":
            out.append(None)
        else:
            return None  # an ellipsis: tf-keras cannot write one either
    return out


def as_tf_keras_call(layer: Any) -> tuple[str, str, bool, dict] | None:
    """(class name, function, whether the inputs go as one list, keyword arguments with
    `TENSOR` for the second symbolic input) of a tapeflow op layer, or None when it is not a
    single TensorFlow function call tf-keras can write."""
    op, attrs, template = layer.op.name, layer.attrs, tuple(layer._template)
    const = [x for x in template if x is not None]
    if op in _BINARY and len(template) == 2:
        if template[0] is None:
            second = TENSOR if template[1] is None else _plain(template[1])
        elif op in _COMMUTATIVE and template[1] is None:
            second = _plain(template[0])
        else:
            return None
        if isinstance(second, (list, dict)) or hasattr(second, "shape"):
            return None  # an array constant: kept in tapeflow's form
        return "TFOpLambda", _BINARY[op], False, {"y": second}
    if op == "MatMul" and template[0] is None and not const:
        return "TFOpLambda", "linalg.matmul", False, {
            "b": TENSOR, "transpose_a": bool(attrs.get("transpose_a")),
            "transpose_b": bool(attrs.get("transpose_b"))}
    if const:
        return None
    if op in _UNARY and len(template) == 1 and not attrs:
        return "TFOpLambda", _UNARY[op], False, {}
    if op in _REDUCE:
        axis = attrs.get("axis")
        return "TFOpLambda", _REDUCE[op], False, {
            "axis": None if axis is None else _plain(axis),
            "keepdims": bool(attrs.get("keepdims"))}
    if op in _ATTR_CALLS and set(attrs) <= set(_ATTR_CALLS[op][1]):
        function, names = _ATTR_CALLS[op]
        if op not in _LIST_INPUT and len(template) != 1:
            return None
        return "TFOpLambda", function, op in _LIST_INPUT, {
            names[k]: _plain(v) for k, v in attrs.items()}
    if op == "StridedSlice" and len(template) == 1:
        spec = _slice_spec(attrs["spec"])
        if spec is not None:
            return "SlicingOpLambda", "__operators__.getitem", False, {"slice_spec": spec}
    return None
