"""``tf.scatter_nd`` and ``tf.tensor_scatter_nd_update/add/sub/min/max``.

`indices` has shape [..., k]: each row addresses a slice of the first k dims. Duplicate indices
accumulate in ``scatter_nd`` and the add/sub/min/max forms; for ``update`` the last one wins.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow._api import export
from tapeflow.framework.dispatch import apply, op
from tapeflow.ops import math_ops
from tapeflow.ops.array_ops import _tensor
from tapeflow.ops.gather_ops import gather_nd


def _where(indices: np.ndarray) -> tuple:
    return tuple(np.moveaxis(indices, -1, 0))


def _check(indices: np.ndarray, shape: tuple, name: str) -> None:
    k = indices.shape[-1]
    if indices.size and (np.any(indices < 0) or np.any(indices >= np.asarray(shape[:k]))):
        bad = indices.reshape(-1, k)[np.any((indices.reshape(-1, k) < 0) | (
            indices.reshape(-1, k) >= np.asarray(shape[:k])), axis=1)][0]
        raise ValueError(f"{name}: index {bad.tolist()} is out of bounds for shape {list(shape)}")


def _scatter_shape(indices, updates, shape):
    rank = shape[0][0] if shape[0] else None
    return (None if rank is None else (None,) * rank), updates[1]


@op("ScatterNd", shape=_scatter_shape)
def _scatter_nd(indices, updates, shape):
    dims = tuple(int(d) for d in shape)
    _check(indices, dims, "ScatterNd")
    out = np.zeros(dims, dtype=updates.dtype)
    np.add.at(out, _where(indices), updates)
    return out


@_scatter_nd.def_grad
def _(g, out, indices, updates, shape):
    return None, gather_nd(g, indices), None


@export("scatter_nd")
def scatter_nd(indices: Any, updates: Any, shape: Any, name: str | None = None):
    """Zeros of `shape` with `updates` added at `indices` (duplicates add up)."""
    idx = _tensor(indices)
    return apply(_scatter_nd, idx, _tensor(updates), _tensor(shape, idx.dtype))


def _tensor_scatter(name: str, combine: Any):
    @op(name, shape=lambda tensor, indices, updates: tensor)
    def kernel(tensor, indices, updates):
        _check(indices, tensor.shape, name)
        out = tensor.copy()
        where = _where(indices)
        if combine is None:
            out[where] = updates
        else:
            combine.at(out, where, updates)
        return out

    kernel.__name__ = name
    return kernel


_update = _tensor_scatter("TensorScatterUpdate", None)
_add = _tensor_scatter("TensorScatterAdd", np.add)
_sub = _tensor_scatter("TensorScatterSub", np.subtract)
_max = _tensor_scatter("TensorScatterMax", np.maximum)
_min = _tensor_scatter("TensorScatterMin", np.minimum)


@_update.def_grad
def _(g, out, tensor, indices, updates):
    from tapeflow.ops.array_ops import zeros_like

    return apply(_update, g, indices, zeros_like(updates)), None, gather_nd(g, indices)


@_add.def_grad
def _(g, out, tensor, indices, updates):
    return g, None, gather_nd(g, indices)


@_sub.def_grad
def _(g, out, tensor, indices, updates):
    return g, None, -gather_nd(g, indices)


def _minmax_grad(g, out, tensor, indices, updates):
    """The gradient goes to whichever of tensor / update became the output."""
    from_tensor = math_ops.cast(math_ops.equal(tensor, out), g.dtype)
    picked = gather_nd(out, indices)
    from_update = math_ops.cast(math_ops.equal(updates, picked), g.dtype)
    return g * from_tensor, None, gather_nd(g, indices) * from_update


_max.def_grad(_minmax_grad)
_min.def_grad(_minmax_grad)


def _scatter_api(kernel, tf_name: str):
    @export(tf_name)
    def api(tensor: Any, indices: Any, updates: Any, name: str | None = None):
        t = _tensor(tensor)
        u = _tensor(updates, t.dtype)
        return apply(kernel, t, _tensor(indices), u)

    api.__name__ = tf_name
    api.__doc__ = f"A copy of `tensor` with `updates` applied at `indices` ({kernel.name})."
    return api


tensor_scatter_nd_update = _scatter_api(_update, "tensor_scatter_nd_update")
tensor_scatter_nd_add = _scatter_api(_add, "tensor_scatter_nd_add")
tensor_scatter_nd_sub = _scatter_api(_sub, "tensor_scatter_nd_sub")
tensor_scatter_nd_max = _scatter_api(_max, "tensor_scatter_nd_max")
tensor_scatter_nd_min = _scatter_api(_min, "tensor_scatter_nd_min")
