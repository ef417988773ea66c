"""tapeflow's graph IR as JSON: the function format of a SavedModel (versioned).

A graph is ``{"name", "nodes": [...], "inputs": [refs], "outputs": [refs]}``; a node is
``{"op", "name", "inputs": [refs], "attrs": {...}, "outputs": [[shape, dtype], ...],
"control": [node indices], "location"}``, in program order; a ref ``[level, node, output]``
names an output of a node of this graph (level 0) or of an enclosing one (a cond/while body
capturing an outer tensor: ``captures`` lists ``[outer ref, placeholder node]``).
Attribute values keep their Python types through tagged objects: ``{"tuple": [...]}``,
``{"dtype": "float32"}``, ``{"ndarray": {"dtype", "shape", "base64"}}``, ``{"variable": i}``
(an index into the SavedModel's variables), ``{"graph": {...}}`` (a branch or loop body).
Ops are found by name in tapeflow's op registry: a file names ops, it never holds code.
"""

from __future__ import annotations

import base64
from typing import Any

import numpy as np

VERSION = 1


class FormatError(ValueError):
    """The saved graph is corrupt or uses something this tapeflow does not know."""


# --- encoding -------------------------------------------------------------------------------
def encode_graph(graph: Any, variable_index: Any, outer: list[dict] | None = None) -> dict:
    """JSON-able form of `graph`; `variable_index(var)` gives a variable's index."""
    outer = outer or []
    refs: dict[int, list] = {}
    scope = [refs] + outer

    def ref(t: Any) -> list:
        for level, table in enumerate(scope):
            if id(t) in table:
                return [level] + table[id(t)]
        raise FormatError(f"graph {graph.name}: tensor {t.name} comes from outside the graph")

    nodes = []
    for i, node in enumerate(graph.nodes):
        for k, t in enumerate(node.outputs):
            refs[id(t)] = [i, k]
    index = {id(n): i for i, n in enumerate(graph.nodes)}
    for node in graph.nodes:
        nodes.append({
            "op": node.op.name, "name": node.name, "inputs": [ref(t) for t in node.inputs],
            "attrs": {k: _encode_value(v, node, k, variable_index, scope)
                      for k, v in node.attrs.items()},
            "outputs": [[_shape(t), t.dtype.name] for t in node.outputs],
            "control": [index[id(c)] for c in node.control_inputs if id(c) in index],
            "location": node.location,
        })
    out = {"name": graph.name, "nodes": nodes, "inputs": [ref(t) for t in graph.inputs],
           "outputs": [ref(t) for t in graph.outputs]}
    if getattr(graph, "captures", None):
        out["captures"] = [[_outer_ref(outer_t, outer), index[id(ph.node)]]
                           for outer_t, ph in graph.captures]
    return out


def _outer_ref(t: Any, outer: list[dict]) -> list:
    for level, table in enumerate(outer):
        if id(t) in table:
            return [level + 1] + table[id(t)]
    raise FormatError(f"captured tensor {t.name} is not in an enclosing graph")


def _shape(t: Any) -> list | None:
    dims = t.shape.as_tuple()
    return None if dims is None else list(dims)


def _encode_value(value: Any, node: Any, key: str, variable_index: Any, scope: list) -> Any:
    from tapeflow.framework.dtypes import DType
    from tapeflow.framework.shapes import TensorShape
    from tapeflow.framework.variable import Variable
    from tapeflow.graph.ir import Graph

    def enc(v: Any) -> Any:
        if v is None or isinstance(v, (bool, str)):
            return v
        if isinstance(v, (int, np.integer)):
            return int(v)
        if isinstance(v, (float, np.floating)):
            return float(v)
        if isinstance(v, tuple):
            return {"tuple": [enc(x) for x in v]}
        if isinstance(v, list):
            return [enc(x) for x in v]
        if isinstance(v, dict) and all(isinstance(k, str) for k in v):
            return {"dict": {k: enc(x) for k, x in v.items()}}
        if isinstance(v, DType):
            return {"dtype": v.name}
        if isinstance(v, TensorShape):
            return {"shape": v.as_list() if v.rank is not None else None}
        if isinstance(v, np.ndarray):
            return {"ndarray": encode_array(v)}
        if isinstance(v, Variable):
            return {"variable": variable_index(v)}
        if isinstance(v, Graph):
            return {"graph": encode_graph(v, variable_index, scope)}
        raise FormatError(f"op {node.op.name} (node {node.name!r}): attribute {key!r} holds "
                          f"{type(v).__name__}, which a SavedModel cannot store (it would be "
                          f"code); traced at {node.location}")

    return enc(value)


