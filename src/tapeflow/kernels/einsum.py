"""A two-operand einsum as one batched BLAS product over views, planned once per shape.

Why: ``np.einsum(..., optimize=True)`` plans the contraction on every call (~0.1 ms of
Python), then copies transposed operands and the result. Keras's MultiHeadAttention is all
einsums: W9's two-block Transformer step runs 33 of them, 31 ms of its 75 ms graph step. Here
each operand is transposed to [batch..., rows, inner] / [batch..., inner, cols] (views wherever
the merged axes are adjacent, as in every projection), and the product is written straight
into the output in its final layout through a strided view (BLAS takes any row stride): the
attention combine 'acbe,aecd->abcd' over [32, 4, 64, 64] x [32, 64, 4, 32] took 1.8 ms in
np.einsum and 0.39 ms here.

Plans cover products where every letter is a batch letter (both operands and the output), a
contracted letter (both operands only) or a free letter of one operand kept in the output, with
float or complex operands of equal sizes per letter; anything else (a diagonal, a letter summed
in one operand alone, size-1 broadcasting, three operands) is ``np.einsum``'s.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from tapeflow.kernels import bias as _bias
from tapeflow.kernels import matmul as _matmul


class _Plan:
    """Axis permutations and shapes of one equation at one pair of shapes."""

    __slots__ = ("perm_a", "perm_b", "shape_a", "shape_b", "out_shape", "to_out", "mm_shape",
                 "tail")

    def __init__(self, perm_a, perm_b, shape_a, shape_b, out_shape, to_out, mm_shape, tail):
        self.perm_a, self.perm_b = perm_a, perm_b
        self.shape_a, self.shape_b = shape_a, shape_b
        self.out_shape, self.to_out, self.mm_shape = out_shape, to_out, mm_shape
        self.tail = tail  # the output's last axes that are the product's columns, in order


@functools.lru_cache(maxsize=1024)
def _plan(equation: str, shape_a: tuple, shape_b: tuple) -> _Plan | None:
    lhs, out = equation.split("->")
    terms = lhs.split(",")
    if len(terms) != 2:
        return None
    ta, tb = terms
    if len(set(ta)) != len(ta) or len(set(tb)) != len(tb) or len(set(out)) != len(out):
        return None
    size: dict[str, int] = {}
    for term, shape in ((ta, shape_a), (tb, shape_b)):
        if len(term) != len(shape):
            return None
        for c, d in zip(term, shape):
            if size.setdefault(c, d) != d:
                return None  # size-1 broadcasting: np.einsum's
    batch = [c for c in out if c in ta and c in tb]
    free_a = [c for c in out if c in ta and c not in tb]
    free_b = [c for c in out if c in tb and c not in ta]
    inner = [c for c in ta if c in tb and c not in out]
    if len(batch) + len(free_a) + len(inner) != len(ta) or \
            len(batch) + len(free_b) + len(inner) != len(tb) or \
            len(batch) + len(free_a) + len(free_b) != len(out):
        return None  # a letter summed in one operand alone

    def prod(letters):
        return math.prod(size[c] for c in letters)

    lead = tuple(size[c] for c in batch)
    m, k, n = prod(free_a), prod(inner), prod(free_b)
    order = batch + free_a + free_b
    return _Plan(perm_a=tuple(ta.index(c) for c in batch + free_a + inner),
                 perm_b=tuple(tb.index(c) for c in batch + inner + free_b),
                 shape_a=lead + (m, k), shape_b=lead + (k, n),
                 out_shape=tuple(size[c] for c in out),
                 to_out=tuple(out.index(c) for c in order),
                 mm_shape=lead + (m, n),
                 tail=tuple(size[c] for c in free_b) if out.endswith("".join(free_b)) else None)


def einsum(equation: str, *xs: np.ndarray, bias: np.ndarray | None = None) -> np.ndarray:
    """np.einsum(equation, *xs) for an explicit equation ('ab,bc->ac', one letter per axis),
    always a new array; with `bias` (shaped like the output's last axes), plus bias: added to
    each slice of the product as it is made (``kernels.matmul``'s epilogue) when the bias
    covers the product's columns, else in one pass afterwards."""
    if len(xs) == 2 and all(x.dtype.kind in "fc" for x in xs):
        a, b = xs
        plan = _plan(equation, a.shape, b.shape)
        if plan is not None:
            return _run(plan, a, b, bias)
    out = np.asarray(np.einsum(equation, *xs, optimize=len(xs) > 1))
    if any(np.may_share_memory(out, x) for x in xs):  # a transpose or diagonal of one operand
        out = out.copy()
    if bias is not None:
        out += bias
    return out


def _run(plan: _Plan, a: np.ndarray, b: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
    a2 = a.transpose(plan.perm_a).reshape(plan.shape_a)
    b2 = b.transpose(plan.perm_b).reshape(plan.shape_b)
    out = np.empty(plan.out_shape, np.result_type(a, b))
    try:  # the product's [batch, rows, cols] as a view of the output, if the layout allows
        view = out.transpose(plan.to_out).reshape(plan.mm_shape, copy=False)
    except ValueError:
        view = None
    if view is not None:
        epilogue = None
        if bias is not None and plan.tail is not None and bias.shape == plan.tail:
            epilogue = _bias.epilogue(bias.reshape(-1))
            bias = None
        _matmul.matmul_into(a2, b2, view, epilogue)
    else:
        product = np.matmul(a2, b2)
        ordered = [plan.out_shape[i] for i in plan.to_out]
        out.transpose(plan.to_out)[...] = product.reshape(ordered)
    if bias is not None:
        out += bias
    return out
