"""``tapeflow.onnx.export``: a model or function as an ONNX file (built with the `onnx`
package's helpers, checked with ``onnx.checker``).

The function is traced for `input_signature` (``None`` dims become symbolic ``N0``, ``N1``...)
and its traced graph (before tapeflow's own fusions, so every node is a primitive op) is
converted node by node with `converters`; variables become initializers named after them.
An op with no ONNX form raises `ExportError` naming the op, the node and the source line that
made it.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from tapeflow.onnx.converters import CONVERTERS

DEFAULT_OPSET = 17


class ExportError(ValueError):
    """The graph holds something ONNX cannot express (the message names it)."""


def _onnx() -> Any:
    try:
        import onnx
    except ImportError as e:
        raise ImportError("ONNX export needs the `onnx` package: pip install "
                          "'tapeflow[onnx]'") from e
    return onnx


class _Context:
    """Collects ONNX nodes, initializers and fresh names while converting one graph."""

    def __init__(self, onnx: Any) -> None:
        self.onnx = onnx
        self.helper = onnx.helper
        self.INT64 = onnx.TensorProto.INT64
        self.nodes: list = []
        self.initializers: list = []
        self.names: dict[int, str] = {}  # id(SymbolicTensor) -> ONNX name
        self._count = 0
        self._variables: dict[int, str] = {}

    def fresh(self, base: str) -> str:
        self._count += 1
        return f"{base}__{self._count}"

    def onnx_type(self, dtype: Any) -> int:
        return self.helper.np_dtype_to_tensor_dtype(np.dtype(dtype._np))

    def tensor(self, value: np.ndarray, name: str = "") -> Any:
        return self.onnx.numpy_helper.from_array(np.asarray(value), name)

    def constant(self, value: np.ndarray, base: str = "const") -> str:
        name = self.fresh(base)
        self.initializers.append(self.tensor(np.asarray(value), name))
        return name

    def variable(self, var: Any) -> str:
        if id(var) not in self._variables:
            base = var.name[:-2] if var.name.endswith(":0") else var.name
            name = base if base not in {i.name for i in self.initializers} else self.fresh(base)
            self.initializers.append(self.tensor(np.asarray(var.numpy()), name))
            self._variables[id(var)] = name
        return self._variables[id(var)]

    def inputs(self, node: Any) -> list[str]:
        return [self.names[id(t)] for t in node.inputs]

    def add(self, op_type: str, inputs: list[str], node: Any = None, output: int = 0,
            **attrs: Any) -> str:
        """Append one ONNX node; with `node`, its output becomes that node's `output`."""
        name = self.fresh(node.name if node is not None else op_type)
        self.nodes.append(self.helper.make_node(op_type, inputs, [name], name=name, **attrs))
        if node is not None:
            self.names[id(node.outputs[output])] = name
        return name

    def add_multi(self, op_type: str, inputs: list[str], count: int, **attrs: Any) -> list[str]:
        outs = [self.fresh(op_type) for _ in range(count)]
        self.nodes.append(self.helper.make_node(op_type, inputs, outs, name=self.fresh(op_type),
                                                **attrs))
        return outs

    def unsupported(self, node: Any, what: str) -> ExportError:
        return ExportError(f"ONNX export: op {node.op.name} (node {node.name!r}) with {what} "
                           f"has no ONNX form here\n  traced at {node.location}")


