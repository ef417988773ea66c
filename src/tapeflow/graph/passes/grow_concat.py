"""Concatenation chains grown in one buffer (DenseNet's dense blocks).

A dense block concatenates each layer's new channels onto everything before it: c1 = [x, y1],
c2 = [c1, y2], ..., ck = [c(k-1), yk], and every ci stays alive for its batch norm's gradient.
As ConcatV2 nodes each ci is a fresh copy of all its channels: quadratic copying, and the
stored ci add up to several times the last one. Grown in place, ``_ConcatStart`` allocates
ck's full width once and each ``_ConcatAppend`` writes only its new channels, every ci a
channel prefix of the same buffer (the batch-norm kernels and the Winograd tiler read such a
prefix in place). W4's three blocks store 64 + 112 + 160 channels of activations instead of
200 + 440 + 680.

A link ci -> c(i+1) is made only when c(i+1) is ci's one concatenation reader with ci as its
first input and nothing else in it: the buffer's channels after ci must have one writer.
Concatenations on another axis, with an unknown channel count, or ordered by control edges stay
ConcatV2; so does a chain of one.
"""

from __future__ import annotations

from tapeflow.graph.ir import Graph, Node, clone, readers, substitute
from tapeflow.ops import array_ops, fused_ops


def last_axis_concat(node: Node) -> bool:
    """A ConcatV2 on the last axis of inputs whose channel counts are known."""
    if node.op is not array_ops._concat or node.control_inputs:
        return False
    rank = node.outputs[0].shape.rank
    return (rank is not None and rank >= 2 and node.attrs["axis"] in (-1, rank - 1)
            and all(t.shape.as_tuple() is not None and t.shape.as_tuple()[-1] is not None
                    for t in node.inputs))


def run(graph: Graph) -> tuple[Graph, str]:
    """Turn each chain of last-axis concatenations into one buffer grown in place."""
    g, _ = clone(graph)
    found = readers(g)
    ordered = {id(c) for n in g.nodes for c in n.control_inputs}
    eligible = {i for i, n in enumerate(g.nodes) if last_axis_concat(n) and id(n) not in ordered}
    following: dict[int, int] = {}  # position of ci -> position of c(i+1)
    for i in eligible:
        uses = [j for j in found.get(id(g.nodes[i].outputs[0]), []) if j in eligible]
        nxt = g.nodes[uses[0]] if len(uses) == 1 else None
        if (nxt is not None and nxt.inputs[0] is g.nodes[i].outputs[0]
                and sum(t is g.nodes[i].outputs[0] for t in nxt.inputs) == 1):
            following[i] = uses[0]
    heads = sorted(set(following) - set(following.values()))
    chains = grown = 0
    for head in heads:
        chain = [head]
        while chain[-1] in following:
            chain.append(following[chain[-1]])
        width = g.nodes[chain[-1]].outputs[0].shape.as_tuple()[-1]
        first = g.nodes[head]
        prev = substitute(g, head, fused_ops._concat_start, list(first.inputs),
                          {"width": width}, first.outputs)
        for at in chain[1:]:
            node = g.nodes[at]
            prev = substitute(g, at, fused_ops._concat_append,
                              [prev.outputs[0], *node.inputs[1:]], {}, node.outputs)
        chains += 1
        grown += len(chain)
    return g, f"grow_concat: grew {grown} concatenations in place in {chains} buffers"
