"""``tf.nn.fractional_max_pool`` / ``fractional_avg_pool`` (Graham's fractional pooling, TF's
region sequences): each spatial dim of size n is cut into floor(n / ratio) regions of k or
k + 1 (k = n // out) elements, either a random arrangement of the longer regions or, with
`pseudo_random`, a_i = ceil(alpha (i + u)) for one random u; `overlapping` regions share
their boundary element. Returns (output, row_pooling_sequence, col_pooling_sequence); the
sequences are the regions' boundaries. Pooling is a gather over padded windows, so gradients
come from gather and the reduction (the draws are NumPy's, not TF's)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow._api import export
from tapeflow.ops import array_ops, gather_ops, math_ops, reduce_ops
from tapeflow.ops.array_ops import _tensor
from tapeflow.ops.random_ops import make_generator


def _sequence(n: int, out: int, pseudo_random: bool, gen: np.random.Generator) -> np.ndarray:
    """The out + 1 region boundaries over [0, n] (TF's GeneratePoolingSequence)."""
    if out <= 0:
        raise ValueError(f"fractional pooling: the pooled size of a dim of {n} is {out}")
    k = n // out
    if pseudo_random:
        alpha = n / out
        max_u = min((k + 2) / alpha - 1, (n + 1 - k) / alpha - (out - 1))
        u = gen.random() * max_u
        cum = np.empty(out + 1, np.int64)
        cum[0], cum[out] = 1, n + 1
        for i in range(1, out):
            cum[i] = int(np.ceil(alpha * (i + u)))
        diff = np.diff(cum)
    else:
        diff = np.full(out, k, np.int64)
        diff[:n % out] += 1
        gen.shuffle(diff)
    return np.concatenate([[0], np.cumsum(diff)]).astype(np.int64)


def _windows(seq: np.ndarray, n: int, overlapping: bool) -> tuple:
    """[out, width] gather positions (clamped) and the mask of real ones."""
    starts, ends = seq[:-1], seq[1:] + (1 if overlapping else 0)
    ends = np.minimum(ends, n)
    width = int(np.max(ends - starts))
    pos = starts[:, None] + np.arange(width)[None, :]
    valid = pos < ends[:, None]
    return np.minimum(pos, n - 1).astype(np.int32), valid


def _pool(value: Any, pooling_ratio: Any, pseudo_random: bool, overlapping: bool, seed: int,
          kind: str) -> tuple:
    x = _tensor(value)
    ratio = [float(r) for r in np.asarray(pooling_ratio).reshape(-1)]
    if len(ratio) == 2:
        ratio = [1.0] + ratio + [1.0]
    if len(ratio) != 4 or ratio[0] != 1.0 or ratio[3] != 1.0:
        raise ValueError("pooling_ratio must be [1, row_ratio, col_ratio, 1] (batch and "
                         "channels are not pooled)")
    if any(r < 1.0 for r in ratio):
        raise ValueError(f"pooling_ratio entries must be >= 1, got {ratio}")
    _, height, width, _ = (int(d) for d in x.shape)
    gen = make_generator(seed or None)
    rows = _sequence(height, int(height / ratio[1]), pseudo_random, gen)
    cols = _sequence(width, int(width / ratio[2]), pseudo_random, gen)
    return pool_regions(x, rows, cols, overlapping, kind), _tensor(rows), _tensor(cols)


def pool_regions(x: Any, rows: np.ndarray, cols: np.ndarray, overlapping: bool,
                 kind: str) -> Any:
    """Max ('max') or mean ('avg') of x over the regions the boundary sequences give."""
    height, width = int(x.shape[1]), int(x.shape[2])
    (ri, rv), (ci, cv) = _windows(rows, height, overlapping), _windows(cols, width, overlapping)
    grid = gather_ops.gather(gather_ops.gather(x, ri, axis=1), ci, axis=3)  # [b, oh, kh, ow, kw, c]
    mask = (rv[:, :, None, None] & cv[None, None, :, :])[None, :, :, :, :, None]
    mask_t = _tensor(mask)
    if kind == "max":
        low = array_ops.fill(array_ops.shape(grid), _lowest(x.dtype))
        return reduce_ops.reduce_max(math_ops.where(mask_t, grid, low), axis=[2, 4])
    weights = mask.astype(x.dtype._np)
    total = reduce_ops.reduce_sum(grid * _tensor(weights), axis=[2, 4])
    return total / _tensor(weights.sum(axis=(2, 4)))


def _lowest(dtype: Any) -> Any:
    np_dtype = dtype._np
    value = -np.inf if np.issubdtype(np_dtype, np.floating) else np.iinfo(np_dtype).min
    return _tensor(np.asarray(value, np_dtype))


@export("nn.fractional_max_pool")
def fractional_max_pool(value: Any, pooling_ratio: Any, pseudo_random: bool = False,
                        overlapping: bool = False, seed: int = 0,
                        name: str | None = None) -> tuple:
    """(output, row_pooling_sequence, col_pooling_sequence) of max pooling over fractional
    regions of an NHWC batch."""
    return _pool(value, pooling_ratio, pseudo_random, overlapping, seed, "max")


@export("nn.fractional_avg_pool")
def fractional_avg_pool(value: Any, pooling_ratio: Any, pseudo_random: bool = False,
                        overlapping: bool = False, seed: int = 0,
                        name: str | None = None) -> tuple:
    """(output, row_pooling_sequence, col_pooling_sequence) of average pooling over fractional
    regions of an NHWC batch."""
    return _pool(value, pooling_ratio, pseudo_random, overlapping, seed, "avg")


