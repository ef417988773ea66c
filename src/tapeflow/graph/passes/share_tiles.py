"""Winograd tiles shared between a convolution and its filter gradient.

A 3x3 convolution on the Winograd path transforms its input into tiles; the filter gradient
transforms the same input again (about a third of its time: 3.2 -> 1.9 ms for 32 images of
32x32x16). When both run in one graph, ``_FusedConv2D(x, w, b)`` becomes ``_WinogradConv2D``,
which also returns the tiles, and ``Conv2DBackpropFilter(x, g)`` becomes
``_WinogradConv2DBackpropFilter(tiles, g)``.

The tiles are 2.25x the size of x and live from the convolution to the gradient. A pair is
rewritten when the tiles take x's place: x is made in the graph and read by nothing but the
two (a batch norm + ReLU's output, which ``prologue`` then never writes): 1.25x x more memory
for a filter gradient about a third cheaper (DenseNet's BN-ReLU-Conv layers, RevNet's blocks).
Where x must stay anyway (another reader, a graph input), only when at most
``MAX_CONVS_BETWEEN`` other convolutions run in between: RevNet's reversible backward pass
recomputes each block's convolutions right before their gradients (at most two sets of tiles
alive), while a stack of conv-ReLU layers keeps each ReLU's output for its gradient (only the
last convolutions qualify, so its peak memory does not grow with depth).
"""

from __future__ import annotations

from tapeflow.graph.ir import CONST, Graph, Node, clone, readers, substitute
from tapeflow.kernels import winograd
from tapeflow.ops import conv_ops, fused_ops

MAX_CONVS_BETWEEN = 1
_FORWARD_CONVS = (conv_ops._conv2d, fused_ops._fused_conv2d, fused_ops._winograd_conv2d)
_GEOMETRY = ("strides", "dilations", "padding")


def takes_winograd(conv: Node) -> bool:
    """Whether convolution node `conv` (input, filter first) takes the Winograd path at the
    graph's static shapes."""
    x, w = conv.inputs[0], conv.inputs[1]
    xs, ws = x.shape.as_tuple(), w.shape.as_tuple()
    if (xs is None or ws is None or None in xs or None in ws
            or conv.attrs.get("data_format", "NHWC") != "NHWC"):
        return False
    geo = conv_ops._geometry(xs[1:3], ws[:2], conv.attrs["strides"], conv.attrs["dilations"],
                             conv.attrs["padding"])
    return winograd.applies(geo, xs[0], xs[3], ws[3], x.dtype.as_numpy_dtype)


def _winograd_pair(f: Node, b: Node) -> bool:
    """Whether forward `f` and filter gradient `b` (which reads f's input) are one
    convolution that takes the Winograd path."""
    return (f.op is fused_ops._fused_conv2d and not f.control_inputs
            and f.inputs[0] is b.inputs[0] and all(f.attrs[k] == b.attrs[k] for k in _GEOMETRY)
            and tuple(f.inputs[1].shape.as_tuple() or ())[:2] == tuple(b.attrs["filter_hw"])
            and takes_winograd(f))


def _takes_place(x_readers: list[int], f: int, b: int, inputs: set[int], x) -> bool:
    """Whether the tiles replace x: x is computed in the graph (not an input, constant or
    variable value) and only forward `f` and gradient `b` read it."""
    held = x.node.op is CONST or x.node.op.variable == "read"  # held by the graph anyway
    return id(x) not in inputs and not held and set(x_readers) == {f, b}


def run(graph: Graph) -> tuple[Graph, str]:
    """Pair each Conv2DBackpropFilter with the Winograd convolution of its input, where the
    tiles take x's place or the two run close together."""
    g, _ = clone(graph)
    found = readers(g)
    convs = [i for i, n in enumerate(g.nodes) if n.op in _FORWARD_CONVS]
    ordered = {id(c) for n in g.nodes for c in n.control_inputs}
    inputs = {id(t) for t in g.inputs}
    kept: dict[int, Node] = {}  # position of a rewritten forward -> its _WinogradConv2D
    pairs = 0
    for bi, b in enumerate(list(g.nodes)):
        if (b.op is not conv_ops._conv2d_backprop_filter or b.control_inputs
                or id(b) in ordered):
            continue
        x_readers = found.get(id(b.inputs[0]), [])
        fi = next((i for i in x_readers if i < bi
                   and (sum(i < c < bi for c in convs) <= MAX_CONVS_BETWEEN
                        or _takes_place(x_readers, i, bi, inputs, b.inputs[0]))
                   and (i in kept or (id(g.nodes[i]) not in ordered
                                      and _winograd_pair(g.nodes[i], b)))), None)
        if fi is None:
            continue
        if fi not in kept:
            f = g.nodes[fi]
            kept[fi] = substitute(g, fi, fused_ops._winograd_conv2d, list(f.inputs),
                                  dict(f.attrs), f.outputs)
        f = kept[fi]
        substitute(g, bi, fused_ops._winograd_conv2d_backprop_filter,
                   [f.outputs[1], b.inputs[1]],
                   {"input_hw": tuple(f.inputs[0].shape.as_tuple()[1:3]),
                    "filter_hw": tuple(b.attrs["filter_hw"]),
                    **{k: b.attrs[k] for k in _GEOMETRY}}, b.outputs)
        pairs += 1
    return g, (f"share_tiles: paired {pairs} filter gradients with their convolution's "
               "Winograd tiles")
