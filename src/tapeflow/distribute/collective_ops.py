"""Collectives as tapeflow ops, so they run the same eagerly and inside a traced step.

- ``CollectiveAllReduce``: one tensor, differentiable (the gradient of a sum over ranks is the
  sum over ranks of the upstream gradients), used by ``ReplicaContext.all_reduce`` and the mesh.
- ``CollectiveBucketStart`` / ``CollectiveBucketWait``: the gradient path. A bucket packs
  several gradients into one contiguous buffer of a few MB and posts one non-blocking
  all-reduce (``MPI_Iallreduce``) for it; the wait op unpacks the summed buffer as views.
  One bucket is in flight at a time (a start op first finishes the bucket posted before it:
  MPICH runs several concurrent all-reduces slower than the same ones one after the other), so
  a bucket's reduction overlaps whatever the step computes until the next bucket is ready;
  inside a traced step each start op depends only on its own gradients, so the scheduler is free
  to post it as soon as those are computed, while the rest of the backward pass runs.

All are stateful: never folded, merged or reordered, run on the calling thread in program
order, which keeps every rank's sequence of collectives identical.
"""

from __future__ import annotations

import itertools
import sys
from collections import OrderedDict
from typing import Any

import numpy as np

from tapeflow.distribute.communicator import Communicator, Pending
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework.dispatch import apply, op
from tapeflow.framework.shape_rules import same_as_first


@op("CollectiveAllReduce", stateful=True, shape=same_as_first)
def _all_reduce(x, *, comm, reduction, what):
    out = comm.allreduce(x, "sum" if reduction == "mean" else reduction, what)
    if reduction == "mean":
        out = (out / comm.size).astype(x.dtype, copy=False)
    return out.reshape(np.shape(x))


@_all_reduce.def_grad
def _(g, out, x, *, comm, reduction, what):
    if reduction not in ("sum", "mean"):
        raise NotImplementedError(f"no gradient for a {reduction} all-reduce")
    return apply(_all_reduce, g, comm=comm, reduction=reduction, what=f"gradient of {what}")


def all_reduce(x: Any, comm: Communicator, reduction: str = "sum",
               what: str = "all-reduce") -> Any:
    """`x` reduced over every rank of `comm` (sum, mean, max, min)."""
    return apply(_all_reduce, x, comm=comm, reduction=reduction, what=what)


_pending: dict[int, tuple[Pending, _Layout]] = {}
_tokens = itertools.count(1)


class _Layout:
    """Where each gradient of a bucket layout (shapes, dtype) sits in the flat bucket, and the
    buffers of this layout kept across steps. Packing ~32 MB into fresh np.concatenate buffers
    cost ~5 of an 18 ms all-reduce (page faults on new memory); a warm buffer is a plain copy.
    The offsets are computed once: slicing, reshaping and copying each gradient on its own, and
    np.prod per shape when unpacking, cost ~1 ms of CPU a step for 200 gradients."""

    MAX_BUFFERS = 4  # buffers in use at once (held views, a bucket in flight)

    def __init__(self, shapes: tuple, dtype: np.dtype):
        self.dtype = dtype
        self.parts: list[tuple[int, int, tuple]] = []  # (start, end, shape) per gradient
        start = 0
        for shape in shapes:
            end = start + int(np.prod(shape, dtype=np.int64))
            self.parts.append((start, end, shape))
            start = end
        self.size = start
        self.buffers: list[np.ndarray] = []

    def buffer(self) -> np.ndarray:
        """A flat buffer for this layout: one from an earlier step once nothing holds it any
        more (its all-reduce finished and waited for, every unpacked view of it dead), else a
        new one. A gradient kept past its step (held by the caller, or a bucket still in
        flight) keeps its buffer, so reuse never overwrites a live value."""
        for buf in self.buffers:
            if sys.getrefcount(buf) <= 3:  # the list, `buf` and getrefcount's argument: unused
                return buf
        buf = np.empty(self.size, self.dtype)
        if len(self.buffers) < self.MAX_BUFFERS:
            self.buffers.append(buf)
        return buf

    def unpack(self, buf: np.ndarray) -> tuple:
        """Each gradient as a view of the (reduced) bucket, no copies."""
        return tuple(buf[start:end] if len(shape) == 1 else buf[start:end].reshape(shape)
                     for start, end, shape in self.parts)


# bucket layouts by (shapes, dtype), least recently used first (a training job has a handful)
_layouts: OrderedDict[tuple, _Layout] = OrderedDict()
_MAX_LAYOUTS = 16


def _layout(shapes: tuple, dtype: np.dtype) -> _Layout:
    key = (shapes, dtype.str)
    layout = _layouts.get(key)
    if layout is None:
        layout = _layouts[key] = _Layout(shapes, dtype)
        while len(_layouts) > _MAX_LAYOUTS:
            _layouts.popitem(last=False)
    else:
        _layouts.move_to_end(key)
    return layout


