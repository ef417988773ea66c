"""``jit_compile=True``: trees of elementwise ops become one compiled loop each.

A node joins the cluster of the nodes reading its output when it is elementwise with a
per-element form (a NumPy ufunc kernel, the op's ``ufunc`` lowering on floats, or its ``scalar``
fact), all of its values share one float dtype and the cluster's static shape, each input is
that shape, its last dimension (a bias) or one element, and every reader of its output is in
that one cluster: only the cluster's last op is read from outside, so no path leaves the
cluster and comes back (clusters never form a cycle). A reduction (an op with the
``reduction`` fact: a float sum or mean over every axis or over the last one) may be a
cluster's last op: the tree below it is then summed in the loop (``reduce_mean(square(y - t))``
stores neither the difference nor its square). Each cluster of two or more ops becomes one
``JitCluster`` node in the place of its last op: one pass over memory and one new array
instead of one per op (``kernels/jit_cluster.py``). Everything the pass knows about an op comes
from the op's facts.
"""

from __future__ import annotations

from tapeflow.graph.ir import (
    Graph,
    Node,
    clone,
    readers,
    remove_nodes,
    replace_uses,
    substitute,
)
from tapeflow.kernels import jit_cluster
from tapeflow.ops import jit_ops

_FLOATS = ("float32", "float64")


def per_element(node: Node) -> tuple | None:
    """(fn, constants) computing `node` for one element, from its op's facts, or None."""
    o = node.op
    k = o.kernel
    if not o.elementwise or o.stateful or node.control_inputs or len(node.outputs) != 1:
        return None
    form = None
    if hasattr(k, "nout") and not node.attrs and k.nout == 1:
        form = (k, ())
    elif o.ufunc is not None:
        form = o.ufunc
    elif o.scalar is not None and not node.attrs:
        form = o.scalar
    return form if form is not None and jit_cluster.supported(form[0]) else None


def _kind(t, shape: tuple) -> str | None:
    s = t.shape.as_tuple()
    if s is None or None in s:
        return None
    if s == shape:
        return "full"
    n = t.shape.num_elements()
    if n == 1:
        return "scalar"
    if shape and s[-1:] == shape[-1:] and n == shape[-1]:
        return "row"
    return None


def reduced_over(node: Node) -> str | None:
    """"all" or "last" when `node` reduces (its op's ``reduction`` fact) one float input of
    known shape over every axis or over the last one, else None."""
    if node.op.reduction is None or node.control_inputs or len(node.inputs) != 1 or \
            len(node.outputs) != 1:
        return None
    x, out = node.inputs[0], node.outputs[0]
    if x.dtype.name not in _FLOATS or out.dtype is not x.dtype or not x.shape.is_fully_defined() \
            or not out.shape.is_fully_defined() or not x.shape.rank:
        return None
    rank = x.shape.rank
    axes = tuple(sorted({int(a) % rank for a in node.attrs.get("axis") or ()}))
    if axes == tuple(range(rank)):
        return "all"
    return "last" if axes == (rank - 1,) else None


def _loop_shape(root: Node, reducing: dict):
    """The elementwise shape of `root`'s cluster: a reduction's input's, else its output's."""
    return root.inputs[0].shape if id(root) in reducing else root.outputs[0].shape


def _eligible(node: Node) -> tuple | None:
    out = node.outputs[0] if len(node.outputs) == 1 else None
    if out is None or out.dtype.name not in _FLOATS or not out.shape.is_fully_defined():
        return None
    shape = out.shape.as_tuple()
    if any(t.dtype is not out.dtype or _kind(t, shape) is None for t in node.inputs):
        return None
    return per_element(node)


# A loop call costs about as much as two or three ufunc calls (numba's argument dispatch): a
# cluster is compiled when it replaces at least MIN_OPS calls, or when the memory passes it
# saves are large: (ops - 1) x elements at least MIN_SAVED. Measured: DenseNet's moving-average
# updates (two ops on 64 channels) ran slower as loops; W2's LSTM cell (clusters of 6 and 3 ops
# on 100 elements) 0.66x the NumPy graph's time; W3's step (Adam's updates) 0.90x.
MIN_OPS = 3
MIN_SAVED = 1 << 16


def _pays(nodes: list, reducing: dict) -> bool:
    n = _loop_shape(nodes[-1], reducing).num_elements()
    return len(nodes) >= MIN_OPS or (len(nodes) > 1 and (len(nodes) - 1) * n >= MIN_SAVED)


def forward_assigned_reads(g: Graph) -> int:
    """A variable read whose variable was last assigned (an ``"assign"`` write) earlier in the
    graph reads the assigned value itself: Adam written in ops assigns m and v and reads them
    back for the update, which then joins their cluster. Any other write, or a stateful node
    that is no variable access (a loop or call that might assign), ends what is known."""
    known: dict[int, object] = {}
    dead = set()
    for node in g.nodes:
        kind = node.op.variable
        var = node.attrs.get("var") if kind is not None else None
        if kind == "read" and var is not None and not node.control_inputs:
            value, out = known.get(id(var)), node.outputs[0]
            if value is not None and value.dtype is out.dtype and value.shape == out.shape \
                    and out.shape.is_fully_defined():
                replace_uses(g, out, value)
                dead.add(id(node))
        elif kind is not None and var is not None:
            known[id(var)] = node.inputs[0] if kind == "assign" and not node.control_inputs \
                else None
        elif node.op.stateful and not node.op.random:
            known.clear()
    remove_nodes(g, dead)
    return len(dead)


def _sink(node: Node, reads: dict, ordered: set) -> bool:
    """A variable write no value of which is read (a cluster may write its value out)."""
    return (node.op.variable in ("write", "assign") and not node.control_inputs
            and id(node) not in ordered and not any(reads.get(id(t)) for t in node.outputs))


