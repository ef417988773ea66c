"""Channels-last arrays as 2-D (rows, channels) views, read in place where possible."""

from __future__ import annotations

import numpy as np


def rows(a: np.ndarray) -> np.ndarray:
    """(rows, C) view of a C-contiguous channels-last array (..., C)."""
    return a.reshape(-1, a.shape[-1])


def _address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def channel_window(a: np.ndarray) -> tuple[np.ndarray, int]:
    """(rows, first column): a C-contiguous 2-D array whose columns first..first+C hold `a`
    (..., C) row by row. A channel slice of a wider array (a concatenation's gradient split
    by SplitLike) is read in place: compiled loops over a strided view do not vectorize
    (measured 17 ms against 3.4 ms), and a contiguous copy costs a full pass.

    The wider array is found from the root of `a`'s base chain, whatever its shape: a
    gradient is often a 2-D kernel output reshaped, so only the memory layout is checked."""
    c = a.shape[-1]
    if a.flags.c_contiguous:
        return a.reshape(-1, c), 0
    root = a
    while isinstance(root.base, np.ndarray):
        root = root.base
    item = a.itemsize
    if a.ndim >= 2 and a.strides[-1] == item and root.flags.c_contiguous \
            and root.dtype == a.dtype and a.strides[-2] % item == 0:
        width = a.strides[-2] // item
        rows = int(np.prod(a.shape[:-1]))
        offset = (_address(a) - _address(root)) // item
        first, row0 = offset % width, offset // width
        stacked = all(a.strides[k] == a.strides[k + 1] * a.shape[k + 1]
                      for k in range(a.ndim - 2))
        if (stacked and c <= width and first + c <= width and root.size % width == 0
                and row0 + rows <= root.size // width):
            return root.reshape(-1, width)[row0:row0 + rows], first
    return np.ascontiguousarray(a).reshape(-1, c), 0