def encode_array(a: np.ndarray) -> dict:
    a = np.asarray(a)
    if a.dtype == object:
        return {"dtype": "string", "shape": list(a.shape),
                "strings": [base64.b64encode(x if isinstance(x, bytes) else str(x).encode())
                            .decode() for x in a.ravel()]}
    return {"dtype": a.dtype.str, "shape": list(a.shape),
            "base64": base64.b64encode(np.ascontiguousarray(a).tobytes()).decode()}


def decode_array(d: dict) -> np.ndarray:
    try:
        if d["dtype"] == "string":
            flat = [base64.b64decode(s) for s in d["strings"]]
            return np.array(flat, dtype=object).reshape(d["shape"])
        dtype = np.dtype(d["dtype"])
        if dtype.kind not in "biufc":
            raise FormatError(f"array of dtype {d['dtype']!r} is not allowed")
        raw = base64.b64decode(d["base64"], validate=True)
        return np.frombuffer(raw, dtype=dtype).reshape(d["shape"]).copy()
    except (KeyError, TypeError, ValueError) as e:
        raise FormatError(f"bad array in the graph: {e}") from None


# --- decoding -------------------------------------------------------------------------------
def decode_graph(data: dict, variables: list, parent: Any = None, outer: list | None = None
                 ) -> Any:
    """The Graph `encode_graph` described (ops looked up by name in the registry)."""
    from tapeflow.framework.dispatch import REGISTRY
    from tapeflow.framework.dtypes import as_dtype
    from tapeflow.graph.ir import Graph, SubGraph

    outer = outer or []
    try:
        graph = SubGraph(data["name"], parent=parent) if parent is not None else \
            Graph(data["name"])
        graph.building_function = parent is None
        nodes: list = []
        scope = [nodes] + outer

        def tensor(ref: list) -> Any:
            level, n, k = ref
            return scope[level][n].outputs[k]

        for nd in data["nodes"]:
            op = REGISTRY.get(nd["op"])
            if op is None:
                raise FormatError(f"node {nd.get('name')!r}: unknown op {nd['op']!r} (saved by "
                                  "a newer tapeflow, or not a tapeflow op)")
            attrs = {k: _decode_value(v, variables, graph, scope) for k, v in
                     nd["attrs"].items()}
            specs = [(None if s is None else tuple(s), as_dtype(d)) for s, d in nd["outputs"]]
            node = graph.add_node(op, [tensor(r) for r in nd["inputs"]], attrs, specs,
                                  name=nd["name"], location=nd.get("location", ""))
            node.name = nd["name"]
            node.control_inputs = [nodes[c] for c in nd.get("control", [])]
            nodes.append(node)
        graph.inputs = [tensor(r) for r in data["inputs"]]
        graph.outputs = [tensor(r) for r in data["outputs"]]
        for outer_ref, ph in data.get("captures", []):
            level, n, k = outer_ref
            outer_t = outer[level - 1][n].outputs[k]
            placeholder = nodes[ph].outputs[0]
            graph.captures.append((outer_t, placeholder))
            graph._capture_map[id(outer_t)] = placeholder
        return graph
    except FormatError:
        raise
    except (KeyError, IndexError, TypeError, ValueError) as e:
        raise FormatError(f"corrupt graph {data.get('name')!r}: {type(e).__name__}: {e}"
                          ) from None


def _decode_value(v: Any, variables: list, graph: Any, scope: list) -> Any:
    from tapeflow.framework.dtypes import as_dtype
    from tapeflow.framework.shapes import TensorShape

    if isinstance(v, list):
        return [_decode_value(x, variables, graph, scope) for x in v]
    if not isinstance(v, dict):
        return v
    if len(v) != 1:
        raise FormatError(f"bad attribute value {v!r}")
    (tag, body), = v.items()
    if tag == "tuple":
        return tuple(_decode_value(x, variables, graph, scope) for x in body)
    if tag == "dict":
        return {k: _decode_value(x, variables, graph, scope) for k, x in body.items()}
    if tag == "dtype":
        return as_dtype(body)
    if tag == "shape":
        return TensorShape(body)
    if tag == "ndarray":
        return decode_array(body)
    if tag == "variable":
        return variables[body]
    if tag == "graph":
        return decode_graph(body, variables, parent=graph, outer=scope)
    raise FormatError(f"unknown attribute tag {tag!r}")
