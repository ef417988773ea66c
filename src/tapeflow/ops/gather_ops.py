"""Picking elements by index: ``tf.gather`` (with ``batch_dims``) and ``tf.gather_nd``, with
the scatter-add gradients that put each picked slice's gradient back in its place."""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow._api import export
from tapeflow.framework import errors
from tapeflow.framework.constant import convert_to_tensor
from tapeflow.framework.dispatch import apply, op
from tapeflow.framework.tensor import EagerTensor
from tapeflow.kernels import scatter as _scatter
from tapeflow.ops import array_ops, creation_ops, math_ops
from tapeflow.ops.array_ops import _tensor
from tapeflow.ops.indexed_slices import IndexedSlices

# --- gather -----------------------------------------------------------------------------------


def _gather_rule(params, indices, *, axis, batch_dims=0):
    ps, dtype = params
    ind = indices[0]
    if ps is None or ind is None:
        return None, dtype
    return tuple(ps[:axis]) + tuple(ind[batch_dims:]) + tuple(ps[axis + 1:]), dtype


class _BatchedLayout:
    """Gather with `batch_dims` b as one plain gather: params (B..., X..., A, R...) become rows
    (n*A, X..., R...) with n = prod(B), and each batch's indices are offset to its own rows;
    the result (n, I..., X..., R...) is then reordered to TF's (B..., X..., I..., R...)."""

    def __init__(self, params_shape: tuple, indices: np.ndarray, axis: int, batch_dims: int):
        b = batch_dims
        if tuple(indices.shape[:b]) != tuple(params_shape[:b]):
            raise errors.InvalidArgumentError(
                None, "GatherV2", f"GatherV2: the first {b} dims of params {list(params_shape)} "
                f"and indices {list(indices.shape)} (batch_dims={b}) must be equal"
                f"\n{errors.user_line()}")
        self.n, self.size = int(np.prod(params_shape[:b], dtype=np.int64)), params_shape[axis]
        if indices.size and (indices.min() < 0 or indices.max() >= self.size):
            raise errors.InvalidArgumentError(
                None, "GatherV2", f"GatherV2: indices must be in [0, {self.size}) for axis {axis} "
                f"of params {list(params_shape)}, got values from {int(indices.min())} to "
                f"{int(indices.max())}\n{errors.user_line()}")
        self.params_shape, self.axis, self.b = tuple(params_shape), axis, b
        self.ni, self.nx = indices.ndim - b, axis - b
        offsets = np.arange(self.n, dtype=np.int64) * self.size
        self.rows = (indices.reshape((self.n,) + indices.shape[b:]).astype(np.int64)
                     + offsets.reshape((self.n,) + (1,) * self.ni))
        self.out_shape = (tuple(params_shape[:axis]) + tuple(indices.shape[b:])
                          + tuple(params_shape[axis + 1:]))

    def flat(self, params: np.ndarray) -> np.ndarray:
        p = np.moveaxis(params.reshape((self.n,) + self.params_shape[self.b:]), self.nx + 1, 1)
        return p.reshape((self.n * self.size,) + p.shape[2:])

    def unflat(self, rows: np.ndarray) -> np.ndarray:
        p = rows.reshape((self.n, self.size) + rows.shape[1:])
        return np.moveaxis(p, 1, self.nx + 1).reshape(self.params_shape)

    def to_output(self, taken: np.ndarray) -> np.ndarray:
        """(n, I..., X..., R...) -> (B..., X..., I..., R...)."""
        ni, nx = self.ni, self.nx
        perm = ([0] + list(range(1 + ni, 1 + ni + nx)) + list(range(1, 1 + ni))
                + list(range(1 + ni + nx, taken.ndim)))
        return taken.transpose(perm).reshape(self.out_shape)

    def from_output(self, g: np.ndarray) -> np.ndarray:
        """(B..., X..., I..., R...) -> (n*prod(I), X..., R...), the inverse reordering."""
        ni, nx = self.ni, self.nx
        g = g.reshape((self.n,) + g.shape[self.b:])
        perm = ([0] + list(range(1 + nx, 1 + nx + ni)) + list(range(1, 1 + nx))
                + list(range(1 + nx + ni, g.ndim)))
        g = g.transpose(perm)
        return g.reshape((-1,) + g.shape[1 + ni:])


