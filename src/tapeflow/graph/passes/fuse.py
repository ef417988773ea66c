"""Operator fusion: a producer whose output only one consumer reads is merged into it.

Each rule names a (producer -> consumer) chain and the fused primitive that replaces both
(``ops/fused_ops.py``, ``ops/fused_matmul.py``): Conv2D -> BiasAdd, that -> Relu, FusedBatchNorm
-> Relu, MatMul -> AddV2 of a bias, that -> Relu, Einsum -> AddV2 of a bias, and in backward
graphs ReluGrad -> FusedBatchNormGrad, then -> AddV2 of another gradient into its dx, and an
AvgPoolGrad whose windows tile x -> that (the pooled gradient read in place). The chains
are memory-bound passes over activation-sized arrays, so a fused node saves one full read and
write of such an array (and a fresh buffer); a product's bias and ReLU are applied to each of
its slices on the slice's thread.

A chain fuses only when the intermediate tensor has no other reader (no other node, no graph
output), neither node is stateful or ordered by control dependencies, and the fused node has a
position in the node list where all its inputs are computed and before every reader of the
outputs it takes over.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tapeflow.graph.ir import Graph, Node, SymbolicTensor, clone, readers
from tapeflow.ops import (
    conv_ops,
    fused_matmul,
    fused_ops,
    linalg_ops,
    math_ops,
    nn_ops,
    normalization_ops,
)

_FLOATS = ("float32", "float64")
_RELU = nn_ops._relu.name  # the fused ops' activation attribute names the op it applies

# build(producer, consumer) -> (op, inputs, attrs, outputs) or None to skip; each output is a
# tensor of the pair whose readers the fused node takes over, or a (shape, dtype) for a new one
Build = Callable[[Node, Node], "tuple | None"]


@dataclass(frozen=True)
class Rule:
    producer: str
    consumer: str
    operands: tuple[int, ...]  # inputs of the consumer the producer's output may be
    build: Build


def _conv_bias(p: Node, c: Node):
    if c.attrs["data_format"].startswith("NC"):
        return None
    return (fused_ops._fused_conv2d, [*p.inputs, c.inputs[1]],
            {**p.attrs, "activation": None}, list(c.outputs))


def _conv_relu(p: Node, c: Node):
    if p.attrs["activation"] is not None:
        return None
    return fused_ops._fused_conv2d, list(p.inputs), {**p.attrs, "activation": _RELU}, \
        list(c.outputs)


def _bn_relu(p: Node, c: Node):
    if c.inputs[0] is not p.outputs[0]:
        return None
    x = p.inputs[0]
    coefficients = ((2, x.shape[-1] if x.shape.rank else None), x.dtype)  # a fresh output
    return (fused_ops._fused_batch_norm_ex, list(p.inputs), {**p.attrs, "activation": _RELU},
            [c.outputs[0], *p.outputs[1:], coefficients])


def _relu_grad_bn_grad(p: Node, c: Node):
    g, y = p.inputs
    forward = y.node
    if (forward.op is fused_ops._fused_batch_norm_ex and y is forward.outputs[0]
            and forward.attrs["activation"] == _RELU and c.inputs[1] is forward.inputs[0]):
        # the mask from the forward's coefficients and the x read anyway, not from y
        return (fused_ops._fused_batch_norm_grad_ex, [g, forward.outputs[4], *c.inputs[1:]],
                {"mask_from": "coefficients"}, list(c.outputs))
    return (fused_ops._fused_batch_norm_grad_ex, [g, y, *c.inputs[1:]], {"mask_from": "output"},
            list(c.outputs))


def _bn_grad_add(p: Node, c: Node):
    dx, other = (c.inputs[0], c.inputs[1]) if c.inputs[0] is p.outputs[0] else c.inputs[::-1]
    if (dx is not p.outputs[0] or len(p.inputs) != 6 or not dx.shape.is_fully_defined()
            or other.shape != dx.shape or other.dtype is not dx.dtype):
        return None  # only dx, without broadcasting, into a fused grad without an addend yet
    return (fused_ops._fused_batch_norm_grad_ex, [*p.inputs, other], dict(p.attrs),
            [c.outputs[0], *p.outputs[1:]])


def _pool_grad_bn_grad(p: Node, c: Node):
    """AvgPoolGrad -> ``_FusedBatchNormGradEx`` of its output, for windows that tile x (each
    entry in one window: kernel = strides, VALID, dividing x's height and width)."""
    ksize, strides = tuple(p.attrs["ksize"]), tuple(p.attrs["strides"])
    x = c.inputs[2]
    hw = x.shape.as_tuple()[1:3] if x.shape.rank == 4 else None
    if (c.inputs[0] is not p.outputs[0] or c.attrs.get("pooled") is not None
            or p.attrs["padding"] != "VALID" or ksize != strides or len(ksize) != 2
            or hw is None or None in hw or tuple(p.attrs["input_hw"]) != tuple(hw)
            or hw[0] % ksize[0] or hw[1] % ksize[1]):
        return None
    return (fused_ops._fused_batch_norm_grad_ex, [p.inputs[0], *c.inputs[1:]],
            {**c.attrs, "pooled": ksize}, list(c.outputs))


def _bias_operand(p: Node, c: Node) -> SymbolicTensor | None:
    """The other operand of the add `c` when it is a bias for `p`'s output: the shape of that
    output's last axes (so the add broadcasts it over the leading ones and keeps the shape)."""
    y = p.outputs[0]
    b = c.inputs[1] if c.inputs[0] is y else c.inputs[0]
    ys, bs = y.shape.as_tuple(), b.shape.as_tuple()
    if (b is y or ys is None or bs is None or None in ys or None in bs or not bs
            or len(bs) >= len(ys) or ys[len(ys) - len(bs):] != bs or b.dtype is not y.dtype
            or c.outputs[0].shape.as_tuple() != ys):
        return None
    return b


def _matmul_bias(p: Node, c: Node):
    b = _bias_operand(p, c)
    if (b is None or b.shape.rank != 1 or p.attrs["transpose_a"] or p.attrs["transpose_b"]
            or any(t.shape.rank != 2 for t in p.inputs)):
        return None
    return (fused_matmul._fused_matmul, [*p.inputs, b], {"activation": None}, list(c.outputs))


def _matmul_relu(p: Node, c: Node):
    if p.attrs["activation"] is not None:
        return None
    return fused_matmul._fused_matmul, list(p.inputs), {"activation": _RELU}, list(c.outputs)


def _einsum_bias(p: Node, c: Node):
    b = _bias_operand(p, c)
    if b is None or len(p.inputs) != 2:
        return None
    return (fused_matmul._einsum_bias, [*p.inputs, b], dict(p.attrs), list(c.outputs))


RULES = [
    Rule(conv_ops._conv2d.name, nn_ops._bias_add.name, (0,), _conv_bias),
    Rule(fused_ops._fused_conv2d.name, nn_ops._relu.name, (0,), _conv_relu),
    Rule(normalization_ops._fused_batch_norm.name, nn_ops._relu.name, (0,), _bn_relu),
    Rule(nn_ops._relu_grad.name, normalization_ops._fused_batch_norm_grad.name, (0,),
         _relu_grad_bn_grad),
    Rule(fused_ops._fused_batch_norm_grad_ex.name, math_ops._add.name, (0, 1), _bn_grad_add),
    Rule(conv_ops._avg_pool_grad.name, fused_ops._fused_batch_norm_grad_ex.name, (0,),
         _pool_grad_bn_grad),
    Rule(linalg_ops._matmul.name, math_ops._add.name, (0, 1), _matmul_bias),
    Rule(fused_matmul._fused_matmul.name, nn_ops._relu.name, (0,), _matmul_relu),
    Rule(linalg_ops._einsum.name, math_ops._add.name, (0, 1), _einsum_bias),
]
_BY_CONSUMER = {r.consumer: [x for x in RULES if x.consumer == r.consumer] for r in RULES}


def _plain(node: Node, ordered: set[int]) -> bool:
    return not (node.op.stateful or node.control_inputs or id(node) in ordered)


class _Fuser:
    """One scan in program order. A fused node takes the consumer's or the producer's slot and
    the other slot becomes a hole (removed at the end), so positions stay valid throughout and
    a fused node is seen as a producer by the consumers after it (Conv2D, BiasAdd, Relu)."""

    def __init__(self, g: Graph):
        self.g = g
        self.slots: list[Node | None] = list(g.nodes)
        self.readers = readers(g)
        self.pos = {id(n): i for i, n in enumerate(g.nodes)}
        self.ordered = {id(c) for n in g.nodes for c in n.control_inputs}
        self.counts: dict[str, int] = {}

    def run(self) -> None:
        for ci in range(len(self.slots)):
            c = self.slots[ci]
            while c is not None and self._try(c):
                c = self.slots[ci]
        self.g.nodes = [n for n in self.slots if n is not None]

    def _try(self, c: Node) -> bool:
        """Fuse `c` with its producer by the first rule that applies; True if one did."""
        for rule, t in ((r, c.inputs[i]) for r in _BY_CONSUMER.get(c.op.name, ())
                        for i in r.operands if i < len(c.inputs)):
            p = t.node
            if (p.op.name != rule.producer or t.dtype.name not in _FLOATS
                    or not (_plain(p, self.ordered) and _plain(c, self.ordered))
                    or self.readers.get(id(t)) != [self.pos[id(c)]]):
                continue
            built = rule.build(p, c)
            if built is None:
                continue
            at = self._placement(p, c, *built[1:4:2])
            if at is not None:
                self._replace(p, c, at, *built)
                return True
        return False

    def _placement(self, p: Node, c: Node, inputs: list, taken: list) -> int | None:
        """The consumer's slot, or failing that the producer's: one where every input is
        computed before and every reader of the taken-over outputs comes after."""
        pi, ci = self.pos[id(p)], self.pos[id(c)]
        earliest_reader = min((r for t in taken if isinstance(t, SymbolicTensor)
                               for r in self.readers.get(id(t), []) if r not in (pi, ci)),
                              default=len(self.slots))
        latest_input = max((self.pos[id(t.node)] for t in inputs
                            if t.node is not p and t.node is not c), default=-1)
        return next((at for at in (ci, pi) if latest_input < at < earliest_reader), None)

    def _replace(self, p: Node, c: Node, at: int, fused_op, inputs: list, attrs: dict,
                 taken: list) -> None:
        g, pi, ci = self.g, self.pos[id(p)], self.pos[id(c)]
        specs = [(x.shape, x.dtype) if isinstance(x, SymbolicTensor) else x for x in taken]
        node = g.add_node(fused_op, inputs, attrs, specs, name=c.name, location=c.location)
        g.nodes.pop()
        node.name = c.name
        for old in (p, c):  # the inputs of the two nodes are now read by the fused node
            for t in old.inputs:
                rs = self.readers[id(t)]
                rs.remove(self.pos[id(old)])
        for t in inputs:
            self.readers.setdefault(id(t), []).append(at)
        for old, new in zip(taken, node.outputs):
            if not isinstance(old, SymbolicTensor):
                continue  # an output the fused op adds (no reader yet)
            rs = self.readers.pop(id(old), [])
            self.readers[id(new)] = rs
            for r in rs:
                if r == len(self.slots):
                    g.outputs = [new if x is old else x for x in g.outputs]
                else:
                    reader = self.slots[r]
                    reader.inputs = [new if x is old else x for x in reader.inputs]
        self.slots[pi] = self.slots[ci] = None
        self.slots[at] = node
        self.pos[id(node)] = at
        self.counts[fused_op.name] = self.counts.get(fused_op.name, 0) + 1


def run(graph: Graph) -> tuple[Graph, str]:
    """Fuse every matching chain (a fused node can absorb the next one: Conv2D, BiasAdd, Relu)."""
    g, _ = clone(graph)
    fuser = _Fuser(g)
    fuser.run()
    counts = fuser.counts
    detail = ", ".join(f"{n} x{k}" for n, k in sorted(counts.items()))
    return g, f"fuse: fused {sum(counts.values())} chains" + (f" ({detail})" if detail else "")
