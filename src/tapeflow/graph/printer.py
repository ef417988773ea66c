"""Readable one-line-per-node listings of graphs (like a jaxpr), used by ``str(graph)``."""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow.framework.variable import Variable
from tapeflow.graph.ir import CONST, PLACEHOLDER, Graph, _spec_str, node_variables, subgraphs
from tapeflow.graph.names import Namespace


def _value_str(value: np.ndarray) -> str:
    if value.size <= 4:
        return np.array2string(value, separator=", ").replace("\n", "")
    return f"<{value.size} values>"


def _attr_str(value: Any, var_names: dict) -> str:
    if isinstance(value, Variable):
        return var_names.get(id(value)) or _var_name(value)
    if isinstance(value, Graph):
        return value.name
    if isinstance(value, tuple) and value and all(isinstance(v, Variable) for v in value):
        return f"({', '.join(_attr_str(v, var_names) for v in value)})"
    if isinstance(value, np.ndarray):
        return _value_str(value)
    if hasattr(value, "name") and hasattr(value, "as_numpy_dtype"):
        return value.name
    if callable(value):
        return getattr(value, "__name__", type(value).__name__)
    return repr(value)


def _var_name(v: Variable) -> str:
    return v.name.rsplit(":", 1)[0]


def format_node(node) -> str:
    """One node as ``name = Op(input names, attrs)  spec`` (for profiles and reports)."""
    parts = [t.name for t in node.inputs]
    if node.op is CONST:
        parts = [_value_str(node.attrs["value"])]
    else:
        parts += [f"{k}={_attr_str(v, {})}" for k, v in node.attrs.items()
                  if not k.startswith("_")]
    specs = " ".join(_spec_str(t) for t in node.outputs)
    return f"{node.name} = {node.op.name}({', '.join(parts)})  {specs}  @ {node.location}"


def _variable_names(graph: Graph) -> dict[int, str]:
    """Display names of the variables `graph` uses, made unique (w, w_1, ...)."""
    out: dict[int, str] = {}
    taken: set[str] = set()
    for v in (v for n in graph.nodes for v in node_variables(n)):
        if id(v) not in out:
            base = name = _var_name(v)
            k = 0
            while name in taken:
                k += 1
                name = f"{base}_{k}"
            taken.add(name)
            out[id(v)] = name
    return out


def value_names(graph: Graph) -> dict[int, str]:
    """id(tensor) -> its name in the listing: inputs by their placeholder names, every other
    value t0, t1, ... in node order. Checked identifiers, unique: the executor's generated
    source uses the same names (``codegen``), so the code reads like the printed graph."""
    ns = Namespace()
    names = {id(t): ns.fresh(t.node.attrs["name"], prefix="x") for t in graph.inputs}
    counter = 0
    for node in graph.nodes:
        if node.op is PLACEHOLDER:
            continue
        for t in node.outputs:
            if id(t) not in names:
                names[id(t)] = ns.fresh(f"t{counter}")
            counter += 1
    return names


def format_graph(graph: Graph, indent: str = "") -> str:
    """The listing: header with inputs and captured variables, one line per node, return."""
    var_names = _variable_names(graph)
    names = value_names(graph)
    body = []
    for node in graph.nodes:
        if node.op is PLACEHOLDER:
            continue
        outs = [names[id(t)] for t in node.outputs]
        if node.op is CONST:
            args = _value_str(node.attrs["value"])
        else:
            parts = [names.get(id(t), t.name) for t in node.inputs]
            parts += [f"{k}={_attr_str(v, var_names)}" for k, v in node.attrs.items()
                      if not k.startswith("_")]
            args = ", ".join(parts)
        lhs = ", ".join(outs) if outs else "_"
        text = f"{lhs} = {node.op.name}({args})"
        specs = " ".join(_spec_str(t) for t in node.outputs)
        body.append(f"{indent}  {text:<46} {specs}")
        for sub in subgraphs(node):
            body.append(format_graph(sub, indent + "    "))
    ins = ", ".join(f"{names[id(t)]}: {_spec_str(t)}" for t in graph.inputs)
    header = f"{indent}graph {graph.name}({ins})"
    variables = {id(v): v for n in graph.nodes for v in node_variables(n)}
    if variables:
        caps = ", ".join(f"{var_names[k]}: {_spec_str(v)}" for k, v in variables.items())
        header += f" captures ({caps})"
    rets = ", ".join(names.get(id(t), repr(t)) if hasattr(t, "node") else repr(t)
                     for t in graph.outputs)
    return "\n".join([header + ":"] + body + [f"{indent}  return {rets}"])
