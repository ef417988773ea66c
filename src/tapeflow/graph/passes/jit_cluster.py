"""``jit_compile=True``: trees of elementwise ops become one compiled loop each.

A node joins the cluster of the nodes reading its output when it is elementwise with a
per-element form (a NumPy ufunc kernel, the op's ``ufunc`` lowering on floats, or its ``scalar``
fact), all of its values share one float dtype and the cluster's static shape, each input is
that shape, its last dimension (a bias) or one element, and every reader of its output is in
that one cluster: only the cluster's last op is read from outside, so no path leaves the
cluster and comes back (clusters never form a cycle). Each
cluster of two or more ops becomes one ``JitCluster`` node in the place of its last op: one
pass over memory and one new array instead of one per op (``kernels/jit_cluster.py``).
Everything the pass knows about an op comes from the op's facts.
"""

from __future__ import annotations

from tapeflow.graph.ir import Graph, Node, clone, readers, remove_nodes, substitute
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


def _pays(nodes: list) -> bool:
    n = nodes[-1].outputs[0].shape.num_elements()
    return len(nodes) >= MIN_OPS or (len(nodes) > 1 and (len(nodes) - 1) * n >= MIN_SAVED)


def run(graph: Graph) -> tuple[Graph, str]:
    g, _ = clone(graph)
    reads = readers(g)
    pos = {id(n): i for i, n in enumerate(g.nodes)}
    forms = {id(n): f for n in g.nodes if (f := _eligible(n)) is not None}
    root_of: dict[int, Node] = {}  # walked backwards: a node joins the cluster of its readers
    for i in range(len(g.nodes) - 1, -1, -1):
        node = g.nodes[i]
        if id(node) not in forms:
            continue
        out = node.outputs[0]
        roots = [root_of.get(id(g.nodes[r])) if r < len(g.nodes) else None
                 for r in reads.get(id(out), [])]
        root = roots[0] if roots else None
        joins = (root is not None and all(r is root for r in roots)
                 and root.outputs[0].shape == out.shape)
        root_of[id(node)] = root if joins else node
    members: dict[int, list[Node]] = {}
    for node in g.nodes:
        root = root_of.get(id(node))
        if root is not None:
            members.setdefault(id(root), []).append(node)
    members = {k: v for k, v in members.items() if _pays(v)}
    dead: set[int] = set()
    sizes = []
    for nodes in members.values():  # in program order: the root last
        root = nodes[-1]
        inputs, kinds, refs, steps, replay = [], [], {}, [], []
        shape = root.outputs[0].shape.as_tuple()
        for n in nodes:
            refs_n = []
            for t in n.inputs:
                if id(t) not in refs:  # an outside value: a new cluster input
                    refs[id(t)] = len(inputs)
                    inputs.append(t)
                    kinds.append(_kind(t, shape))
                refs_n.append(refs[id(t)])
            fn, consts = forms[id(n)]
            steps.append((fn, tuple(refs_n), tuple(consts)))
            replay.append((n.op, tuple(n.attrs.items()), tuple(refs_n)))
            refs[id(n.outputs[0])] = -1 - len(steps)  # placeholder until inputs are known
        n_in = len(inputs)

        def fix(r: int, n_in: int = n_in) -> int:
            return r if r >= 0 else n_in + (-1 - r) - 1

        steps = [(fn, tuple(fix(r) for r in rs), c) for fn, rs, c in steps]
        replay = [(o, a, tuple(fix(r) for r in rs)) for o, a, rs in replay]
        program = jit_cluster.Program(root.outputs[0].dtype.name, shape, tuple(kinds),
                                      tuple(steps))
        substitute(g, pos[id(root)], jit_ops._jit_cluster, inputs,
                   {"program": program, "_replay": tuple(replay)}, [root.outputs[0]])
        dead.update(id(n) for n in nodes[:-1])
        sizes.append(len(nodes))
    remove_nodes(g, dead)
    return g, (f"jit_cluster: compiled {len(sizes)} clusters of {sum(sizes)} elementwise ops"
               + (f" (largest {max(sizes)})" if sizes else ""))