def poke() -> None:
    """Let the posted bucket all-reduce progress. MPICH has no progress thread: a non-blocking
    reduction advances only inside MPI calls, so an eager backward pass calls this as each
    gradient becomes final instead of leaving the posted bucket idle until it is waited for."""
    for pending, _ in _pending.values():
        if not pending.done:
            pending.test()


def _finish_posted() -> None:
    """Wait for the bucket all-reduces still in flight (with the communicator's deadline), so
    that at most one is: 8 buckets of 4 MB in flight at once took 13.2 ms against 11.2 ms
    posted one after the other (2 ranks, SCHED_FIFO at load ~9; raw Allreduce of the 32 MB:
    11.2 ms). The bucket posted last still runs while the backward pass computes the next one."""
    for pending, _ in _pending.values():
        if not pending.done:
            pending.wait()


@op("CollectiveBucketStart", stateful=True,
    shape=lambda *specs, **attrs: ((), _dtypes.int64))
def _bucket_start(*grads, comm, what):
    _finish_posted()
    layout = _layout(tuple(g.shape for g in grads), grads[0].dtype)
    buf = layout.buffer()
    np.concatenate(grads, axis=None, out=buf)  # every gradient in one C call, no temporaries
    token = next(_tokens)
    _pending[token] = (comm.iallreduce(buf, "sum", what, out=buf), layout)  # in place
    return np.asarray(token, np.int64)


def _wait_shapes(token, *, comm, shapes, dtype, what):
    return [(s, dtype) for s in shapes]


@op("CollectiveBucketWait", stateful=True, multi_output=True, shape=_wait_shapes)
def _bucket_wait(token, *, comm, shapes, dtype, what):
    pending, layout = _pending.pop(int(token))
    return layout.unpack(pending.wait())


def plan_buckets(sizes: list[tuple[int, Any]], bytes_per_pack: int) -> list[list[int]]:
    """Group gradient indices into buckets of at most `bytes_per_pack` bytes (a larger
    gradient gets a bucket of its own), last variables first (the backward pass makes their
    gradients first), never mixing dtypes."""
    buckets: list[list[int]] = []
    open_by_dtype: dict[Any, tuple[list[int], int]] = {}
    for i in reversed(range(len(sizes))):
        nbytes, dtype = sizes[i]
        current, used = open_by_dtype.get(dtype, (None, 0))
        if current is None or used + nbytes > bytes_per_pack:
            current, used = [], 0
            buckets.append(current)
        current.append(i)
        open_by_dtype[dtype] = (current, used + nbytes)
    return buckets


_plans: OrderedDict[tuple, list] = OrderedDict()  # bucket plans by gradient layout


def _bucket_plan(layout: tuple, bytes_per_pack: int) -> list:
    """(members, shapes, dtype, what) per bucket for gradients of `layout` ((index, shape,
    dtype) of each present gradient), computed once per layout: a step's Python work is then
    the packing alone."""
    key = (layout, bytes_per_pack)
    plan = _plans.get(key)
    if plan is not None:
        _plans.move_to_end(key)
        return plan
    sizes = []
    for i, shape, dtype in layout:
        if shape is None or any(d is None for d in shape):
            raise ValueError(f"all-reduce of gradients: gradient {i} has an unknown shape "
                             f"{shape}; all-reduced gradients need static shapes")
        dtype = _dtypes.as_dtype(dtype)
        sizes.append((int(np.prod(shape, dtype=np.int64)) * dtype.size, dtype))
    buckets = plan_buckets(sizes, bytes_per_pack)
    plan = []
    for b, bucket in enumerate(buckets):
        what = (f"gradient all-reduce (bucket {b + 1} of {len(buckets)}, "
                f"{sum(sizes[j][0] for j in bucket) / 2**20:.2f} MB)")
        plan.append(([layout[j][0] for j in bucket], tuple(layout[j][1] for j in bucket),
                     sizes[bucket[0]][1], what))
    _plans[key] = plan
    while len(_plans) > _MAX_LAYOUTS:
        _plans.popitem(last=False)
    return plan


def _gradient_layout(grads: list) -> tuple:
    """(index, shape, dtype) of each gradient that is not None: the key of its bucket plan.
    An eager tensor's NumPy shape and dtype are used as they are (building a TensorShape and
    hashing a DType per gradient was ~0.15 ms a step for 200 gradients)."""
    layout = []
    for i, g in enumerate(grads):
        if g is None:
            continue
        value = getattr(g, "_value", None)
        if type(value) is np.ndarray:
            layout.append((i, value.shape, value.dtype))
        else:
            shape = g.shape
            layout.append((i, None if shape.rank is None else tuple(shape.as_list()), g.dtype))
    return tuple(layout)


def all_reduce_gradients(grads: list, comm: Communicator, bytes_per_pack: int) -> list:
    """Sum every gradient over the ranks of `comm`, packed in buckets (None stays None)."""
    plan = _bucket_plan(_gradient_layout(grads), bytes_per_pack)
    started = [apply(_bucket_start, *[grads[i] for i in members], comm=comm, what=what)
               for members, _, _, what in plan]
    out = list(grads)
    for (members, shapes, dtype, what), token in zip(plan, started):
        reduced = apply(_bucket_wait, token, comm=comm, shapes=shapes, dtype=dtype, what=what)
        for i, r in zip(members, reduced):
            out[i] = r
    return out


