"""Matrix multiplication with batch broadcasting and transpose flags."""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow._api import export
from tapeflow.framework import errors
from tapeflow.framework.constant import convert_to_tensor
from tapeflow.framework.dispatch import apply, op
from tapeflow.framework.shape_rules import broadcast_shapes
from tapeflow.framework.tensor import EagerTensor
from tapeflow.kernels import einsum as _einsum_kernel
from tapeflow.kernels import matmul as _matmul_kernel
from tapeflow.kernels.low_precision import is_low, widened
from tapeflow.ops import complex_ops as _complex_ops


def _matmul_rule(a, b, *, transpose_a, transpose_b):
    (sa, dt), (sb, _) = a, b
    if sa is None or sb is None:
        return None, dt
    if len(sa) < 2 or len(sb) < 2:
        raise errors.InvalidArgumentError(
            None, "MatMul", f"MatMul: inputs must be at least rank 2, got shapes {list(sa)} and "
            f"{list(sb)}\n{errors.user_line()}")
    m, k1 = (sa[-1], sa[-2]) if transpose_a else (sa[-2], sa[-1])
    k2, n = (sb[-1], sb[-2]) if transpose_b else (sb[-2], sb[-1])
    if k1 is not None and k2 is not None and k1 != k2:
        raise errors.InvalidArgumentError(
            None, "MatMul",
            f"MatMul: inner dimensions do not match: a{list(sa)} @ b{list(sb)} "
            f"(transpose_a={transpose_a}, transpose_b={transpose_b}) contracts {k1} with {k2}"
            f"\n{errors.user_line()}")
    batch = broadcast_shapes(tuple(sa[:-2]), tuple(sb[:-2]), op="MatMul")
    return tuple(batch) + (m, n), dt


def _matmul_emit(node, args: list[str], bind) -> str | None:
    """Matrices through ``np.dot`` (same BLAS call and result as np.matmul, less dispatch),
    transposes as views; products the kernel may split over cores (large, or of unknown size)
    through the kernel."""
    a, b = args
    ranks = [t.shape.rank for t in node.inputs]
    if None in ranks or min(ranks) < 2 or is_low(node.inputs[0].dtype._np):
        return None  # 16-bit floats go through the widened kernel
    if node.attrs["transpose_a"]:
        a = f"{a}.T" if ranks[0] == 2 else f"{a}.swapaxes(-1, -2)"
    if node.attrs["transpose_b"]:
        b = f"{b}.T" if ranks[1] == 2 else f"{b}.swapaxes(-1, -2)"
    flops = _matmul_flops(node)
    if not flops or flops >= _matmul_kernel.SPLIT_FLOPS:
        return f"{bind(_matmul_kernel.matmul)}({a}, {b})"
    return f"{bind(np.dot if ranks == [2, 2] else np.matmul)}({a}, {b})"


def _matmul_flops(node) -> float:
    a, out = node.inputs[0].shape.as_tuple(), node.outputs[0].shape.num_elements()
    if out is None or a is None or len(a) < 2:
        return 0.0
    k = a[-2] if node.attrs.get("transpose_a") else a[-1]
    return 2.0 * out * k if k is not None else 0.0


@op("MatMul", same_dtype=True, shape=_matmul_rule, output="fresh", worker=True,
    flops=_matmul_flops, emit=_matmul_emit)
@widened
def _matmul(a, b, *, transpose_a, transpose_b):
    if transpose_a:
        a = np.swapaxes(a, -1, -2)
    if transpose_b:
        b = np.swapaxes(b, -1, -2)
    if a.shape[-1] != b.shape[-2]:
        raise errors.InvalidArgumentError(
            None, "MatMul",
            f"Matrix size-incompatible: In[0]: {list(a.shape)}, In[1]: {list(b.shape)} "
            f"(MatMul contracts {a.shape[-1]} with {b.shape[-2]})\n{errors.user_line()}")
    return _matmul_kernel.matmul(a, b)


