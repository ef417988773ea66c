"""Algebraic simplification: x*1, x+0, x-0, x/1, identity reshapes/casts, Identity nodes, and a
split of a concatenation back into the same pieces; each rule reads facts of the op."""

from __future__ import annotations

import numpy as np

from tapeflow.graph.ir import CONST, Graph, clone, remove_nodes, replace_uses


def _const_equal(t, value: float) -> bool:
    if t.node.op is not CONST:
        return False
    v = t.node.attrs["value"]
    return v.dtype != object and v.size > 0 and bool(np.all(v == value))


def _forwarded(node):
    """The input that `node` merely passes through unchanged, or None (from the op's facts:
    ``output="input"``, a ``neutral`` operand, ``passthrough`` at equal specs)."""
    op, ins = node.op, node.inputs
    out = node.outputs[0] if len(node.outputs) == 1 else None
    if out is None:
        return None

    def same_spec(t):
        return t.dtype is out.dtype and t.shape.is_fully_defined() and t.shape == out.shape

    if op.output == "input":
        return ins[0]
    if op.neutral is not None and len(ins) == 2:
        value, positions = op.neutral
        for i in positions:
            other = ins[1 - i]
            if _const_equal(ins[i], value) and same_spec(other):
                return other
    passthrough = op.passthrough
    if passthrough and ins and same_spec(ins[0]) and (
            passthrough is True or passthrough(node.attrs)):
        return ins[0]
    return None


def _split_of_concat(node):
    """The pieces a split cuts from a concatenation of exactly those pieces (``Op.inverse``),
    or None (RevNet's blocks concatenate their halves and the next block splits them again)."""
    if node.op.inverse is None or node.inputs[0].node.op is not node.op.inverse:
        return None
    concat = node.inputs[0].node
    if concat.attrs["axis"] != node.attrs["axis"] or len(concat.inputs) != len(node.outputs):
        return None
    for piece, out in zip(concat.inputs, node.outputs):
        if (piece.dtype is not out.dtype or not piece.shape.is_fully_defined()
                or piece.shape != out.shape):
            return None
    return list(concat.inputs)


def run(graph: Graph) -> tuple[Graph, str]:
    """Bypass nodes that return one of their inputs unchanged (pure nodes only)."""
    g, _ = clone(graph)
    dead: set[int] = set()
    for i, node in enumerate(g.nodes):
        if node.op.stateful or node.control_inputs:
            continue
        pieces = _split_of_concat(node)
        if pieces is not None:
            for out, piece in zip(node.outputs, pieces):
                replace_uses(g, out, piece, after=i)
            dead.add(id(node))
            continue
        src = _forwarded(node)
        if src is not None:
            replace_uses(g, node.outputs[0], src, after=i)
            dead.add(id(node))
    remove_nodes(g, dead)
    return g, f"simplify: bypassed {len(dead)} no-op nodes"
