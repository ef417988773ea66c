"""Gradient clipping for optimizers (``clipvalue``, ``clipnorm``, ``global_clipnorm``).

Keras 2 order: clip each value, then each gradient's norm, then the global norm. Each is one op
(the global norm is one multi-output op over all gradients), so a traced step stays short.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow.framework.dispatch import apply, op
from tapeflow.ops.indexed_slices import IndexedSlices


@op("ClipGradientByValue", shape=lambda g, *, clip_value: g)
def _clip_by_value(g, *, clip_value):
    return np.clip(g, -clip_value, clip_value)


@op("ClipGradientByNorm", shape=lambda g, *, clip_norm: g)
def _clip_by_norm(g, *, clip_norm):
    """g * clip_norm / max(||g||, clip_norm): unchanged when the norm is within bounds."""
    norm = float(np.sqrt(np.sum(np.square(g, dtype=np.float64))))
    return g * (clip_norm / max(norm, clip_norm)) if norm > clip_norm else g


def _global_norm_shape(*specs, clip_norm):
    return list(specs)


@op("ClipGradientsByGlobalNorm", shape=_global_norm_shape, multi_output=True)
def _clip_by_global_norm(*grads, clip_norm):
    """Scale all gradients by clip_norm / max(global norm, clip_norm)."""
    total = sum(float(np.sum(np.square(g, dtype=np.float64))) for g in grads)
    norm = float(np.sqrt(total))
    if norm <= clip_norm:
        return grads
    scale = clip_norm / norm
    return tuple(g * scale for g in grads)


def _on_values(fn: Any, g: Any) -> Any:
    """`fn` on a gradient tensor, or on an IndexedSlices' values (TensorFlow clips those)."""
    if type(g) is IndexedSlices:
        return IndexedSlices(fn(g.values), g.indices, g.dense_shape)
    return fn(g)


def clip_gradients(grads: list, clipnorm: float | None, global_clipnorm: float | None,
                   clipvalue: float | None) -> list[Any]:
    """The optimizer's configured clipping, applied to a list of gradients (tensors or
    IndexedSlices)."""
    if clipvalue is not None:
        clip = float(clipvalue)
        grads = [_on_values(lambda x: apply(_clip_by_value, x, clip_value=clip), g)
                 for g in grads]
    if clipnorm is not None:
        clip = float(clipnorm)
        grads = [_on_values(lambda x: apply(_clip_by_norm, x, clip_norm=clip), g) for g in grads]
    if global_clipnorm is not None:
        flat = [g.values if type(g) is IndexedSlices else g for g in grads]
        clipped = apply(_clip_by_global_norm, *flat, clip_norm=float(global_clipnorm))
        grads = [IndexedSlices(c, g.indices, g.dense_shape) if type(g) is IndexedSlices else c
                 for g, c in zip(grads, clipped)]
    return grads
