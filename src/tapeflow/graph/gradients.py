"""Gradients of traced functions: a backward graph derived from the forward graph.

When a traced function runs eagerly under a GradientTape it is ONE entry on the tape. Its
gradient comes from the *joint graph*: the forward graph replayed under a symbolic tape, then the
ops' own gradient rules emit the backward nodes (variable reads become inputs so gradients reach
variables). Two executables are cut from it:

- forward-with-saves: the forward graph plus, as extra outputs, exactly the forward values the
  backward nodes use (nothing else is kept alive);
- backward: the joint graph with those values turned into inputs, dead forward nodes removed.

When the backward pass is itself being recorded (higher-order gradients), the joint graph is
called as a function of the inputs instead, so it is differentiable again.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow.framework.context import graph_scope
from tapeflow.framework.context import state as _state
from tapeflow.framework.dispatch import apply
from tapeflow.framework.tape import GradientTape
from tapeflow.graph.codegen import compile_graph
from tapeflow.graph.ir import CONST, PLACEHOLDER, Graph, SymbolicTensor, clone, replace_uses
from tapeflow.graph.passes import dce


def replay(graph: Graph, inputs: list, var_map: dict[int, Any] | None = None) -> dict[int, Any]:
    """Re-apply every node of `graph` through dispatch (eager or into the current graph).

    Returns {id(original tensor): new tensor}. `var_map` maps id(variable) to a tensor that
    stands for its reads.
    """
    mapping: dict[int, Any] = {id(t): x for t, x in zip(graph.inputs, inputs)}
    target = _state.graph
    for node in graph.nodes:
        if node.op is PLACEHOLDER:
            continue
        if node.op is CONST:
            value = node.attrs["value"]
            mapping[id(node.outputs[0])] = (target.constant(value) if target is not None
                                            else _wrap(value))
            continue
        var = node.attrs.get("var")
        if node.op.variable == "read" and var_map is not None and id(var) in var_map:
            mapping[id(node.outputs[0])] = var_map[id(var)]
            continue
        outs = apply(node.op, *[mapping[id(t)] for t in node.inputs], **node.attrs)
        for t, o in zip(node.outputs, outs if node.op.multi_output else (outs,)):
            mapping[id(t)] = o
    return mapping


def _wrap(value):
    from tapeflow.framework.tensor import wrap

    return wrap(value)


def _shape_only_uses(graph: Graph, t, start: int) -> bool:
    """True if every use of `t` from node `start` on reads only its (static) shape."""
    if not t.shape.is_fully_defined() or t.dtype.name == "string":
        return False
    if any(o is t for o in graph.outputs):
        return False
    for node in graph.nodes[start:]:
        for i, x in enumerate(node.inputs):
            if x is t and i not in node.op.shape_only:
                return False
    return True


def _differentiable(t) -> bool:
    return t.dtype.is_floating or t.dtype.is_complex


class FunctionGradient:
    """Forward-with-saves and backward executables of one traced graph (built on first use)."""

    def __init__(self, graph: Graph, name: str):
        from tapeflow.graph.function import FuncGraph

        self.forward_graph = graph
        self.variables = [v for v in graph.variables() if _differentiable(v)]
        joint = FuncGraph(f"{name}_grad")
        with graph_scope(joint):
            saved_tapes, _state.tapes = _state.tapes, ()
            try:
                args = [joint.placeholder(t.shape, t.dtype, name=t.node.attrs["name"])
                        for t in graph.inputs]
                var_phs = [joint.placeholder(v.shape, v.dtype, name=_var_ident(v))
                           for v in self.variables]
                sources = [a for a in args if _differentiable(a)] + var_phs
                tape = GradientTape(persistent=True, watch_accessed_variables=False)
                with tape:
                    tape.watch(sources)
                    mapping = replay(graph, args, {id(v): p for v, p in
                                                   zip(self.variables, var_phs)})
                boundary = len(joint.nodes)
                outs = [mapping[id(t)] if isinstance(t, SymbolicTensor) else None
                        for t in graph.outputs]
                self.diff_outputs = [i for i, o in enumerate(outs)
                                     if o is not None and _differentiable(o)]
                targets = [outs[i] for i in self.diff_outputs]
                gouts = [joint.placeholder(o.shape, o.dtype, name=f"grad_out{i}")
                         for i, o in zip(self.diff_outputs, targets)]
                grads = tape.gradient(targets, sources, output_gradients=gouts)
            finally:
                _state.tapes = saved_tapes
        positions = [i for i, a in enumerate(args) if _differentiable(a)]
        positions += [len(args) + j for j in range(len(var_phs))]
        self.grad_positions = [p for p, g in zip(positions, grads) if g is not None]
        joint.outputs = [g for g in grads if g is not None]
        self.n_inputs = len(args) + len(var_phs)
        inverse = {id(mapping[id(t)]): t for n in graph.nodes for t in n.outputs
                   if id(t) in mapping}
        self._cut(graph, joint, inverse, boundary, len(gouts))
        self.joint, _ = dce.run(joint, keep_stateful=False)
        self._joint_fn = None

    def _cut(self, graph: Graph, joint: Graph, inverse: dict, boundary: int,
             n_gouts: int) -> None:
        """Split the joint graph into forward-with-saves and backward executables."""
        back, _ = clone(joint, name=f"{graph.name}_backward")
        uses = {id(t) for n in back.nodes[boundary:] for t in n.inputs}
        uses |= {id(t) for t in back.outputs}
        saved, phs = [], []
        for joint_node, node in zip(joint.nodes[:boundary], list(back.nodes[:boundary])):
            if node.op in (PLACEHOLDER, CONST):
                continue
            for joint_t, t in zip(joint_node.outputs, node.outputs):
                if id(t) in uses and _shape_only_uses(back, t, boundary + len(phs)):
                    dummy = np.broadcast_to(np.zeros((), t.dtype.as_numpy_dtype),
                                            t.shape.as_tuple())
                    const = back.constant(dummy)
                    back.nodes.insert(0, back.nodes.pop())
                    replace_uses(back, t, const, after=boundary + len(phs) + 1)
                    boundary += 1
                elif id(t) in uses:
                    ph = back.placeholder(t.shape, t.dtype, name="saved")
                    back.nodes.insert(0, back.nodes.pop())
                    replace_uses(back, t, ph, after=boundary + len(phs) + 1)
                    saved.append(inverse[id(joint_t)])
                    phs.append(ph)
        n = self.n_inputs
        saved_ids = {id(p) for p in phs}
        ins = [t for t in back.inputs if id(t) not in saved_ids]
        back.inputs = ins[:n] + phs + ins[n:n + n_gouts]
        back, _ = dce.run(back, keep_stateful=False)
        self.backward_graph = back
        self.saved = saved
        self.forward = compile_graph(graph, outputs=list(graph.outputs) + saved,
                                     name=f"{graph.name}_forward")
        self.backward = compile_graph(back, name=back.name)

    def grads_from_saved(self, inputs: list, saved: list, gs: list) -> list:
        """Input/variable gradients (arrays or None) from saved forward values."""
        res = self.backward(*inputs, *saved, *gs)
        out: list = [None] * self.n_inputs
        for p, r in zip(self.grad_positions, res):
            out[p] = r
        return out

    def joint_function(self):
        """The joint graph as a ConcreteFunction (differentiable again: higher order)."""
        if self._joint_fn is None:
            from tapeflow.graph.function import ConcreteFunction

            self._joint_fn = ConcreteFunction(self.joint, list(range(len(self.joint.outputs))),
                                              name=self.joint.name, optimized=False)
        return self._joint_fn


def _var_ident(v) -> str:
    return "".join(c if c.isalnum() else "_" for c in v.name.rsplit(":", 1)[0])
