"""Matrix products over the idle cores: rows (or batch entries) split by size, BLAS on one
thread per slice.

Why: the thread policy keeps BLAS on one thread (``framework.threads``: OpenBLAS's own spinning
threads stalled graphs), so a large product ran on one core even with the other idle: W9's
[2048, 128] x [128, 256] products and W10's [3200, 64] x [64, 512] ones. As every other
kernel does (``kernels.parallel``), a product of at least ``SPLIT_FLOPS`` is cut into slices
by its size alone, and the slices run one per idle core, or one after another on this thread
when no core is idle: the result is the same bits either way.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tapeflow.framework.threads import intra_op_threads
from tapeflow.kernels import parallel

SPLIT_FLOPS = 20e6  # measured idle: 12 MFLOP (W1's [60,784]x[784,128]) split 150 us vs
# one call 129 us; 26 MFLOP split 224 vs 258 us; 134 MFLOP (W9) 767 vs 1325 us
# Each slice packs the whole right operand again: cut by rows, [60, 784] x [784, 128] took 18%
# more CPU in two slices, by columns 5%; from 128 rows a slice the rows cost nothing (2%).
ROWS_PER_SLICE = 128


def slices_for(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> int:
    """How many slices the product a @ b -> out is cut into (its size alone decides)."""
    if out.ndim < 2:
        return 1
    flops = 2.0 * out.size * a.shape[-1]
    if flops < SPLIT_FLOPS:
        return 1
    return intra_op_threads()


# epilogue(out_slice, lo, hi): applied in place to each slice of a product's output right after
# the slice is computed (on the slice's thread, while it is in cache); lo:hi are the slice's
# columns (all of them when the rows were split): a bias add and ReLU (ops/fused_matmul.py)
Epilogue = Callable[[np.ndarray, int, int], None]


def matmul_into(a: np.ndarray, b: np.ndarray, out: np.ndarray,
                epilogue: Epilogue | None = None) -> np.ndarray:
    """np.matmul(a, b, out=out) with `out` any strided view, split over the idle cores: by the
    leading axis when both `a` and `out` have it (batch entries, or a matrix's rows when each
    slice keeps ROWS_PER_SLICE), else by the columns; `epilogue` then runs on each slice."""
    slices = slices_for(a, b, out)
    if slices == 1:
        np.matmul(a, b, out=out)
        if epilogue is not None:
            epilogue(out, 0, out.shape[-1])
        return out
    lead = out.shape[0]
    if lead > 1 and a.ndim == out.ndim and a.shape[0] == lead and \
            (b.ndim == 2 or b.ndim == out.ndim and b.shape[0] == lead) and \
            (out.ndim > 2 or lead >= ROWS_PER_SLICE * slices or out.shape[-1] < 2 * slices):
        sliced_b = b.ndim > 2

        def rows(lo: int, hi: int) -> None:
            np.matmul(a[lo:hi], b[lo:hi] if sliced_b else b, out=out[lo:hi])
            if epilogue is not None:
                epilogue(out[lo:hi], 0, out.shape[-1])

        parallel.split(lead, 0, rows, slices=slices)
    else:
        def cols(lo: int, hi: int) -> None:
            np.matmul(a, b[..., lo:hi], out=out[..., lo:hi])
            if epilogue is not None:
                epilogue(out[..., lo:hi], lo, hi)

        parallel.split(out.shape[-1], 0, cols, slices=slices)
    return out


def matmul(a: np.ndarray, b: np.ndarray, epilogue: Epilogue | None = None) -> np.ndarray:
    """a @ b (NumPy's broadcasting over batch axes), large products split over idle cores;
    `epilogue` (see ``matmul_into``) on the fresh result, slice by slice."""
    if a.ndim == 2 and b.ndim == 2 and a.shape[1] == b.shape[0] and \
            2.0 * a.shape[0] * a.shape[1] * b.shape[1] < SPLIT_FLOPS:
        out = np.dot(a, b)  # one BLAS call, without the checks and allocation below (~3 us)
    elif a.ndim < 2 or b.ndim < 2 or a.shape[-1] != b.shape[-2]:
        out = np.matmul(a, b)
    else:
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        out = np.empty(batch + (a.shape[-2], b.shape[-1]), np.result_type(a, b))
        return matmul_into(a, b, out, epilogue)
    if epilogue is not None:
        epilogue(out, 0, out.shape[-1])
    return out