@op("GatherV2", shape=_gather_rule)
def _gather(params, indices, *, axis, batch_dims=0):
    if not batch_dims:
        return np.take(params, indices, axis=axis)
    layout = _BatchedLayout(params.shape, indices, axis, batch_dims)
    return layout.to_output(np.take(layout.flat(params), layout.rows, axis=0))


def _scatter_rule(g, indices, like, *, axis, batch_dims=0):
    (gs, _), (ind, _), (ls, dtype) = g, indices, like
    if axis or batch_dims or gs is None or ind is None or ls is None:
        return like
    return (ls[0],) + tuple(gs[len(ind):]), dtype


@op("ScatterAddLike", shape=_scatter_rule, shape_only=(2,))
def _scatter_add_like(g, indices, like, *, axis, batch_dims=0):
    """Gradient of gather: add slices of `g` back into zeros shaped like `params`. Along axis
    0 the rows are `like`'s and each row is shaped as `g`'s slices (the ``table_first`` pass
    adds a product's wider rows into a table's rows)."""
    if not axis and not batch_dims:
        out = np.zeros((like.shape[0],) + g.shape[indices.ndim:], dtype=g.dtype)
        _scatter.add_rows(out, indices, g.reshape((-1,) + out.shape[1:]))
        return out
    if batch_dims:
        layout = _BatchedLayout(like.shape, indices, axis, batch_dims)
        rows = np.zeros((layout.n * layout.size,) + layout.flat(like).shape[1:], dtype=g.dtype)
        np.add.at(rows, layout.rows.reshape(-1), layout.from_output(g))
        return layout.unflat(rows)
    out = np.zeros(like.shape, dtype=g.dtype)
    moved = np.moveaxis(out, axis, 0)
    gm = np.moveaxis(g, list(range(axis, axis + indices.ndim)), list(range(indices.ndim)))
    _scatter.add_rows(moved, indices, gm.reshape((-1,) + moved.shape[1:]))
    return out


@_gather.def_grad
def _(g, out, params, indices, *, axis, batch_dims=0):
    if axis == 0 and not batch_dims:  # rows of params: an IndexedSlices, as in TensorFlow
        return _row_slices(g, params, indices), None
    return apply(_scatter_add_like, g, indices, params, axis=axis, batch_dims=batch_dims), None


def _row_slices(g: Any, params: Any, indices: Any) -> IndexedSlices:
    """The gradient of a row gather: the rows' gradients at their (flattened) indices."""
    from tapeflow.ops import array_ops

    shape = params.shape
    if shape.is_fully_defined():
        dims = [int(d) for d in shape]
        dense_shape = convert_to_tensor(np.asarray(dims, dtype=np.int32))
        values = array_ops.reshape(g, [-1] + dims[1:])
    else:
        dense_shape = array_ops.shape(params, out_type="int32")
        values = array_ops.reshape(g, array_ops.concat([[-1], dense_shape[1:]], 0))
    slices = IndexedSlices(values, array_ops.reshape(indices, [-1]), dense_shape)
    if not isinstance(params, EagerTensor):
        slices._like = params  # densified traced: a static shape for the memory plan
    return slices


def scatter_rows_like(values: Any, indices: Any, like: Any) -> Any:
    """Rows `values` added at `indices` into zeros shaped like `like` (read for its shape)."""
    return apply(_scatter_add_like, values, indices, like, axis=0)


@_scatter_add_like.def_grad
def _(g, out, gin, indices, like, *, axis, batch_dims=0):
    return apply(_gather, g, indices, axis=axis, batch_dims=batch_dims), None, None


