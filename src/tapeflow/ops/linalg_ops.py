"""Matrix multiplication with batch broadcasting and transpose flags."""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow._api import export
from tapeflow.framework import errors
from tapeflow.framework.constant import convert_to_tensor
from tapeflow.framework.dispatch import apply, op
from tapeflow.framework.shape_rules import broadcast_shapes


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


@op("MatMul", same_dtype=True, shape=_matmul_rule)
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
    return np.matmul(a, b)


@_matmul.def_grad
def _(g, out, a, b, *, transpose_a, transpose_b):
    from tapeflow.ops.math_ops import unbroadcast

    if not transpose_a and not transpose_b:
        ga = matmul(g, b, transpose_b=True)
        gb = matmul(a, g, transpose_a=True)
    elif not transpose_a and transpose_b:
        ga = matmul(g, b)
        gb = matmul(g, a, transpose_a=True)
    elif transpose_a and not transpose_b:
        ga = matmul(b, g, transpose_b=True)
        gb = matmul(a, g)
    else:
        ga = matmul(b, g, transpose_a=True, transpose_b=True)
        gb = matmul(g, a, transpose_a=True, transpose_b=True)
    return unbroadcast(ga, a), unbroadcast(gb, b)


@export("linalg.matmul", "matmul")
def matmul(a: Any, b: Any, transpose_a: bool = False, transpose_b: bool = False,
           adjoint_a: bool = False, adjoint_b: bool = False, a_is_sparse: bool = False,
           b_is_sparse: bool = False, output_type: Any = None, name: str | None = None):
    """Matrix product of the last two dims, broadcasting the batch dims."""
    if not hasattr(a, "dtype"):
        a = convert_to_tensor(a, dtype_hint=getattr(b, "dtype", None))
    if not hasattr(b, "dtype"):
        b = convert_to_tensor(b, dtype_hint=a.dtype)
    return apply(_matmul, a, b, transpose_a=bool(transpose_a or adjoint_a),
                 transpose_b=bool(transpose_b or adjoint_b))
