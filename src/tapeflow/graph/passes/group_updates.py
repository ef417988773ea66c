"""Per-variable optimizer updates merged into one node per group (Adam: KerasApplyAdam).

A training step updates every variable with its own node, each after its own reads of the
learning rate and the step count: W4's DenseNet had 62 such updates and 124 reads in its
543-node graph, each node a few microseconds of the executor's serial Python. Where an update
op has a grouped twin (its ``grouped`` fact), the nodes that read the same values of their
shared inputs and have equal hyper-parameters become one node of that twin, at the place of
the group's last node; the two reads of the others become unused and ``dce`` drops them.

A node joins a group only if nothing reads its output and no control edge touches it; a group
closes at any effect in between other than a read of a variable it does not update, so moving
the earlier updates to the last one's place reorders nothing another node can see.
"""

from __future__ import annotations

from collections.abc import Hashable

from tapeflow.framework.variable import Variable
from tapeflow.graph.ir import Graph, Node, clone, readers, remove_nodes, substitute


def _written(node: Node) -> list[Variable]:
    """The variables a groupable update writes (its Variable attributes)."""
    return [v for v in node.attrs.values() if isinstance(v, Variable)]


def _stamps(g: Graph) -> dict[int, Hashable]:
    """id(output of a variable read) -> (the variable, how many writes it and the graph's
    global effects had seen before the read): reads with equal stamps give equal values."""
    writes: dict[int, int] = {}
    global_effects, out = 0, {}
    for node in g.nodes:
        op = node.op
        if not op.stateful:
            continue
        if op.variable == "read":
            key = id(node.attrs["var"])
            out[id(node.outputs[0])] = (key, writes.get(key, 0), global_effects)
        elif op.variable is not None:
            key = id(node.attrs["var"])
            writes[key] = writes.get(key, 0) + 1
        elif op.grouped is not None:
            for v in _written(node):
                writes[id(v)] = writes.get(id(v), 0) + 1
        else:
            global_effects += 1
    return out


def _key(node: Node, used: dict, ordered: set[int], stamps: dict) -> Hashable | None:
    """What a node must share with the rest of its group, or None if it cannot join one."""
    if (node.op.grouped is None or node.control_inputs or id(node) in ordered
            or any(id(t) in used for t in node.outputs)):
        return None
    shared = tuple(stamps.get(id(t), id(t)) for t in node.inputs[1:])
    plain = tuple((k, v) for k, v in node.attrs.items() if not isinstance(v, Variable))
    plural = tuple(k for k, v in node.attrs.items() if isinstance(v, Variable))
    try:
        hash(plain)
    except TypeError:
        return None
    return node.op, shared, plain, plural


def _groups(g: Graph) -> list[list[int]]:
    """Positions of the nodes of each group of two or more, in graph order."""
    used, stamps = readers(g), _stamps(g)
    ordered = {id(c) for n in g.nodes for c in n.control_inputs}
    found: list[list[int]] = []
    open_: dict[Hashable, list[int]] = {}
    updated: set[int] = set()  # variables the open groups update

    def close() -> None:
        found.extend(p for p in open_.values() if len(p) > 1)
        open_.clear()
        updated.clear()

    for i, node in enumerate(g.nodes):
        key = _key(node, used, ordered, stamps)
        if key is not None:
            ids = {id(v) for v in _written(node)}
            if ids & updated:
                close()
            open_.setdefault(key, []).append(i)
            updated.update(ids)
        elif node.op.stateful and not (node.op.variable == "read"
                                       and id(node.attrs["var"]) not in updated):
            close()
    close()
    return found


def run(graph: Graph) -> tuple[Graph, str]:
    """Merge each group of updates that share their inputs after the gradient into one node of
    the update's grouped op."""
    g, _ = clone(graph)
    groups = _groups(g)
    dead: set[int] = set()
    for positions in groups:
        nodes = [g.nodes[i] for i in positions]
        first = nodes[0]
        attrs = {k: v for k, v in first.attrs.items() if not isinstance(v, Variable)}
        for k in first.attrs:
            if k not in attrs:
                attrs[f"{k}s"] = tuple(n.attrs[k] for n in nodes)
        inputs = list(first.inputs[1:]) + [n.inputs[0] for n in nodes]
        substitute(g, positions[-1], first.op.grouped, inputs, attrs, [None])
        dead.update(id(n) for n in nodes[:-1])
    remove_nodes(g, dead)
    sizes = ", ".join(str(len(p)) for p in groups)
    return g, (f"group_updates: merged {sum(len(p) for p in groups)} updates into "
               f"{len(groups)} grouped nodes" + (f" ({sizes})" if groups else ""))
