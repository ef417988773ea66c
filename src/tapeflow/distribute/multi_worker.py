"""``tf.distribute.MultiWorkerMirroredStrategy``: synchronous data parallelism, one process per
replica, collectives over MPI.

How the processes find each other: started by ``mpiexec -n N`` they are the ranks of MPI's world
communicator; started by hand with ``TF_CONFIG`` they meet at the chief's address and join one
communicator through MPI ports (``rendezvous``). A single process is a one-replica strategy.

What each replica does: variables created under ``scope()`` take the chief's initial values
(a broadcast when each is created); ``optimizer.apply_gradients`` inside ``run``
sums the gradients over the ranks in buckets (``collective_ops``); the loss that Keras computes
is divided by the number of replicas, so the sum is the mean over the global batch;
``reduce``/``gather``/``ReplicaContext.all_reduce`` are all-reduces and all-gathers. Every
collective has a deadline (``CommunicationOptions(timeout_seconds=...)``, 60 s by default).
"""

from __future__ import annotations

import enum
import os
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from tapeflow.distribute import collective_ops, strategy, watchdog
from tapeflow.distribute.cluster_resolver import (
    ClusterResolver,
    SimpleClusterResolver,
    TFConfigClusterResolver,
)
from tapeflow.distribute.communicator import (
    DEFAULT_TIMEOUT_S,
    Communicator,
    abort_job_on_uncaught_error,
    launched_by_mpiexec,
    mpi,
    notice_peer_failures,
)
from tapeflow.framework import nest
from tapeflow.framework import tape as tape_mod
from tapeflow.framework import variable as variable_mod
from tapeflow.framework.context import state as _state
from tapeflow.framework.tensor import wrap

DEFAULT_BYTES_PER_PACK = 4 << 20


class CommunicationImplementation(enum.Enum):
    """Which collective implementation to use (MPI's own in every case here)."""

    AUTO = "AUTO"
    RING = "RING"
    NCCL = "NCCL"


class CommunicationOptions:
    """Collective settings (``tf.distribute.experimental.CommunicationOptions``).

    bytes_per_pack: gradient bucket size (0: 4 MB). timeout_seconds: how long a collective
    waits for every rank before raising (None: 60 s).
    """

    def __init__(self, bytes_per_pack: int = 0, timeout_seconds: float | None = None,
                 implementation: Any = CommunicationImplementation.AUTO):
        if bytes_per_pack < 0:
            raise ValueError(f"CommunicationOptions: bytes_per_pack must be >= 0, got "
                             f"{bytes_per_pack}")
        if timeout_seconds is not None and timeout_seconds <= 0:
            raise ValueError(f"CommunicationOptions: timeout_seconds must be > 0, got "
                             f"{timeout_seconds}")
        self.bytes_per_pack = int(bytes_per_pack)
        self.timeout_seconds = timeout_seconds
        self.implementation = implementation


class _ReplicaContext(strategy.ReplicaContext):
    keeps_slices = True  # an IndexedSlices gradient is all-gathered as rows, as in TensorFlow

    def all_reduce(self, reduce_op: Any, value: Any, options: Any = None) -> Any:
        op = strategy._reduce_op(reduce_op).value.lower()
        comm = self._strategy._comm
        return nest.map_structure(
            lambda v: collective_ops.all_reduce(v, comm, op, f"ReplicaContext.all_reduce({op})"),
            value)

    def _aggregate_gradients(self, grads: list, variables: list | None = None,
                             optimizer: Any = None) -> list:
        return self._strategy._all_reduce_gradients(grads, variables)


