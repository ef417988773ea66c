"""Concatenation along the last axis (DenseNet's channel concatenations), one pass per row.

NumPy copies each input into a strided slice of the output; with a thin last input (12
channels = 48 bytes per row) that inner copy is short and slow. The compiled loop writes each
output row once, left to right: 0.94 ms against 1.58 ms for [64,32,32,52] + [64,32,32,12],
and splits the rows over the idle cores.

A chain of concatenations that each append to the previous one (a dense block: c1 = [x, y1],
c2 = [c1, y2], ...) can instead grow one buffer in place (``start``, ``append``): each result
is a channel prefix of the final width, so c2 writes only y2's channels and every ci shares
the memory of the last (``graph/passes/grow_concat.py`` decides when that is safe).
"""

from __future__ import annotations

import numpy as np

from tapeflow.kernels import parallel
from tapeflow.kernels._jit import jit
from tapeflow.kernels.low_precision import is_low
from tapeflow.kernels.rows import rows


@jit()
def _concat_rows2_nb(a, b, out):
    m, c1 = a.shape
    c2 = b.shape[1]
    for i in range(m):
        for j in range(c1):
            out[i, j] = a[i, j]
        for j in range(c2):
            out[i, c1 + j] = b[i, j]


def concat(xs: tuple[np.ndarray, ...], axis: int) -> np.ndarray:
    """np.concatenate(xs, axis), compiled for two C-contiguous float arrays on the last axis."""
    if (_concat_rows2_nb is None or len(xs) != 2 or xs[0].ndim < 2
            or axis not in (-1, xs[0].ndim - 1) or xs[0].dtype != xs[1].dtype
            or xs[0].dtype not in (np.float32, np.float64) or xs[0].shape[:-1] != xs[1].shape[:-1]
            or not (xs[0].flags.c_contiguous and xs[1].flags.c_contiguous)):
        return np.concatenate(xs, axis=axis)
    a, b = xs
    out = np.empty(a.shape[:-1] + (a.shape[-1] + b.shape[-1],), dtype=a.dtype)
    a2, b2, out2 = rows(a), rows(b), rows(out)
    parallel.split(out2.shape[0], 2 * out.nbytes,
                   lambda lo, hi: _concat_rows2_nb(a2[lo:hi], b2[lo:hi], out2[lo:hi]))
    return out


@jit()
def _into_columns_nb(src, dst, at):
    """dst[:, at:at + c] = src, row by row as 1-D slices: indexing dst[i, at + j] (a signed
    column index whose wraparound check stays in the loop) kept it scalar, 2.5-4x slower (a
    [65536, 12] append into a 64-channel buffer, in cache: 0.62 -> 0.26 ms)."""
    m, c = src.shape
    for i in range(m):
        si, di = src[i], dst[i, at:at + c]
        for j in range(c):
            di[j] = si[j]


def _write(buf: np.ndarray, at: int, xs: tuple[np.ndarray, ...]) -> int:
    """Copy each x into the next channels of `buf` from channel `at`; the channel after them."""
    buf2 = rows(buf)
    for x in xs:
        c = x.shape[-1]
        if _in_place(x, buf, at):  # its producer stored it there (``winograd.conv2d(into=...)``)
            at += c
            continue
        if _into_columns_nb is None or not x.flags.c_contiguous or x.dtype != buf.dtype \
                or is_low(x.dtype):  # numba has no float16/bfloat16
            buf[..., at:at + c] = x
        else:
            x2 = rows(x)
            parallel.split(x2.shape[0], 2 * x2.nbytes, lambda lo, hi, x2=x2, at=at:
                           _into_columns_nb(x2[lo:hi], buf2[lo:hi], at))
        at += c
    return at


def _in_place(x: np.ndarray, buf: np.ndarray, at: int) -> bool:
    """Whether x is buf's channels at..at+C already (the same memory, not a copy)."""
    return (x.shape == buf.shape[:-1] + (x.shape[-1],) and x.strides == buf.strides
            and x.dtype == buf.dtype and x.__array_interface__["data"][0]
            == buf.__array_interface__["data"][0] + at * buf.itemsize)


def start(xs: tuple[np.ndarray, ...], width: int) -> np.ndarray:
    """The concatenation of `xs` on the last axis, as the channel prefix of a fresh array
    `width` channels wide whose other channels ``append`` fills later."""
    lead = xs[0].shape[:-1]
    if any(x.shape[:-1] != lead for x in xs) or sum(x.shape[-1] for x in xs) > width:
        return concat(xs, -1)
    buf = np.empty(lead + (width,), dtype=np.result_type(*xs))
    return buf[..., :_write(buf, 0, xs)]


def room(prev: np.ndarray, extra: int) -> np.ndarray | None:
    """The buffer `prev` is the channel prefix of (from ``start``), if it has `extra` channels
    left after it; None for any other array."""
    buf = prev.base
    if (not isinstance(buf, np.ndarray) or buf.base is not None or not buf.flags.c_contiguous
            or buf.ndim != prev.ndim or buf.shape[:-1] != prev.shape[:-1]
            or buf.dtype != prev.dtype or prev.strides != buf.strides
            or prev.__array_interface__["data"][0] != buf.__array_interface__["data"][0]
            or prev.shape[-1] + extra > buf.shape[-1]):
        return None
    return buf


def append(prev: np.ndarray, ys: tuple[np.ndarray, ...]) -> np.ndarray:
    """[prev, *ys] on the last axis: written into the channels after `prev` of the buffer it is
    a prefix of (``start``), which `prev`'s own channels share; a fresh concatenation if `prev`
    is not such a prefix. Only the graph pass, which gives each prefix at most one appender,
    may call this: a second append to the same prefix would overwrite the first."""
    extra = sum(y.shape[-1] for y in ys)
    buf = room(prev, extra)
    if buf is None or any(y.shape[:-1] != prev.shape[:-1] for y in ys):
        return concat((prev, *ys), -1)
    return buf[..., :_write(buf, prev.shape[-1], ys)]
