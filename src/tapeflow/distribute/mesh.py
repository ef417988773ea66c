"""Model parallelism on a 2-D mesh of processes, in the form of ``tf.experimental.dtensor``.

A ``Mesh`` arranges the MPI ranks in a grid with named axes (for example
``[("batch", 2), ("model", 2)]``, row-major); each axis gets its own sub-communicator
(``Comm.Split``: the ranks that differ only along that axis). A ``Layout`` says, per tensor
dimension, which mesh axis it is split along (or ``UNSHARDED``).

``Dense(units, kernel_layout=Layout([UNSHARDED, "model"], mesh))`` keeps the columns of its
kernel (and its bias) that belong to this rank's coordinate on "model": it computes its share of
the output features for its share of the batch, and all-gathers them along "model" so the next
layer sees whole rows. The collectives carry their own gradients (``MeshAllGather``: the gradient
of a gathered, replicated value is this rank's slice; ``MeshReduceGradient``: identity forward,
sum over the axis backward, because each rank's kernel columns give only part of the input's
gradient); together they make the all-gather / reduce-scatter pair of Mesh TensorFlow. Across
the "batch" axis the replicas are data-parallel: ``mesh.all_reduce_gradients`` sums the kernel
gradients over it, with the loss taken as the mean over the global batch.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tapeflow.distribute.communicator import DEFAULT_TIMEOUT_S, Communicator, mpi
from tapeflow.framework.dispatch import apply, op
from tapeflow.framework.shape_rules import same_as_first

UNSHARDED = "unsharded"


class Mesh:
    """A grid of processes with named axes, and a communicator per axis."""

    def __init__(self, dim_names: list[str], shape: list[int], comm: Any = None,
                 timeout: float = DEFAULT_TIMEOUT_S):
        if len(dim_names) != len(shape) or len(set(dim_names)) != len(dim_names):
            raise ValueError(f"Mesh: need one distinct name per dimension, got names "
                             f"{dim_names} for shape {shape}")
        if UNSHARDED in dim_names:
            raise ValueError(f"Mesh: {UNSHARDED!r} cannot name a mesh dimension")
        self.dim_names = list(dim_names)
        self._shape = [int(s) for s in shape]
        size = math.prod(self._shape)
        if comm is None:
            comm = mpi().COMM_WORLD if size > 1 else None
        world_size = comm.Get_size() if comm is not None else 1
        if world_size != size:
            raise ValueError(f"Mesh {dict(zip(dim_names, shape))} has {size} positions but "
                             f"there are {world_size} processes (start them with "
                             f"mpiexec -n {size})")
        self.rank = comm.Get_rank() if comm is not None else 0
        self.coords = [int(c) for c in np.unravel_index(self.rank, self._shape)]
        self._world = Communicator(comm, timeout, "mesh") if comm is not None else None
        self._axis_comms: dict[str, Communicator | None] = {}
        for i, name in enumerate(self.dim_names):
            if self._world is None or self._shape[i] == 1:
                self._axis_comms[name] = None
                continue
            others = [c for j, c in enumerate(self.coords) if j != i]
            color = int(np.ravel_multi_index(others, [s for j, s in enumerate(self._shape)
                                                      if j != i])) if others else 0
            self._axis_comms[name] = self._world.split(color, self.coords[i], f"mesh/{name}")

    def shape(self) -> list[int]:
        return list(self._shape)

    def dim_size(self, name: str) -> int:
        return self._shape[self._index(name)]

    def coordinate(self, name: str) -> int:
        return self.coords[self._index(name)]

    def comm(self, name: str) -> Communicator | None:
        """The sub-communicator along `name` (None when that axis has size 1)."""
        self._index(name)
        return self._axis_comms[name]

    @property
    def size(self) -> int:
        return math.prod(self._shape)

    def _index(self, name: str) -> int:
        try:
            return self.dim_names.index(name)
        except ValueError:
            raise ValueError(f"Mesh has no dimension {name!r} (it has {self.dim_names})") \
                from None

    def broadcast(self, value: np.ndarray) -> np.ndarray:
        """Rank 0's array on every rank (identical initial weights)."""
        return value if self._world is None else self._world.bcast(value, 0, "mesh broadcast")

    def all_reduce_gradients(self, grads: list, axis: str = "batch") -> list:
        """Sum the gradients over the data-parallel `axis` (one bucket)."""
        comm = self._axis_comms.get(axis)
        if comm is None:
            return list(grads)
        from tapeflow.distribute import collective_ops

        return collective_ops.all_reduce_gradients(list(grads), comm, 4 << 20)

    def __repr__(self) -> str:
        dims = ", ".join(f"{n}={s}" for n, s in zip(self.dim_names, self._shape))
        return f"<Mesh {dims}; rank {self.rank} at {self.coords}>"


