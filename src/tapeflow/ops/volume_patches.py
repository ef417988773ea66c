"""`tf.extract_volume_patches`: 3-D patches of [batch, planes, rows, cols, depth] flattened into
the depth axis (patch order: plane, row, col, then depth), TF's VALID/SAME windows. Composed
of gathers, so it traces and has gradients."""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow._api import export
from tapeflow.ops import array_ops, gather_ops
from tapeflow.ops.array_ops import _tensor


def _windows(size: int, k: int, stride: int, padding: str) -> tuple:
    if padding == "VALID":
        out, before, after = (size - k) // stride + 1, 0, 0
    elif padding == "SAME":
        out = -(-size // stride)
        total = max((out - 1) * stride + k - size, 0)
        before, after = total // 2, total - total // 2
    else:
        raise ValueError(f"padding must be 'VALID' or 'SAME', got {padding!r}")
    index = np.arange(out)[:, None] * stride + np.arange(k)[None, :]
    return index.astype(np.int32), before, after


@export("extract_volume_patches")
def extract_volume_patches(input: Any, ksizes: Any, strides: Any, padding: str,  # noqa: A002
                           name: str | None = None) -> Any:
    """[b, out_planes, out_rows, out_cols, kp * kr * kc * depth] patches of a 5-D input."""
    x = _tensor(input)
    k = [int(v) for v in np.asarray(ksizes).reshape(-1)]
    s = [int(v) for v in np.asarray(strides).reshape(-1)]
    if len(k) != 5 or len(s) != 5 or k[0] != 1 or k[4] != 1 or s[0] != 1 or s[4] != 1:
        raise ValueError("extract_volume_patches: ksizes and strides must be [1, p, r, c, 1]")
    if x.shape.rank != 5:
        raise ValueError(f"extract_volume_patches: input must be 5-D, got {x.shape}")
    pads = [[0, 0]] * 5
    gathers = []
    for axis in (1, 2, 3):
        index, before, after = _windows(int(x.shape[axis]), k[axis], s[axis], padding)
        pads[axis] = [before, after]
        gathers.append(index)
    if any(p != [0, 0] for p in pads):
        x = array_ops.pad(x, pads)
    # each gather turns one spatial axis into (out, window): [b, op, kp, or, kr, oc, kc, d]
    y = gather_ops.gather(x, gathers[0], axis=1)
    y = gather_ops.gather(y, gathers[1], axis=3)
    y = gather_ops.gather(y, gathers[2], axis=5)
    y = array_ops.transpose(y, [0, 1, 3, 5, 2, 4, 6, 7])
    shape = array_ops.shape(y)
    return array_ops.reshape(y, array_ops.concat([shape[:4], [-1]], 0))
