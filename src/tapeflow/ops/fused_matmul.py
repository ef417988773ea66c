"""``_FusedMatMul(x, w, b)``: MatMul -> bias add [-> Relu], the eager Keras ``Dense`` step.

An eager Dense layer ran three ops: the product, a bias add broadcast over the rows (NumPy's
broadcasting add took 2.4 us on the seed MLP's [60, 128], a same-shape add 0.9 us), and a
ReLU (np.maximum 3.5 us). Here the bias and the ReLU are applied in place on the product's
fresh output in one compiled pass (``kernels.bias.add_bias_inplace``), one dispatch and one
tape entry instead of three. The values are the unfused chain's bits: the same 2-D product
(``np.dot``, as the graph's code calls it), then ``y + b`` and ``max(., 0)`` per element. The
gradient rule is the three ops' rules composed (ReluGrad, the bias's row sum as AddV2's
``unbroadcast``, the two products), so eager gradients are the unfused ones bit for bit.

Only eager Dense calls take it (``keras/layers/core.py``); a traced Dense keeps the three ops,
which the graph's own passes schedule and fuse (TensorFlow's grappler likewise makes its
_FusedMatMul from a traced graph, never eagerly).
"""

from __future__ import annotations

from tapeflow.framework.dispatch import apply, op
from tapeflow.kernels import bias as _bias
from tapeflow.kernels import einsum as _einsum_kernel
from tapeflow.kernels import matmul as _matmul_kernel
from tapeflow.ops import linalg_ops, nn_ops
from tapeflow.ops.math_ops import unbroadcast

RELU = nn_ops._relu.name  # the activation attribute names the op it applies, as _FusedConv2D's


def _rule(x, w, b, *, activation):
    (xs, dtype), (ws, _) = x, w
    if xs is None or ws is None:
        return None, dtype
    return (xs[0], ws[1]), dtype


def _flops(node) -> float:
    x, w = (t.shape.as_tuple() for t in node.inputs[:2])
    if x is None or w is None or None in x or None in w:
        return 0.0
    return 2.0 * x[0] * x[1] * w[1]


@op("_FusedMatMul", same_dtype=True, shape=_rule, output="fresh", worker=True, flops=_flops)
def _fused_matmul(x, w, b, *, activation):
    relu = activation == RELU
    if x.ndim == 2 and w.ndim == 2 and \
            2.0 * x.shape[0] * x.shape[1] * w.shape[-1] < _matmul_kernel.SPLIT_FLOPS:
        out = _matmul_kernel.matmul(x, w)  # one BLAS call, then one compiled pass
        if _bias._add_bias_nb is not None and out.dtype.char in "fd" and \
                out.flags.c_contiguous:
            _bias._add_bias_nb(out, b, relu)
            return out
        return _bias.add_bias_inplace(out, b, relu=relu)
    # a product split over cores: the bias (and ReLU) on each slice as it is made, on the
    # slice's thread, while the slice is in cache
    return _matmul_kernel.matmul(x, w, epilogue=_bias.epilogue(b, relu))


@_fused_matmul.def_grad
def _(g, out, x, w, b, *, activation, needs=(True, True, True)):
    if activation == RELU:
        g = apply(nn_ops._relu_grad, g, out)
    gx = linalg_ops.matmul(g, w, transpose_b=True) if needs[0] else None
    gw = linalg_ops.matmul(x, g, transpose_a=True) if needs[1] else None
    gb = unbroadcast(g, b) if needs[2] else None
    return gx, gw, gb


def dense(x, kernel, bias, activation: str | None):
    """activation(x @ kernel + bias) for a float32/float64 matrix `x` and vector `bias`;
    `activation` is None or ``RELU``."""
    if activation not in (None, RELU):
        raise ValueError(f"_FusedMatMul: activation must be None or {RELU!r}, got "
                         f"{activation!r}")
    return apply(_fused_matmul, x, kernel, bias, activation=activation)


def _einsum_bias_rule(a, b, bias, *, equation):
    return linalg_ops._einsum_rule(a, b, equation=equation)


@op("_EinsumBias", same_dtype=True, shape=_einsum_bias_rule, output="fresh")
def _einsum_bias(a, b, bias, *, equation):
    """einsum(equation, a, b) + bias, `bias` shaped like the output's last axes (Keras's
    ``EinsumDense``, MultiHeadAttention's projections): the fusion pass makes it from Einsum ->
    AddV2. The bias is added to each slice of the product as the slice is made, on its thread
    (``kernels.einsum``): W9's ten projections' bias adds were 2.2 ms of one-core passes over
    [32, 64, 128] arrays after the split products. Same bits as the two ops: the same product,
    then one IEEE add per element."""
    return _einsum_kernel.einsum(equation, a, b, bias=bias)


@_einsum_bias.def_grad
def _(g, out, a, b, bias, *, equation):
    ga, gb = linalg_ops._einsum.grad_fn(g, out, a, b, equation=equation)
    return ga, gb, unbroadcast(g, bias)
