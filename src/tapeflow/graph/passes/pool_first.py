"""Average pooling before a pointwise convolution: the same result on s^2 times fewer pixels.

A 1x1 stride-1 convolution (plus bias) mixes channels pixel by pixel, and average pooling mixes
pixels channel by channel with weights that sum to 1 per window, so the two commute:
``AvgPool(Conv1x1(y) + b) == Conv1x1(AvgPool(y)) + b``. DenseNet's transitions (BN-ReLU-Conv1x1-
AvgPool2) then run their convolution on a quarter of the pixels. The backward graph, already
derived when this pass runs, has the matching identities for the gradient G = AvgPoolGrad(gp)
of the convolution's output, each valid for any gp:

    Conv2DBackpropFilter(y, G)  == Conv2DBackpropFilter(AvgPool(y), gp)
    Conv2DBackpropInput(G, w)   == AvgPoolGrad(Conv2DBackpropInput(gp, w))   (pooled size)
    BiasAddGrad(G)              == BiasAddGrad(gp)

The forward rewrite needs the convolution's (and bias's) output to feed only the pooling; the
backward ones apply to any such gradient node. Results change by float rounding only (the sums
run in another order), as with any reassociation; CSE afterwards shares AvgPool(y) between the
forward and the filter gradient.
"""

from __future__ import annotations

from tapeflow.graph.ir import Graph, Node, SymbolicTensor, _infer, clone, readers
from tapeflow.ops import conv_ops, nn_ops

_FLOATS = ("float32", "float64")


def _pointwise(node: Node) -> bool:
    """A 1x1, stride-1, undilated NHWC convolution (or one of its gradients) in float."""
    if node.op is conv_ops._conv2d_backprop_filter:
        hw = tuple(node.attrs["filter_hw"])
    else:  # Conv2D, Conv2DBackpropInput: the filter is the second input
        w_shape = node.inputs[1].shape
        hw = tuple(w_shape.as_list()[:2]) if w_shape.rank == 4 else None
    return (hw == (1, 1) and node.attrs["padding"] in ("SAME", "VALID")
            and tuple(node.attrs["strides"]) == (1, 1)
            and tuple(node.attrs["dilations"]) == (1, 1)
            and node.outputs[0].dtype.name in _FLOATS)


def _pool_attrs(node: Node) -> dict | None:
    """ksize/strides/padding of an AvgPool(Grad) that shrinks the image, else None."""
    attrs = {k: node.attrs[k] for k in ("ksize", "strides", "padding")}
    if attrs["padding"] not in ("SAME", "VALID") or tuple(attrs["strides"]) == (1, 1):
        return None
    return attrs


def _static_hw(t: SymbolicTensor) -> tuple[int, int] | None:
    dims = t.shape.as_list() if t.shape.rank == 4 else None
    return (dims[1], dims[2]) if dims and dims[1] is not None and dims[2] is not None else None


class _Rewriter:
    def __init__(self, g: Graph):
        self.g = g
        self.readers = readers(g)  # a graph output counts as a reader
        self.emitted: list[Node] = []
        self.count = 0

    def emit(self, op, inputs: list, attrs: dict, like: Node, name: str) -> SymbolicTensor:
        """A new node named `name`, placed where `like` was; its first output."""
        specs = [(t.shape.as_tuple(), t.dtype) for t in inputs]
        out = _infer(op, specs, attrs)
        node = self.g.add_node(op, inputs, attrs, list(out) if op.multi_output else [out],
                               name=name, location=like.location)
        self.g.nodes.pop()
        self.emitted.append(node)
        return node.outputs[0]

    def only_reader(self, t: SymbolicTensor) -> bool:
        return len(self.readers.get(id(t), [])) == 1

    def rewrite(self, node: Node) -> SymbolicTensor | None:
        """The replacement for `node`'s output, or None to keep the node."""
        if node.op.stateful or node.control_inputs:
            return None
        op = node.op
        if op is conv_ops._avg_pool:
            return self._forward(node)
        source = node.inputs[0] if op in (conv_ops._conv2d_backprop_input,
                                          nn_ops._bias_add_grad) else (
            node.inputs[1] if op is conv_ops._conv2d_backprop_filter else None)
        if source is None or source.node.op is not conv_ops._avg_pool_grad:
            return None
        pool_grad = source.node
        attrs = _pool_attrs(pool_grad)
        gp = pool_grad.inputs[0]
        if attrs is None or _static_hw(gp) is None:
            return None
        if op is nn_ops._bias_add_grad:
            if node.attrs["data_format"].startswith("NC"):
                return None
            return self.emit(nn_ops._bias_add_grad, [gp], dict(node.attrs), node, node.name)
        if not _pointwise(node):
            return None
        if op is conv_ops._conv2d_backprop_filter:
            y = node.inputs[0]
            pooled = self.emit(conv_ops._avg_pool, [y], attrs, node, pool_grad.name + "/input")
            return self.emit(conv_ops._conv2d_backprop_filter, [pooled, gp], dict(node.attrs),
                             node, node.name)
        small = self.emit(conv_ops._conv2d_backprop_input, [gp, node.inputs[1]],
                          {**node.attrs, "input_hw": _static_hw(gp)}, node, node.name)
        return self.emit(conv_ops._avg_pool_grad, [small],
                         {**attrs, "input_hw": pool_grad.attrs["input_hw"]}, node,
                         pool_grad.name)

    def _forward(self, pool: Node) -> SymbolicTensor | None:
        attrs = _pool_attrs(pool)
        t = pool.inputs[0]
        if attrs is None or not self.only_reader(t):
            return None
        bias = None
        if t.node.op is nn_ops._bias_add and not t.node.attrs["data_format"].startswith("NC"):
            bias, t = t.node, t.node.inputs[0]
            if not self.only_reader(t) or bias.op.stateful or bias.control_inputs:
                return None
        conv = t.node
        if conv.op is not conv_ops._conv2d or not _pointwise(conv) or conv.control_inputs:
            return None
        pooled = self.emit(conv_ops._avg_pool, [conv.inputs[0]], attrs, pool, pool.name)
        out = self.emit(conv_ops._conv2d, [pooled, conv.inputs[1]], dict(conv.attrs), pool,
                        conv.name)
        if bias is not None:
            out = self.emit(nn_ops._bias_add, [out, bias.inputs[1]], dict(bias.attrs), pool,
                            bias.name)
        return out


def run(graph: Graph) -> tuple[Graph, str]:
    """Move average pooling ahead of pointwise convolutions, forward and backward."""
    g, _ = clone(graph)
    rw = _Rewriter(g)
    subst: dict[int, SymbolicTensor] = {}
    nodes: list[Node] = []
    for node in list(g.nodes):
        node.inputs = [subst.get(id(t), t) for t in node.inputs]
        new = rw.rewrite(node) if len(node.outputs) == 1 else None
        nodes.extend(rw.emitted)
        rw.emitted = []
        if new is None or new.shape != node.outputs[0].shape:  # static shapes must agree
            nodes.append(node)
            continue
        subst[id(node.outputs[0])] = new
        rw.count += 1
    g.nodes = nodes
    g.outputs = [subst.get(id(t), t) if isinstance(t, SymbolicTensor) else t
                 for t in g.outputs]
    return g, (f"pool_first: rewrote {rw.count} nodes to pool before a pointwise convolution "
               "(forward, its gradients, bias gradients)")