class EagerBuckets:
    """An eager backward pass's gradients, all-reduced bucket by bucket while it runs.

    The tape calls `ready(i, grad)` as soon as source `i`'s gradient is final; when every
    member of a bucket is, the bucket is posted (``CollectiveBucketStart``) while the walk
    goes on to the earlier layers (an IndexedSlices gradient stays out: its rows are
    all-gathered). ``finish(grads, variables)`` then waits for the buckets, provided `grads`
    are the gradients the pass produced for `variables` (what ``apply_gradients`` normally
    gets); given others it still waits for the posted buckets (every rank posted them) and
    returns None. Every rank runs the same
    backward pass, so buckets are posted in the same order everywhere."""

    def __init__(self, sources: list, comm: Communicator, bytes_per_pack: int):
        sizes = [(int(s.shape.num_elements()) * s.dtype.size, s.dtype) for s in sources]
        self._sources = {id(s): i for i, s in enumerate(sources)}
        self._buckets = plan_buckets(sizes, bytes_per_pack)
        self._bucket_of = {i: b for b, members in enumerate(self._buckets) for i in members}
        self._missing = [len(members) for members in self._buckets]
        self._grads: list = [None] * len(sources)
        self._dense: dict[int, Any] = {}  # the gradients posted in buckets
        self._started: list[tuple] = []  # (members, token, what, shapes, dtype)
        self._comm = comm

    def ready(self, i: int, grad: Any) -> None:
        if _pending:
            poke()  # the buckets posted so far advance while the walk goes on
        self._grads[i] = grad
        b = self._bucket_of[i]
        self._missing[b] -= 1
        if self._missing[b] == 0:
            self._post(b)

    def _post(self, b: int) -> None:
        from tapeflow.ops.indexed_slices import IndexedSlices

        members = [i for i in self._buckets[b] if self._grads[i] is not None and
                   type(self._grads[i]) is not IndexedSlices]  # rows are all-gathered later
        if not members:
            return
        dense = [self._grads[i] for i in members]
        self._dense.update(zip(members, dense))
        nbytes = sum(int(np.prod(d.shape.as_list(), dtype=np.int64)) * d.dtype.size
                     for d in dense)
        what = (f"gradient all-reduce (bucket {b + 1} of {len(self._buckets)}, "
                f"{nbytes / 2**20:.2f} MB, posted during the backward pass)")
        token = apply(_bucket_start, *dense, comm=self._comm, what=what)
        self._started.append((members, token, what,
                              tuple(tuple(d.shape.as_list()) for d in dense), dense[0].dtype))

    def finish(self, grads: list, variables: list) -> list | None:
        """`grads` (None where there is none, or where it is all-gathered as rows) summed over
        the ranks, from the posted buckets; None if they are not this pass's gradients."""
        mine = [self._sources.get(id(v)) for v in variables]
        given = {i for i, g in zip(mine, grads) if g is not None}
        matches = len(grads) == len(variables) and given == set(self._dense) and all(
            g is None or (i is not None and g is self._dense[i]) for i, g in zip(mine, grads))
        reduced: dict[int, Any] = {}
        for members, token, what, shapes, dtype in self._started:
            outs = apply(_bucket_wait, token, comm=self._comm, shapes=shapes, dtype=dtype,
                         what=what)
            reduced.update(zip(members, outs))
        self._started = []
        if not matches:
            return None
        return [None if g is None else reduced[i] for i, g in zip(mine, grads)]


def _gather_rows_shapes(values, indices, *, comm, what):
    (shape, dtype), (_, index_dtype) = values, indices
    return [(None if shape is None else (None,) + tuple(shape[1:]), dtype),
            ((None,), index_dtype)]


@op("CollectiveGatherRows", stateful=True, multi_output=True, shape=_gather_rows_shapes)
def _gather_rows(values, indices, *, comm, what):
    counts = comm.allgather(np.array([len(indices)], np.int64), f"{what} (row counts)")[:, 0]
    longest = int(counts.max())
    padded_values = np.zeros((longest,) + values.shape[1:], values.dtype)
    padded_values[:len(indices)] = values
    padded_indices = np.zeros(longest, indices.dtype)
    padded_indices[:len(indices)] = indices
    all_values = comm.allgather(padded_values, f"{what} (values)")
    all_indices = comm.allgather(padded_indices, f"{what} (indices)")
    return (np.concatenate([v[:n] for v, n in zip(all_values, counts)]),
            np.concatenate([i[:n] for i, n in zip(all_indices, counts)]))


def all_gather_rows(grad: Any, comm: Communicator, what: str) -> Any:
    """An IndexedSlices gradient summed over the ranks the way TensorFlow does it: every
    rank's rows, concatenated (the optimizer adds up repeated rows)."""
    from tapeflow.ops.indexed_slices import IndexedSlices

    values, indices = apply(_gather_rows, grad.values, grad.indices, comm=comm, what=what)
    return IndexedSlices(values, indices, grad.dense_shape)