class MultiWorkerMirroredStrategy(strategy.Strategy):
    """Synchronous training on several workers, each a process with one replica."""

    def __init__(self, communication_options: CommunicationOptions | None = None,
                 cluster_resolver: ClusterResolver | None = None):
        super().__init__()
        self._options = communication_options or CommunicationOptions()
        timeout = self._options.timeout_seconds or DEFAULT_TIMEOUT_S
        self._bytes_per_pack = self._options.bytes_per_pack or DEFAULT_BYTES_PER_PACK
        resolver = cluster_resolver if cluster_resolver is not None else \
            TFConfigClusterResolver()
        self._comm, self._resolver = _connect(resolver, timeout)
        self._early: collective_ops.EagerBuckets | None = None
        if self._comm.size > 1:
            abort_job_on_uncaught_error(self._comm.comm)
            _track_new_variables()

    # --- facts ---------------------------------------------------------------------------
    @property
    def num_replicas_in_sync(self) -> int:
        return self._comm.size

    @property
    def cluster_resolver(self) -> ClusterResolver:
        return self._resolver

    @property
    def communicator(self) -> Communicator:
        return self._comm

    @property
    def worker_index(self) -> int:
        return self._comm.rank

    @property
    def is_chief(self) -> bool:
        """The chief (rank 0) writes checkpoints, summaries and logs."""
        return self._comm.rank == 0

    should_checkpoint = is_chief
    should_save_summary = is_chief

    def _in_multi_worker_mode(self) -> bool:
        return self._comm.size > 1

    @property
    def worker_devices(self) -> tuple[str, ...]:
        return (f"/job:{self._resolver.task_type}/replica:0/task:{self._resolver.task_id}"
                f"/device:CPU:0",)

    # --- scopes and steps --------------------------------------------------------------------
    def run(self, fn: Callable, args: tuple = (), kwargs: dict | None = None,
            options: Any = None) -> Any:
        """Run `fn` on this worker's replica; collectives inside it involve every worker."""
        strategy._stack.replica.append(_ReplicaContext(self, self._comm.rank))
        strategy._stack.strategies.append(self)
        try:
            return fn(*args, **(kwargs or {}))
        finally:
            strategy._stack.strategies.pop()
            strategy._stack.replica.pop()

    def reduce(self, reduce_op: Any, value: Any, axis: int | None = None) -> Any:
        """Combine the replicas' values (all-reduce); with `axis`, over that axis as well
        (MEAN then averages over every element of the global batch)."""
        op = strategy._reduce_op(reduce_op)
        return nest.map_structure(lambda v: self._reduce_one(op, v, axis), value)

    def _reduce_one(self, op: strategy.ReduceOp, value: Any, axis: int | None) -> Any:
        arr = np.asarray(value.numpy() if hasattr(value, "numpy") else value)
        dtype = arr.dtype if arr.dtype.kind == "f" else np.float64
        if axis is None:
            total = self._comm.allreduce(arr.astype(dtype), "sum", f"strategy.reduce({op.value})")
            if op is strategy.ReduceOp.MEAN:
                total = total / self._comm.size
            return wrap(np.asarray(total, arr.dtype if arr.dtype.kind == "f" else dtype))
        local = np.sum(arr, axis=axis, dtype=dtype)
        count = np.array([arr.shape[axis]], np.float64)
        both = np.concatenate([np.ravel(local).astype(np.float64), count])
        both = self._comm.allreduce(both, "sum", f"strategy.reduce({op.value}, axis={axis})")
        total = both[:-1].reshape(np.shape(local))
        if op is strategy.ReduceOp.MEAN:
            total = total / both[-1]
        return wrap(np.asarray(total, dtype))

    def gather(self, value: Any, axis: int) -> Any:
        """Every replica's value concatenated along `axis` (sizes along it may differ)."""

        def one(v: Any) -> Any:
            arr = np.asarray(v.numpy() if hasattr(v, "numpy") else v)
            arr = np.moveaxis(arr, axis, 0)
            sizes = self._comm.allgather(np.array([arr.shape[0]], np.int64), "gather (sizes)")
            longest = int(sizes.max())
            padded = np.zeros((longest,) + arr.shape[1:], arr.dtype)
            padded[:arr.shape[0]] = arr
            parts = self._comm.allgather(padded, "gather")
            joined = np.concatenate([p[:int(n)] for p, n in zip(parts, sizes[:, 0])])
            return wrap(np.moveaxis(joined, 0, axis))

        return nest.map_structure(one, value)

    def experimental_distribute_dataset(self, dataset: Any, options: Any = None) -> Any:
        """This worker's part of `dataset` (batched with the global batch size): each global
        batch split into per-replica batches, sharded by the dataset's AutoShardPolicy."""
        from tapeflow.distribute.input_lib import DistributedDataset

        return DistributedDataset(dataset, self._comm.size, self._comm.rank)

    def distribute_datasets_from_function(self, dataset_fn: Callable,
                                          options: Any = None) -> Any:
        """`dataset_fn(InputContext)` on this worker: one input pipeline per worker."""
        ctx = strategy.InputContext(self._comm.size, self._comm.rank, self._comm.size)
        return dataset_fn(ctx)

    experimental_distribute_datasets_from_function = distribute_datasets_from_function

    # --- variables and gradients ---------------------------------------------------------
    def _on_variable_created(self, var: Any) -> None:
        """A variable made under the scope takes the chief's initial value at once, before
        anything can update it (a metric's state is updated in the step that creates it)."""
        if self._comm.size > 1:
            var._value = self._comm.bcast(var._value, 0, f"broadcast of new variable "
                                                         f"{var.name} from the chief")

    def _all_reduce_gradients(self, grads: list, variables: list | None = None) -> list:
        """Dense gradients summed in buckets (posted during the backward pass if it ran
        eagerly); IndexedSlices (embedding lookups) all-gathered as rows, as in TensorFlow."""
        from tapeflow.ops.indexed_slices import IndexedSlices

        if self._comm.size == 1:
            return grads
        rows = [j for j, g in enumerate(grads) if type(g) is IndexedSlices]
        dense = [None if type(g) is IndexedSlices else g for g in grads]
        early, self._early = self._early, None
        out = early.finish(dense, variables or []) if early is not None else None
        if out is None:
            out = collective_ops.all_reduce_gradients(dense, self._comm, self._bytes_per_pack)
        for j in rows:
            out[j] = collective_ops.all_gather_rows(grads[j], self._comm,
                                                    f"gradient rows all-gather ({j})")
        return out

    def _start_eager_buckets(self, sources: list) -> Any:
        """Before an eager backward pass in this strategy's ``run`` whose sources are all
        variables: buckets that start all-reducing as their gradients become final."""
        early, self._early = self._early, None
        if early is not None:  # an earlier pass whose gradients were never applied
            early.finish([], [])
        self._early = collective_ops.EagerBuckets(sources, self._comm, self._bytes_per_pack)
        return self._early.ready

    def __repr__(self) -> str:
        return (f"<MultiWorkerMirroredStrategy worker {self._comm.rank} of {self._comm.size}, "
                f"task {self._resolver.task_type}:{self._resolver.task_id}>")


