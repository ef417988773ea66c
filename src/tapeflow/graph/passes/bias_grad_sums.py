"""Bias gradients summed by the batch-norm gradient that writes their input.

A convolution with a bias whose output a batch norm (+ ReLU) reads gets its bias gradient as
BiasAddGrad(dx), dx the fused batch-norm gradient's output, or, in a dense block, a channel
slice of it (SplitLike, the gradient of the concatenation). BiasAddGrad then reads dx again
from memory, and a slice of 12 channels out of up to 160 costs nearly whole rows: W4's 15 took
~5 ms of a ~170 ms one-thread step, 5x their bytes' floor. ``_FusedBatchNormGradEx`` with
``dx_sums`` adds dx up per channel as it writes it (in cache, ~free), and each such
BiasAddGrad becomes a slice of those sums.

Only channels-last bias gradients of dx itself or of a last-axis SplitLike piece of it are
rewritten, and only where no control edge orders the nodes involved.
"""

from __future__ import annotations

from tapeflow.graph.ir import Graph, Node, SymbolicTensor, clone, substitute
from tapeflow.ops import array_ops, fused_ops, indexing_ops, nn_ops


def _channels(t: SymbolicTensor) -> int | None:
    shape = t.shape.as_tuple()
    return None if shape is None or not shape else shape[-1]


def _source(t: SymbolicTensor, ordered: set[int]) -> tuple[Node, int] | None:
    """(the batch-norm gradient whose dx `t` is, or is a last-axis piece of; the piece's first
    channel), or None."""
    node, first = t.node, 0
    if node.op is array_ops._split_like:
        rank = t.shape.rank
        if rank is None or node.attrs["axis"] not in (-1, rank - 1) or node.control_inputs:
            return None
        widths = [_channels(o) for o in node.outputs[:[id(o) for o in node.outputs].index(
            id(t))]]
        if None in widths:
            return None
        first, node, t = sum(widths), node.inputs[0].node, node.inputs[0]
    if (node.op is not fused_ops._fused_batch_norm_grad_ex or t is not node.outputs[0]
            or node.control_inputs or id(node) in ordered):
        return None
    return node, first


def _bias_grad_of(node: Node) -> bool:
    return (node.op is nn_ops._bias_add_grad and not node.attrs["data_format"].startswith("NC")
            and not node.control_inputs and _channels(node.inputs[0]) is not None)


def run(graph: Graph) -> tuple[Graph, str]:
    """Take each bias gradient of a batch-norm gradient's dx (or a channel piece of it) from
    that node's dx sums."""
    g, _ = clone(graph)
    ordered = {id(c) for n in g.nodes for c in n.control_inputs}
    plans: dict[int, list[tuple[int, int]]] = {}  # id(bn grad) -> [(position, first channel)]
    for i, node in enumerate(g.nodes):
        if not _bias_grad_of(node) or id(node) in ordered:
            continue
        found = _source(node.inputs[0], ordered)
        if found is not None:
            plans.setdefault(id(found[0]), []).append((i, found[1]))
    for i, node in enumerate(g.nodes):
        if id(node) not in plans:
            continue
        summed = node if node.attrs.get("dx_sums") else substitute(
            g, i, node.op, list(node.inputs), {**node.attrs, "dx_sums": True},
            [*node.outputs, None])
        for at, first in plans[id(node)]:
            bias_grad = g.nodes[at]
            spec = (("s", first, first + _channels(bias_grad.inputs[0]), None),)
            substitute(g, at, indexing_ops._strided_slice, [summed.outputs[3]], {"spec": spec},
                       bias_grad.outputs)
    count = sum(len(p) for p in plans.values())
    return g, (f"bias_grad_sums: took {count} bias gradients from the dx sums of "
               f"{len(plans)} batch-norm gradients")
