"""A dense layer's convolution stores its output straight into its block's buffer.

In a dense block grown in place (``grow_concat``), layer i computes yi =
``_BatchNormReluConv2D``(c(i-1), ...) and ci = ``_ConcatAppend``(c(i-1), yi) copies yi into the
buffer's channels after c(i-1)'s; ``reuse_statistics`` added ``_ChannelMoments``(yi) for the
next batch norm. Three passes over yi after the convolution wrote it: its bias (+ ReLU), its
moments, and the copy. Here the convolution takes them over (``into_input``: it stores yi in
those channels of the buffer and returns that slice, so the append finds it in place and copies
nothing; ``moments``: it returns yi's moments, summed in its output transform as it stores each
pixel, where the bias is added too).

Only where c(i-1) is the convolution's input and the append's prefix, yi its first output and
the append's one other input, and nothing is ordered by control edges. The buffer's channels
after c(i-1) have that append as their one writer (``grow_concat``), so the convolution writing
them first, with the same values, is safe; if at run time its input is not such a prefix with
room, it makes a fresh output and the append copies it as before.
"""

from __future__ import annotations

from tapeflow.graph.ir import Graph, clone, readers, remove_nodes, replace_uses, substitute
from tapeflow.ops import fused_ops


def _ordered(node, ordered: set[int]) -> bool:
    return bool(node.control_inputs) or id(node) in ordered


def run(graph: Graph) -> tuple[Graph, str]:
    """Let each dense layer's convolution store its output in its concatenation's buffer."""
    g, _ = clone(graph)
    ordered = {id(c) for n in g.nodes for c in n.control_inputs}
    found = readers(g)
    pos = {id(n): i for i, n in enumerate(g.nodes)}
    stored = summed = 0
    dead: set[int] = set()
    for node in list(g.nodes):
        if node.op is not fused_ops._batch_norm_relu_conv2d or _ordered(node, ordered):
            continue
        y = node.outputs[0]
        appends = [g.nodes[r] for r in found.get(id(y), []) if r < len(g.nodes)
                   and g.nodes[r].op is fused_ops._concat_append]
        into = any(len(a.inputs) == 2 and a.inputs[0] is node.inputs[0] and a.inputs[1] is y
                   and not _ordered(a, ordered) for a in appends)
        moments = [g.nodes[r] for r in found.get(id(y), []) if r < len(g.nodes)
                   and g.nodes[r].op is fused_ops._channel_moments
                   and not _ordered(g.nodes[r], ordered)]
        if node.attrs.get("into_input") or node.attrs.get("moments") or not (into or moments):
            continue
        attrs = {**node.attrs, "into_input": into, "moments": bool(moments)}
        at = pos[id(node)]
        new = substitute(g, at, node.op, list(node.inputs), attrs,
                         [*node.outputs] + ([None, None] if moments else []))
        if moments:
            for old, mine in zip(moments[0].outputs, new.outputs[-2:]):
                replace_uses(g, old, mine, after=at + 1)
            dead.add(id(moments[0]))
            summed += 1
        stored += into
    remove_nodes(g, dead)
    return g, (f"conv_into_concat: stored {stored} convolutions' outputs in their "
               f"concatenation's buffer, summed {summed} outputs' moments")