def _creation_hook(var: Any) -> None:
    current = strategy.get_strategy()
    if isinstance(current, MultiWorkerMirroredStrategy):
        current._on_variable_created(var)


def _gradient_ready_hook(sources: list) -> Any:
    """The tape's hook: an eager backward pass inside ``run`` of a multi-worker strategy,
    for variables only, all-reduces its gradients as they become final."""
    ctx = strategy.get_replica_context()
    if not isinstance(ctx, _ReplicaContext) or _state.graph is not None or not sources or \
            not all(isinstance(s, variable_mod.Variable) for s in sources):
        return None  # traced steps overlap through the scheduler instead
    return ctx._strategy._start_eager_buckets(sources)


def _track_new_variables() -> None:
    if _creation_hook not in variable_mod.creation_hooks:
        variable_mod.creation_hooks.append(_creation_hook)
    if _gradient_ready_hook not in tape_mod.gradient_ready_hooks:
        tape_mod.gradient_ready_hooks.append(_gradient_ready_hook)


def _connect(resolver: ClusterResolver, timeout: float) -> tuple[Communicator, ClusterResolver]:
    """The world communicator: mpiexec's ranks, the TF_CONFIG tasks joined by rendezvous, or
    this process alone."""
    if launched_by_mpiexec():
        MPI = mpi()
        world = MPI.COMM_WORLD
        me = np.zeros(72, np.uint8)  # host name (64 bytes) and PID (8 bytes)
        me[:64] = np.frombuffer(MPI.Get_processor_name().encode()[:64].ljust(64), np.uint8)
        me[64:] = np.frombuffer(np.int64(os.getpid()).tobytes(), np.uint8)
        rows = Communicator(world, timeout).allgather(me, "rank discovery")
        hosts = [bytes(row[:64]).rstrip(b" ").decode() for row in rows]
        pids = [int(np.frombuffer(row[64:].tobytes(), np.int64)[0]) for row in rows]
        addresses = [f"{h}:mpi-rank-{r}" for r, h in enumerate(hosts)]
        resolved = SimpleClusterResolver({"worker": addresses}, task_type="worker",
                                         task_id=world.Get_rank())
        labels = [f"worker {r} (pid {p} on {h})" for r, (h, p) in enumerate(zip(hosts, pids))]
        comm = Communicator(world, timeout, "world", labels)
        here = hosts[world.Get_rank()]
        _share_cores(hosts.count(here))
        notice_peer_failures(comm)
        comm.local_pids = {r: p for r, (h, p) in enumerate(zip(hosts, pids))
                           if h == here and r != world.Get_rank()}
        if world.Get_size() > 1:  # names a rank that dies, though MPICH then kills the rest
            watchdog.start(world.Get_rank(), hosts, pids, labels)
            comm.barrier("watchdog start")
        if world.Get_rank() == 0 and world.Get_size() > 1:  # maps MPICH's "PID n" to a rank
            print("tapeflow MultiWorkerMirroredStrategy: " + ", ".join(
                f"rank {r} = {label}" for r, label in enumerate(labels)), file=sys.stderr,
                flush=True)
        return comm, resolved
    tasks = resolver.worker_tasks() if resolver.cluster_spec() else []
    if len(tasks) <= 1:
        if not resolver.task_type:
            resolver = SimpleClusterResolver({"worker": ["localhost"]}, task_type="worker",
                                             task_id=0)
        return _SelfCommunicator(timeout), resolver
    from tapeflow.distribute import rendezvous

    me = (resolver.task_type, resolver.task_id)
    if me not in tasks:
        raise ValueError(f"MultiWorkerMirroredStrategy: this task {me[0]}:{me[1]} is not a "
                         f"chief or worker of the cluster {resolver.cluster_spec().as_dict()}")
    spec = resolver.cluster_spec()
    addresses = [spec.task_address(t, i) for t, i in tasks]
    comm = rendezvous.join(tasks, addresses, tasks.index(me), timeout)
    labels = [f"{t}:{i} ({a})" for (t, i), a in zip(tasks, addresses)]
    return Communicator(comm, timeout, "world", labels), resolver


def _share_cores(local_ranks: int) -> None:
    """Ranks on one host split its cores: each kernel and graph of a rank uses at most
    cores / ranks threads (unless the user set the thread counts, or mpiexec bound the rank to
    its own cores, which the affinity mask shows). Without this every rank of a 2-core host
    splits its products over both cores and the ranks oversubscribe them."""
    from tapeflow.framework import threads

    if local_ranks <= 1:
        return
    share = max(1, (os.cpu_count() or 1) // local_ranks)
    if threads.cores() <= share:
        return  # already bound to its share
    if threads.get_intra_op_parallelism_threads() == 0:
        threads.set_intra_op_parallelism_threads(share)
    if threads.get_inter_op_parallelism_threads() == 0:
        threads.set_inter_op_parallelism_threads(share)


class _SelfCommunicator(Communicator):
    """One process: collectives are copies, and mpi4py need not be installed."""

    def __init__(self, timeout: float):
        self.comm = None
        self.rank, self.size = 0, 1
        self.timeout = timeout
        self.name = "self"
        self.labels = None
        self._ctrl = None
        self._count = 0
        self._replies = []