def create_distributed_mesh(mesh_dims: list[tuple[str, int]], comm: Any = None) -> Mesh:
    """A mesh over the MPI processes: ``create_distributed_mesh([("batch", 2), ("model", 2)])``."""
    return Mesh([n for n, _ in mesh_dims], [s for _, s in mesh_dims], comm)


create_mesh = create_distributed_mesh


class Layout:
    """Per tensor dimension: the mesh axis it is split along, or UNSHARDED."""

    def __init__(self, sharding_specs: list[str], mesh: Mesh):
        for spec in sharding_specs:
            if spec != UNSHARDED:
                mesh._index(spec)
        used = [s for s in sharding_specs if s != UNSHARDED]
        if len(set(used)) != len(used):
            raise ValueError(f"Layout {sharding_specs}: a mesh axis shards one dimension only")
        self.sharding_specs = list(sharding_specs)
        self.mesh = mesh

    @classmethod
    def replicated(cls, mesh: Mesh, rank: int) -> Layout:
        return cls([UNSHARDED] * rank, mesh)

    @classmethod
    def batch_sharded(cls, mesh: Mesh, batch_dim: str, rank: int, axis: int = 0) -> Layout:
        specs = [UNSHARDED] * rank
        specs[axis] = batch_dim
        return cls(specs, mesh)

    @property
    def rank(self) -> int:
        return len(self.sharding_specs)

    def num_shards(self, dim: int) -> int:
        spec = self.sharding_specs[dim]
        return 1 if spec == UNSHARDED else self.mesh.dim_size(spec)

    def local_slice(self, dim: int, size: int) -> slice:
        """This rank's part of a dimension of `size` (equal parts; size must divide)."""
        n = self.num_shards(dim)
        if size % n:
            raise ValueError(f"Layout {self.sharding_specs}: dimension {dim} of size {size} "
                             f"does not split into {n} equal shards")
        if n == 1:
            return slice(0, size)
        c = self.mesh.coordinate(self.sharding_specs[dim])
        return slice(c * size // n, (c + 1) * size // n)

    def local(self, value: np.ndarray) -> np.ndarray:
        """This rank's shard of a global array."""
        index = tuple(self.local_slice(d, s) for d, s in enumerate(np.shape(value)))
        return np.ascontiguousarray(np.asarray(value)[index])

    def __repr__(self) -> str:
        return f"Layout({self.sharding_specs}, {self.mesh!r})"


def _gather_shape(x, *, comm, axis):
    shape, dtype = x
    if shape is None:
        return None, dtype
    shape = list(shape)
    shape[axis] = None if shape[axis] is None else shape[axis] * comm.size
    return tuple(shape), dtype


@op("MeshAllGather", stateful=True, shape=_gather_shape)
def _all_gather(x, *, comm, axis):
    parts = comm.allgather(np.ascontiguousarray(x), "mesh all-gather")
    return np.concatenate(list(parts), axis=axis)


@_all_gather.def_grad
def _(g, out, x, *, comm, axis):
    from tapeflow.ops import indexing_ops

    n = x.shape[axis]
    begin = [0] * x.shape.rank
    begin[axis] = comm.rank * n
    size = list(x.shape.as_list())
    size[axis] = n
    size = [-1 if s is None else s for s in size]
    return indexing_ops.slice_(g, begin, size)


@op("MeshReduceGradient", stateful=True, shape=same_as_first)
def _reduce_gradient(x, *, comm):
    return x


@_reduce_gradient.def_grad
def _(g, out, x, *, comm):
    from tapeflow.distribute import collective_ops

    return collective_ops.all_reduce(g, comm, "sum", "mesh input-gradient sum")


def all_gather(x: Any, comm: Communicator | None, axis: int = -1) -> Any:
    """Shards of `x` from every rank of `comm`, joined along `axis` (differentiable)."""
    if comm is None:
        return x
    axis = axis % x.shape.rank
    return apply(_all_gather, x, comm=comm, axis=axis)


def sum_gradient(x: Any, comm: Communicator | None) -> Any:
    """`x` unchanged; its gradient summed over `comm` (each rank holds part of it)."""
    return x if comm is None else apply(_reduce_gradient, x, comm=comm)