@_matmul.def_grad
def _(g, out, a, b, *, transpose_a, transpose_b, needs=(True, True)):
    from tapeflow.ops.math_ops import unbroadcast

    ga = gb = None
    if needs[0]:
        if not transpose_a:
            ga = matmul(g, b, transpose_b=not transpose_b)
        else:
            ga = matmul(b, g, transpose_a=transpose_b, transpose_b=True)
        ga = unbroadcast(ga, a)
    if needs[1]:
        if not transpose_b:
            gb = matmul(a, g, transpose_a=not transpose_a)
        else:
            gb = matmul(g, a, transpose_a=True, transpose_b=transpose_a)
        gb = unbroadcast(gb, b)
    return ga, gb


@export("linalg.matmul", "matmul")
def matmul(a: Any, b: Any, transpose_a: bool = False, transpose_b: bool = False,
           adjoint_a: bool = False, adjoint_b: bool = False, a_is_sparse: bool = False,
           b_is_sparse: bool = False, output_type: Any = None, name: str | None = None):
    """Matrix product of the last two dims, broadcasting the batch dims."""
    if type(a) is not EagerTensor and not hasattr(a, "dtype"):  # converted alone, as TF's
        a = convert_to_tensor(a)                                   # wrapper does
    if type(b) is not EagerTensor and not hasattr(b, "dtype"):
        b = convert_to_tensor(b, dtype_hint=a.dtype)
    if adjoint_a and a.dtype.is_complex:
        a = apply(_complex_ops._conj, a)
    if adjoint_b and b.dtype.is_complex:
        b = apply(_complex_ops._conj, b)
    return apply(_matmul, a, b, transpose_a=bool(transpose_a or adjoint_a),
                 transpose_b=bool(transpose_b or adjoint_b))


# --- einsum -----------------------------------------------------------------------------------


