"""Batch-norm statistics of a concatenation assembled from those of its parts.

A batch norm's statistics are per channel, so those of [a, y] are a's followed by y's. In a
dense block the batch norm of ci = [c(i-1), yi] reads every channel of ci for its mean and
variance, though the batch norm of c(i-1) computed c(i-1)'s already: only yi's new channels
are unknown. This pass gives such a batch norm its statistics (the ``given`` form of
FusedBatchNorm and its fused variants, whose gradient stays training mode's): the earlier
batch norm's for each part that has one, ``_ChannelMoments`` for the rest, concatenated. The
statistics pass over ci then reads yi alone (W4: 12 of up to 160 channels).

The given statistics are the earlier batch norm's outputs, in x's dtype: float32 statistics
instead of float64 ones rounded at the end (a relative difference of about 1e-7 in y).
"""

from __future__ import annotations

from tapeflow.graph.ir import Graph, clone, insert, substitute
from tapeflow.graph.passes.grow_concat import last_axis_concat
from tapeflow.ops import array_ops, fused_ops, normalization_ops

# batch norms computing their own statistics -> the position of the mean among their outputs
# (the unbiased variance follows it)
_MEAN_AT = {normalization_ops._fused_batch_norm: 1, fused_ops._fused_batch_norm_ex: 1,
            fused_ops._batch_norm_statistics: 0}


def run(graph: Graph) -> tuple[Graph, str]:
    """Give each batch norm of a concatenation the statistics its parts already have."""
    g, _ = clone(graph)
    ordered = {id(c) for n in g.nodes for c in n.control_inputs}
    known: dict[int, tuple] = {}  # id(x) -> (mean, variance) of the first batch norm of x
    plans = []  # (position, batch norm, the known statistics of each part or None)
    for i, node in enumerate(g.nodes):
        at = _MEAN_AT.get(node.op)
        if at is None:
            continue
        x = node.inputs[0]
        if (len(node.inputs) == 3 and not node.control_inputs and id(node) not in ordered
                and last_axis_concat(x.node)):
            parts = [known.get(id(p)) for p in x.node.inputs]
            if any(parts):
                plans.append((i, node, parts))
        known.setdefault(id(x), (node.outputs[at], node.outputs[at + 1]))
    for i, node, parts in reversed(plans):  # inserting at i leaves earlier positions alone
        x, scale, offset = node.inputs
        stats = []
        for p, part in zip(x.node.inputs, parts):
            if part is None:
                moments = insert(g, i, fused_ops._channel_moments, [p], {},
                                 f"{node.name}/moments", node.location)
                i += 1
                part = tuple(moments.outputs)
            stats.append(part)
        given = []
        for k, which in enumerate(("mean", "variance")):
            given.append(insert(g, i, array_ops._concat, [s[k] for s in stats], {"axis": 0},
                                f"{node.name}/{which}", node.location).outputs[0])
            i += 1
        substitute(g, i, node.op, [x, scale, offset, *given], dict(node.attrs), node.outputs)
    return g, (f"reuse_statistics: gave {len(plans)} batch norms of a concatenation its "
               "parts' statistics")
