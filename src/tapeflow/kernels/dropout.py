"""The dropout mask from raw random bytes in one compiled pass.

``ops.nn_ops._dropout_mask`` keeps an entry when its random byte is above the cut's top byte
(and, for the ~1/256 entries whose byte equals it, when 32 more random bits are at least the
cut's rest). In NumPy that was a comparison, a boolean array, its float copy and a scaling
pass, ~15 us for W3's [60, 128] alone and ~35 us inside the step (each pass a fresh array
after the products had filled the cache); here one loop writes the scaled mask and counts
the ties, which a second loop then settles in order as before (12.9 us alone, ~18 us inside
the step). Same bits: each kept entry is the scale itself.
"""

from __future__ import annotations

import numpy as np

from tapeflow.kernels._jit import jit


@jit()
def _mask_nb(first, top, scale, out):
    ties = 0
    for i in range(first.shape[0]):
        b = first[i]
        out[i] = scale if b > top else 0.0
        ties += b == top
    return ties


@jit()
def _settle_nb(first, top, extra, rest, scale, out):
    j = 0
    for i in range(first.shape[0]):
        if first[i] == top:
            out[i] = scale if extra[j] >= rest else 0.0
            j += 1


def settle(first: np.ndarray, top: int, extra: np.ndarray, rest: int, scale,
           out: np.ndarray) -> None:
    """The entries whose byte equals `top`, in order, each kept (scale) when its 32-bit draw
    in `extra` is at least `rest`."""
    if _settle_nb is not None and out.dtype in (np.float32, np.float64):
        _settle_nb(first, np.uint8(top), extra, np.uint32(rest), out.dtype.type(scale), out)
        return
    tied = np.flatnonzero(first == top)
    out[tied] = np.where(extra >= rest, out.dtype.type(scale), out.dtype.type(0))


def mask(first: np.ndarray, top: int, scale: float, dtype: np.dtype) -> tuple[np.ndarray, int]:
    """(scale where a byte of `first` is above `top` else 0, in `dtype`; the number of bytes
    equal to `top`, whose entries the caller settles)."""
    out = np.empty(first.shape[0], dtype)
    if _mask_nb is not None and dtype in (np.float32, np.float64):
        return out, int(_mask_nb(first, np.uint8(top), dtype.type(scale), out))
    out[...] = np.where(first > top, dtype.type(scale), dtype.type(0))
    return out, int(np.count_nonzero(first == top))