def _einsum_error(equation: str, message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(
        None, "Einsum", f"Einsum {equation!r}: {message}\n{errors.user_line()}")


def _explicit_subscripts(equation: str, ranks: list[int | None]) -> str:
    """`equation` as 'ab,bc->ac' with one letter per dimension: an ellipsis becomes unused
    uppercase letters (aligned on the right, as broadcasting aligns dims), an implicit output
    becomes the ellipsis then the letters used once, sorted (NumPy's and TF's rule)."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise _einsum_error(equation, f"{len(terms)} operand subscripts for {len(ranks)} tensors")
    spare = [c for c in "ZYXWVUTSRQPONMLKJIHGFEDCBA" if c not in eq]
    counts = []
    for term, rank in zip(terms, ranks):
        letters = term.replace("...", "")
        if not letters.isalpha() and letters:
            raise _einsum_error(equation, f"subscripts must be letters, got {term!r}")
        if rank is None:
            raise _einsum_error(equation, "every operand needs a known rank")
        dots = rank - len(letters) if "..." in term else 0
        if dots < 0 or ("..." not in term and len(letters) != rank):
            raise _einsum_error(equation, f"subscripts {term!r} for an operand of rank {rank}")
        counts.append(dots)
    ellipsis = "".join(spare[:max(counts, default=0)])[::-1]
    terms = [t.replace("...", ellipsis[len(ellipsis) - n:]) for t, n in zip(terms, counts)]
    if arrow:
        out = rhs.replace("...", ellipsis)
        if not out.isalpha() and out:
            raise _einsum_error(equation, f"output subscripts must be letters, got {rhs!r}")
    else:
        once = [c for c in set("".join(terms)) if "".join(terms).count(c) == 1]
        out = ellipsis + "".join(sorted(c for c in once if c not in ellipsis))
    missing = set(out) - set("".join(terms))
    if missing or len(set(out)) != len(out):
        raise _einsum_error(equation, f"output subscripts {out!r} must be distinct letters of "
                                      "the operands")
    return ",".join(terms) + "->" + out


def _letter_sizes(shapes: list, equation: str) -> dict:
    """Each letter's size (None where unknown, size-1 dims broadcast); a clash is an error."""
    terms = equation.split("->")[0].split(",")
    sizes: dict[str, int | None] = {}
    for shape, term in zip(shapes, terms):
        for c, d in zip(term, shape or (None,) * len(term)):
            seen = sizes.get(c, 1)
            if d is None or seen is None:
                sizes[c] = None if d is None or seen in (None, 1) else d
            elif d != 1 and seen != 1 and d != seen:
                raise _einsum_error(equation, f"dimension {c!r} is {seen} in one operand and "
                                              f"{d} in another (shapes "
                                              f"{[list(s or ()) for s in shapes]})")
            else:
                sizes[c] = max(d, seen)
    return sizes


def _einsum_rule(*xs, equation):
    sizes = _letter_sizes([shape for shape, _ in xs], equation)
    return tuple(sizes[c] for c in equation.split("->")[1]), xs[0][1]


def _einsum_flops(node) -> float:
    """2 x the product of every letter's size (a contraction's multiply-adds), 0 if unknown."""
    shapes = [t.shape.as_tuple() for t in node.inputs]
    if any(s is None or None in s for s in shapes):
        return 0.0
    sizes: dict = {}
    for term, shape in zip(node.attrs["equation"].split("->")[0].split(","), shapes):
        sizes.update(zip(term, shape))
    total = 2.0
    for d in sizes.values():
        total *= d
    return total if len(node.inputs) == 2 else 0.0


@op("Einsum", same_dtype=True, shape=_einsum_rule, output="fresh", worker=True,
    flops=_einsum_flops)
@widened
def _einsum(*xs, equation):
    _letter_sizes([x.shape for x in xs], equation)
    return _einsum_kernel.einsum(equation, *xs)


@_einsum.def_grad
def _(g, out, *xs, equation):
    from tapeflow.ops.array_ops import expand_dims
    from tapeflow.ops.math_ops import _broadcast_like, unbroadcast

    terms, result = equation.split("->")
    terms = terms.split(",")
    grads = []
    for i, (x, term) in enumerate(zip(xs, terms)):
        if len(set(term)) != len(term):
            raise errors.UnimplementedError(
                None, "Einsum", f"Einsum {equation!r}: no gradient for an operand with a "
                                f"repeated subscript ({term!r}, a diagonal)\n{errors.user_line()}")
        others = terms[:i] + terms[i + 1:]
        elsewhere = set(result).union(*others)
        kept = "".join(c for c in term if c in elsewhere)
        gx = apply(_einsum, g, *xs[:i], *xs[i + 1:],
                   equation=",".join([result] + others) + "->" + kept)
        if kept != term:  # letters summed in x alone: every entry gets the same gradient
            for axis, c in enumerate(term):
                if c not in elsewhere:
                    gx = expand_dims(gx, axis)
            gx = _broadcast_like(gx, x)
        grads.append(unbroadcast(gx, x))
    return tuple(grads)


@export("einsum", "linalg.einsum")
def einsum(equation: str, *inputs: Any, **kwargs: Any):
    """Sum of products over the subscripts `equation` names (NumPy's and TF's notation:
    'ij,jk->ik', '...ij,...jk', implicit outputs, size-1 dims broadcast)."""
    if not inputs:
        raise _einsum_error(equation, "needs at least one operand")
    hint = next((x.dtype for x in inputs if hasattr(x, "dtype") and hasattr(x, "shape")), None)
    # Variables go to `apply` as they are (as matmul's do): converting one reads its value
    # into a plain tensor, and the tape would not see the variable.
    tensors = [x if hasattr(x, "_as_tensor") else convert_to_tensor(x, dtype_hint=hint)
               for x in inputs]
    explicit = _explicit_subscripts(equation, [t.shape.rank for t in tensors])
    return apply(_einsum, *tensors, equation=explicit)