def _may_move(g: Graph, at: int, to: int) -> bool:
    """Whether the write at `at` may move to just after position `to` (> at): nothing between
    touches its variable, and no node there has an effect beyond variables (print, a loop)."""
    var = g.nodes[at].attrs["var"]
    for node in g.nodes[at + 1:to + 1]:
        if node.op.variable is not None and node.attrs.get("var") is var:
            return False
        if node.op.stateful and node.op.variable is None:
            return False
    return True


def run(graph: Graph) -> tuple[Graph, str]:
    g, _ = clone(graph)
    forwarded = forward_assigned_reads(g)
    reads = readers(g)
    pos = {id(n): i for i, n in enumerate(g.nodes)}
    ordered = {id(c) for n in g.nodes for c in n.control_inputs}
    forms = {id(n): f for n in g.nodes if (f := _eligible(n)) is not None}
    reducing = {id(n): over for n in g.nodes if (over := reduced_over(n)) is not None}
    root_of: dict[int, Node] = {}  # walked backwards: a node joins the cluster of its readers
    sinks: dict[int, list[Node]] = {}  # a cluster's member -> writes of its value to move
    for i in range(len(g.nodes) - 1, -1, -1):
        node = g.nodes[i]
        if id(node) in reducing:  # always a cluster's last op
            root_of[id(node)] = node
            continue
        if id(node) not in forms:
            continue
        out = node.outputs[0]
        at = reads.get(id(out), [])
        into = [g.nodes[r] for r in at if r < len(g.nodes) and not _sink(g.nodes[r], reads,
                                                                          ordered)]
        written = [g.nodes[r] for r in at if r < len(g.nodes) and _sink(g.nodes[r], reads,
                                                                         ordered)]
        roots = [root_of.get(id(n)) for n in into] + [None] * (len(at) - len(into)
                                                              - len(written))
        root = roots[0] if roots else None
        joins = (root is not None and all(r is root for r in roots)
                 and _loop_shape(root, reducing) == out.shape)
        if joins and written:  # a value written out too: a further output of the cluster
            joins = id(root) not in reducing and all(
                pos[id(w)] > pos[id(root)] or _may_move(g, pos[id(w)], pos[id(root)])
                for w in written)
            if joins:
                sinks[id(node)] = written
        root_of[id(node)] = root if joins else node
    members: dict[int, list[Node]] = {}
    for node in g.nodes:
        root = root_of.get(id(node))
        if root is not None:
            members.setdefault(id(root), []).append(node)
    members = {k: v for k, v in members.items() if _pays(v, reducing)}
    dead: set[int] = set()
    sizes = []
    moves: dict[int, list[Node]] = {}  # cluster node -> writes placed right after it
    for nodes in members.values():  # in program order: the root last
        root = nodes[-1]
        inputs, kinds, refs, steps, replay = [], [], {}, [], []
        shape = _loop_shape(root, reducing).as_tuple()
        for n in nodes:
            refs_n = []
            for t in n.inputs:
                if id(t) not in refs:  # an outside value: a new cluster input
                    refs[id(t)] = len(inputs)
                    inputs.append(t)
                    kinds.append(_kind(t, shape))
                refs_n.append(refs[id(t)])
            replay.append((n.op, tuple(n.attrs.items()), tuple(refs_n)))
            if n is root and id(n) in reducing:
                break  # the loop adds up the last step's values
            fn, consts = forms[id(n)]
            steps.append((fn, tuple(refs_n), tuple(consts)))
            refs[id(n.outputs[0])] = -1 - len(steps)  # placeholder until inputs are known
        n_in = len(inputs)

        def fix(r: int, n_in: int = n_in) -> int:
            return r if r >= 0 else n_in + (-1 - r) - 1

        steps = [(fn, tuple(fix(r) for r in rs), c) for fn, rs, c in steps]
        replay = [(o, a, tuple(fix(r) for r in rs)) for o, a, rs in replay]
        written = [n for n in nodes[:-1] if id(n) in sinks]
        over = reducing.get(id(root))
        program = jit_cluster.Program(
            root.outputs[0].dtype.name, shape, tuple(kinds), tuple(steps),
            reduce=None if over is None else root.op.reduction, over=over or "all",
            out_shape=None if over is None else root.outputs[0].shape.as_tuple(),
            extra=tuple(fix(refs[id(n.outputs[0])]) for n in written))
        op = jit_ops._jit_cluster_n if written else jit_ops._jit_cluster
        node = substitute(g, pos[id(root)], op, inputs,
                          {"program": program, "_replay": tuple(replay)}, [root.outputs[0]])
        for n, new in zip(written, node.outputs[1:]):
            replace_uses(g, n.outputs[0], new)
            moves.setdefault(id(node), []).extend(
                w for w in sinks[id(n)] if pos[id(w)] < pos[id(root)])
        dead.update(id(n) for n in nodes[:-1])
        sizes.append(len(nodes))
    remove_nodes(g, dead)
    _place_after(g, moves)
    return g, (f"jit_cluster: compiled {len(sizes)} clusters of {sum(sizes)} ops"
               + (f" (largest {max(sizes)})" if sizes else "")
               + (f"; {forwarded} variable reads took the value assigned before them"
                  if forwarded else ""))


def _place_after(g: Graph, moves: dict[int, list[Node]]) -> None:
    """Move each cluster's writes (of values it now computes) to just after it, in order."""
    if not moves:
        return
    moved = {id(w) for ws in moves.values() for w in ws}
    order = []
    for node in g.nodes:
        if id(node) in moved:
            continue
        order.append(node)
        order.extend(sorted(moves.get(id(node), ()), key=g.nodes.index))
    g.nodes = order