@export("gather")
def gather(params: Any, indices: Any, validate_indices: Any = None, axis: int | None = None,
           batch_dims: int = 0, name: str | None = None):
    """Take slices of `params` along `axis` at `indices`; with `batch_dims` b, the first b dims
    of params and indices are batch dims, each batch gathering from its own slice."""
    params = params if hasattr(params, "_as_tensor") else convert_to_tensor(params)
    indices = convert_to_tensor(indices)
    rank, index_rank = params.shape.rank, indices.shape.rank
    b = int(batch_dims)
    if b < 0 and index_rank is not None:
        b += index_rank
    axis = b if axis is None else int(axis)
    if axis < 0 and rank is not None:
        axis += rank
    if b < 0 or (index_rank is not None and b > index_rank) or axis < b or (
            rank is not None and axis >= rank):
        raise errors.InvalidArgumentError(
            None, "GatherV2", f"GatherV2: need 0 <= batch_dims ({batch_dims}) <= indices rank "
            f"({index_rank}) and batch_dims <= axis ({axis}) < params rank ({rank})"
            f"\n{errors.user_line()}")
    if b:
        return apply(_gather, params, indices, axis=axis, batch_dims=b)
    return apply(_gather, params, indices, axis=axis)


# --- gather_nd --------------------------------------------------------------------------------


def _gather_nd_rule(params, indices):
    (ps, dtype), (ind, _) = params, indices
    if ps is None or ind is None or ind[-1] is None:
        return None, dtype
    return tuple(ind[:-1]) + tuple(ps[ind[-1]:]), dtype


@op("GatherNd", shape=_gather_nd_rule)
def _gather_nd(params, indices):
    return params[tuple(np.moveaxis(indices, -1, 0))]


@op("ScatterNdAddLike", shape=lambda g, indices, like: (like[0], g[1]))
def _scatter_nd_add_like(g, indices, like):
    out = np.zeros(like.shape, dtype=g.dtype)
    np.add.at(out, tuple(np.moveaxis(indices, -1, 0)), g)
    return out


@_gather_nd.def_grad
def _(g, out, params, indices):
    return apply(_scatter_nd_add_like, g, indices, params), None


@_scatter_nd_add_like.def_grad
def _(gg, out, g, indices, like):
    return apply(_gather_nd, gg, indices), None, None


@export("gather_nd")
def gather_nd(params: Any, indices: Any, batch_dims: int = 0, name: str | None = None):
    """Gather slices of `params` at the index tuples in the last dim of `indices`."""
    params, indices = _tensor(params), _tensor(indices)
    if batch_dims:
        indices = _with_batch_coordinates(params, indices, batch_dims)
    return apply(_gather_nd, params, indices)


def _with_batch_coordinates(params, indices, batch_dims: int):
    """TF's ``batch_dims`` b as a plain gather_nd: each index tuple gets its own b batch
    coordinates in front, so batch i of `indices` reads batch i of `params` (the gradient is
    then gather_nd's own scatter-add)."""
    rank = indices.shape.rank
    b = batch_dims + rank if batch_dims < 0 else batch_dims
    if rank is None or not 0 <= b < rank:
        raise errors.InvalidArgumentError(
            None, "GatherNd", f"GatherNd: batch_dims={batch_dims} must be in [0, {rank}) for "
            f"indices of shape {indices.shape} (params {params.shape}, {params.dtype.name})")
    head = indices.shape[:b]
    if params.shape.rank is not None and not head.is_compatible_with(params.shape[:b]):
        raise errors.InvalidArgumentError(
            None, "GatherNd", f"GatherNd: the first {b} dims of params {params.shape} and "
            f"indices {indices.shape} (batch_dims={b}) must be equal")
    grid_shape = array_ops.shape(indices, out_type=indices.dtype)[:-1]
    coords = []
    for axis in range(b):
        n = array_ops.shape(indices, out_type=indices.dtype)[axis]
        along = array_ops.reshape(creation_ops.range_(n, dtype=indices.dtype),
                                  [-1 if i == axis else 1 for i in range(rank - 1)])
        coords.append(array_ops.broadcast_to(along, grid_shape))
    batch = array_ops.stack(coords, axis=-1)
    return array_ops.concat([batch, math_ops.cast(indices, indices.dtype)], axis=-1)