def concrete_function(model_or_function: Any, input_signature: Any) -> Any:
    """The concrete function to export: a Keras model runs in inference mode."""
    import tapeflow as tf
    from tapeflow.graph.function import ConcreteFunction
    from tapeflow.keras.engine.base_layer import Layer

    if isinstance(model_or_function, ConcreteFunction):
        return model_or_function
    specs = list(input_signature) if isinstance(input_signature, (list, tuple)) else \
        [input_signature]
    if isinstance(model_or_function, Layer):
        model = model_or_function
        if len(specs) == 1:
            fn = tf.function(lambda x: model(x, training=False))
        else:
            fn = tf.function(lambda *xs: model(list(xs), training=False))
        return fn.get_concrete_function(*specs)
    if hasattr(model_or_function, "get_concrete_function"):
        return model_or_function.get_concrete_function(*specs)
    if callable(model_or_function):
        return tf.function(model_or_function).get_concrete_function(*specs)
    raise TypeError(f"tapeflow.onnx.export: expected a Keras model, a tf.function or a concrete "
                    f"function, got {type(model_or_function).__name__}")


def to_onnx(concrete: Any, opset: int = DEFAULT_OPSET, name: str | None = None) -> Any:
    """The ONNX ModelProto of a concrete function (checked with onnx.checker)."""
    from tapeflow.framework.variable import Variable

    onnx = _onnx()
    ctx = _Context(onnx)
    graph = concrete.traced_graph
    inputs, unknown = [], iter(range(1_000_000))
    for t in graph.inputs:
        dims = t.shape.as_tuple()
        shape = None if dims is None else [f"N{next(unknown)}" if d is None else d for d in dims]
        ctx.names[id(t)] = t.node.name
        inputs.append(ctx.helper.make_tensor_value_info(t.node.name, ctx.onnx_type(t.dtype),
                                                        shape))
    for node in graph.nodes:
        if node.op.name == "Placeholder":
            if id(node.outputs[0]) not in ctx.names:
                raise ExportError(f"ONNX export: placeholder {node.name!r} is not an input of "
                                  f"the function\n  traced at {node.location}")
            continue
        if node.op.name == "ReadVariableOp":
            ctx.names[id(node.outputs[0])] = ctx.variable(node.attrs["var"])
            continue
        if node.op.name == "Const":
            ctx.names[id(node.outputs[0])] = ctx.constant(node.attrs["value"], node.name)
            continue
        if any(isinstance(v, Variable) for v in node.attrs.values()):
            raise ExportError(f"ONNX export: op {node.op.name} (node {node.name!r}) changes a "
                              f"variable; only inference graphs can be exported\n"
                              f"  traced at {node.location}")
        convert = CONVERTERS.get(node.op.name)
        if convert is None:
            raise ExportError(f"ONNX export: op {node.op.name} (node {node.name!r}) has no ONNX "
                              f"converter\n  traced at {node.location}")
        convert(ctx, node)
    outputs = []
    for i, t in enumerate(graph.outputs):
        name = f"output_{i}"
        ctx.nodes.append(ctx.helper.make_node("Identity", [ctx.names[id(t)]], [name]))
        dims = t.shape.as_tuple()
        outputs.append(ctx.helper.make_tensor_value_info(
            name, ctx.onnx_type(t.dtype), None if dims is None else
            [f"M{i}_{k}" if d is None else d for k, d in enumerate(dims)]))
    graph_proto = ctx.helper.make_graph(ctx.nodes, name or concrete.name, inputs, outputs,
                                        ctx.initializers)
    import tapeflow

    model = ctx.helper.make_model(graph_proto, producer_name="tapeflow",
                                  producer_version=tapeflow.__version__,
                                  opset_imports=[ctx.helper.make_opsetid("", opset)])
    model.ir_version = min(model.ir_version, 9)  # readable by onnxruntime releases of 2023 on
    onnx.checker.check_model(model, full_check=True)
    return model


def export(model_or_function: Any, input_signature: Any, path: str | os.PathLike,
           opset: int = DEFAULT_OPSET) -> Any:
    """Write `model_or_function` traced for `input_signature` (TensorSpecs) to `path` as ONNX;
    returns the ModelProto."""
    from tapeflow.keras.saving.h5_store import atomic_write

    model = to_onnx(concrete_function(model_or_function, input_signature), opset)
    with atomic_write(os.fspath(path)) as out:
        out.write(model.SerializeToString())
    return model
