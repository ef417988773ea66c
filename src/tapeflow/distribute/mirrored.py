"""``tf.distribute.MirroredStrategy`` over several devices of one process: the logical CPUs that
``tf.config.set_logical_device_configuration`` makes, as TensorFlow's guides do on one machine.

Each replica is a thread with its own share of every global batch (``PerReplica`` values), its
own device scope (``/device:CPU:i``), tapes and replica context. As in TensorFlow's
implementation, the threads take turns: one runs until it reaches a ``merge_call`` (an
all-reduce, ``apply_gradients``) or ends, then the next; when every replica is at the merge
point, the merge function runs once on the calling thread with all the replicas' values, and
the replicas go on with its result. So nothing is shared between replicas while they compute,
variables need no locks, and a traced ``strategy.run`` builds one graph holding every replica's
ops (run in order: on CPU there is no speed-up, only the semantics).

Variables are mirrored in the simplest way: one ``Variable`` that every replica reads (the
copies TensorFlow keeps equal are here one object). ``apply_gradients`` in a replica sums the
replicas' gradients (in replica order, so the result does not depend on timing) and applies
them once, during the merge; a batch norm's moving statistics are the mean of the replicas'
(``mirrored_update``), applied once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from tapeflow.distribute import strategy as base
from tapeflow.framework import errors, nest
from tapeflow.framework.composite import CompositeTensor, TypeSpec
from tapeflow.framework.context import state as _state
from tapeflow.framework.tensor import Tensor
from tapeflow.framework.tensor_spec import TensorSpec


class PerReplica(CompositeTensor):
    """One value per replica (``tf.distribute.DistributedValues``), replica order. A composite
    (its tensors are its components), as in TensorFlow, so a ``tf.function`` that takes
    per-replica batches traces once per shape, not once per batch by value."""

    def __init__(self, values: tuple):
        self.values = tuple(values)

    @property
    def _type_spec(self) -> PerReplicaSpec:
        return PerReplicaSpec(tuple(_spec_or_value(v) for v in self.values))

    def __repr__(self) -> str:
        parts = ",\n".join(f"  {i}: {v!r}" for i, v in enumerate(self.values))
        return f"PerReplica:{{\n{parts}\n}}"


class PerReplicaSpec(TypeSpec):
    """The type of a PerReplica: each replica's value as a TensorSpec (a component), or, for a
    Python value, the value itself (part of the key, as ``tf.function`` keys Python values)."""

    value_type = PerReplica

    def __init__(self, items: tuple):
        self._items = items

    def _key(self) -> tuple:
        return (PerReplicaSpec, tuple(None if isinstance(i, TensorSpec) else i[:2]
                                      for i in self._items))

    def _component_specs(self) -> list:
        return [i for i in self._items if isinstance(i, TensorSpec)]

    def _to_components(self, value: PerReplica) -> list:
        return [v for v, i in zip(value.values, self._items) if isinstance(i, TensorSpec)]

    def _from_components(self, components: list) -> PerReplica:
        it = iter(components)
        return PerReplica(tuple(next(it) if isinstance(i, TensorSpec) else i[-1]
                                for i in self._items))


def _spec_or_value(v: Any) -> Any:
    """A replica's value in a PerReplicaSpec: a TensorSpec, ("P", value) for a hashable Python
    value, ("O", id, value) for another object (keyed by identity)."""
    if isinstance(v, Tensor):
        return TensorSpec.from_tensor(v)
    try:
        hash(v)
        return ("P", v)
    except TypeError:
        return ("O", id(v), v)


class _Aborted(BaseException):
    """Unwinds the other replicas' threads after one replica raised."""


class _ReplicaThread(threading.Thread):
    def __init__(self, owner: MirroredStrategy, index: int, fn: Callable, args: tuple,
                 kwargs: dict, parent: dict):
        super().__init__(daemon=True, name=f"tapeflow-replica-{index}")
        self.owner, self.index = owner, index
        self.fn, self.args, self.kwargs, self.parent = fn, args, kwargs, parent
        self.should_run, self.has_paused = threading.Event(), threading.Event()
        self.done, self.aborted = False, False
        self.result: Any = None
        self.error: BaseException | None = None
        self.merge: tuple | None = None  # (merge_fn, args, kwargs) while waiting at a merge
        self.merge_result: Any = None

    def run(self) -> None:
        self.should_run.wait()
        self.should_run.clear()
        if self.aborted:  # another replica failed before this one's first turn
            self.done = True
            return
        try:
            for key, value in self.parent.items():
                setattr(_state, key, value)
            _state.device = f"/job:localhost/replica:0/task:0/device:CPU:{self.index}"
            base._stack.replica.append(_ThreadReplicaContext(self.owner, self.index))
            base._stack.strategies.append(self.owner)
            self.result = self.fn(*self.args, **self.kwargs)
        except _Aborted:
            pass
        except BaseException as e:  # handed to the calling thread, which raises it
            self.error = e
        finally:
            self.done = True
            self.has_paused.set()

    def merge_call(self, merge_fn: Callable, args: tuple, kwargs: dict) -> Any:
        self.merge = (merge_fn, args, kwargs)
        self.has_paused.set()
        self.should_run.wait()
        self.should_run.clear()
        if self.aborted:
            raise _Aborted()
        result, self.merge_result = self.merge_result, None
        return result.values[self.index] if isinstance(result, PerReplica) else result


class _ThreadReplicaContext(base.ReplicaContext):
    """Replica `replica_id` of an in-process MirroredStrategy (inside its thread)."""

    keeps_slices = True  # an embedding's IndexedSlices gradient is summed as rows

    def merge_call(self, merge_fn: Callable, args: tuple = (), kwargs: dict | None = None) -> Any:
        thread = threading.current_thread()
        if not isinstance(thread, _ReplicaThread):
            raise RuntimeError("merge_call: not on a replica thread of this MirroredStrategy")
        return thread.merge_call(merge_fn, args, kwargs or {})

    def all_reduce(self, reduce_op: Any, value: Any, options: Any = None) -> Any:
        op = base._reduce_op(reduce_op)
        return nest.map_structure(lambda v: _all_reduce(self, op, v), value)

    def _aggregate_gradients(self, grads: list, variables: list | None = None,
                             optimizer: Any = None) -> list | None:
        """Sum the replicas' gradients and apply them once, in the merge (None: applied)."""
        if optimizer is None or variables is None:
            return self.merge_call(_sum_lists, args=(grads,))
        self.merge_call(_apply_summed, args=(grads, optimizer, variables))
        return None


def sum_replica_values(values: tuple) -> Any:
    """The replicas' values added up in replica order. IndexedSlices stay sparse, as in
    TensorFlow's cross-device reduction: every replica's rows, values and indices
    concatenated (the optimizer adds up repeated rows), so a table's untouched rows cost
    nothing and a sparse update rule (rows not looked up keep their slots) still applies."""
    from tapeflow.ops import array_ops, math_ops
    from tapeflow.ops.indexed_slices import IndexedSlices, dense

    rows = [type(v) is IndexedSlices for v in values]
    if all(rows):
        return IndexedSlices(array_ops.concat([v.values for v in values], axis=0),
                             array_ops.concat([v.indices for v in values], axis=0),
                             values[0].dense_shape)
    if any(rows):  # some replicas' gradients are dense: the sum is dense
        values = tuple(dense(v) for v in values)
    total = values[0]
    for v in values[1:]:  # replica order: the same sum on every run
        total = math_ops.add(total, v)
    return total


def _sum_lists(strategy: Any, grads: PerReplica) -> list:
    per_replica = grads.values
    return [None if per_replica[0][i] is None
            else strategy._replica_sum(tuple(g[i] for g in per_replica))
            for i in range(len(per_replica[0]))]


def _apply_summed(strategy: Any, grads: PerReplica, optimizer: PerReplica,
                  variables: PerReplica) -> None:
    summed = _sum_lists(strategy, grads)
    optimizer.values[0].apply_gradients(zip(summed, variables.values[0]),
                                        experimental_aggregate_gradients=False)


def _all_reduce(ctx: _ThreadReplicaContext, op: base.ReduceOp, value: Any) -> Any:
    """`value` summed (or averaged) over the replicas; differentiable: the gradient of each
    replica's input is the all-reduce of the replicas' upstream gradients."""
    from tapeflow.framework.tape import custom_gradient
    from tapeflow.ops import math_ops

    n = ctx.num_replicas_in_sync

    def merge(strategy: Any, values: PerReplica) -> Any:
        total = strategy._replica_sum(values.values)
        return total if op is base.ReduceOp.SUM else math_ops.divide(total, float(n))

    @custom_gradient
    def reduce(x: Any) -> Any:
        def grad(dy: Any) -> Any:
            return _all_reduce(ctx, op, dy)

        return ctx.merge_call(merge, args=(x,)), grad

    return reduce(value)


def mirrored_update(values: list) -> list | None:
    """For non-trainable state every replica updates (a batch norm's moving statistics):
    inside an in-process multi-replica ``run``, the replicas' values averaged, for the first
    replica to assign (None on the others, which must not assign); elsewhere `values`."""
    ctx = base.get_replica_context()
    if not isinstance(ctx, _ThreadReplicaContext) or ctx.num_replicas_in_sync == 1:
        return values
    from tapeflow.ops import array_ops

    averaged = ctx.all_reduce("MEAN", [array_ops.stop_gradient(v) for v in values])
    return averaged if ctx.replica_id_in_sync_group == 0 else None


class MirroredStrategy(base.Strategy):
    """Synchronous data parallelism over the devices of this process
    (``tf.distribute.MirroredStrategy``): by default every logical CPU."""

    def __init__(self, devices: list[str] | None = None, cross_device_ops: Any = None):
        from tapeflow.framework import config

        if devices is None:
            devices = [d.name for d in config.list_logical_devices("CPU")]
        resolved = [config.resolve(str(d)) for d in devices]
        if len(set(resolved)) != len(resolved):
            raise errors.InvalidArgumentError(
                None, "MirroredStrategy",
                f"MirroredStrategy: {len(devices)} devices requested ({', '.join(devices)}) but "
                f"they are not distinct devices of this process, which has "
                f"{[x.name for x in config.list_logical_devices()]}: split the CPU into logical "
                f"devices with tf.config.set_logical_device_configuration, or use one process "
                f"per replica (MultiWorkerMirroredStrategy)\n{errors.user_line()}")
        if cross_device_ops is not None and not callable(getattr(cross_device_ops, "reduce",
                                                                 None)):
            raise TypeError(f"MirroredStrategy: cross_device_ops must be a tf.distribute."
                            f"CrossDeviceOps (for example HierarchicalCopyAllReduce()), got "
                            f"{cross_device_ops!r}")
        self._devices = tuple(resolved)
        self._cross_device_ops = cross_device_ops

    def _replica_sum(self, values: tuple) -> Any:
        """The replicas' values added up: by the strategy's cross_device_ops when given."""
        if self._cross_device_ops is None:
            return sum_replica_values(values)
        return self._cross_device_ops.reduce(base.ReduceOp.SUM, PerReplica(tuple(values)))

    # --- replicas ----------------------------------------------------------------------------
    def run(self, fn: Callable, args: tuple = (), kwargs: dict | None = None,
            options: Any = None) -> Any:
        """`fn` on every replica, each on its own thread with its part of PerReplica
        arguments; returns PerReplica results (the value itself with one replica)."""
        n = self.num_replicas_in_sync
        if n == 1:
            return super().run(fn, args, kwargs, options)
        kwargs = kwargs or {}
        parent = {key: getattr(_state, key) for key in ("graph", "tapes", "name_scope",
                                                         "seed_offset")}
        threads = [_ReplicaThread(self, i, fn, _select(args, i), _select(kwargs, i), parent)
                   for i in range(n)]
        for t in threads:
            t.start()
        try:
            while True:
                for t in threads:
                    t.should_run.set()
                    t.has_paused.wait()
                    t.has_paused.clear()
                    if t.error is not None:
                        raise t.error
                if all(t.done for t in threads):
                    break
                self._merge(threads)
        finally:
            for t in threads:
                if not t.done:
                    t.aborted = True
                    t.should_run.set()
                t.join()
        return _regroup([t.result for t in threads])

    def _merge(self, threads: list[_ReplicaThread]) -> None:
        waiting = [t for t in threads if not t.done]
        if len(waiting) != len(threads):
            raise RuntimeError(
                f"MirroredStrategy.run: replica(s) {[t.index for t in threads if t.done]} "
                f"finished while replica(s) {[t.index for t in waiting]} waited in a "
                f"cross-replica step (an all-reduce or apply_gradients): every replica must "
                f"run the same collectives")
        merge_fn = threads[0].merge[0]
        args = tuple(PerReplica(tuple(t.merge[1][i] for t in threads))
                     for i in range(len(threads[0].merge[1])))
        kwargs = {k: PerReplica(tuple(t.merge[2][k] for t in threads))
                  for k in threads[0].merge[2]}
        for t in threads:
            t.merge = None
        base._stack.replica.append(None)
        base._stack.strategies.append(self)
        try:
            result = merge_fn(self, *args, **kwargs)
        finally:
            base._stack.strategies.pop()
            base._stack.replica.pop()
        for t in threads:
            t.merge_result = result

    # --- cross-replica ---------------------------------------------------------------------
    def reduce(self, reduce_op: Any, value: Any, axis: int | None = None) -> Any:
        """Combine per-replica values; with `axis`, also over that axis (MEAN then averages
        over every element of the global batch)."""
        op = base._reduce_op(reduce_op)
        return nest.map_structure(lambda v: self._reduce_one(op, v, axis), value)

    def _reduce_one(self, op: base.ReduceOp, value: Any, axis: int | None) -> Any:
        from tapeflow.ops import array_ops, math_ops, reduce_ops

        parts = value.values if isinstance(value, PerReplica) else \
            (value,) * self.num_replicas_in_sync
        if axis is None:
            total = self._replica_sum(parts)
            return total if op is base.ReduceOp.SUM else \
                math_ops.divide(total, float(len(parts)))
        joined = array_ops.concat(list(parts), axis=axis)
        fn = reduce_ops.reduce_sum if op is base.ReduceOp.SUM else reduce_ops.reduce_mean
        return fn(joined, axis=axis)

    def gather(self, value: Any, axis: int) -> Any:
        from tapeflow.ops import array_ops

        return nest.map_structure(
            lambda v: array_ops.concat(list(v.values), axis=axis)
            if isinstance(v, PerReplica) else v, value)

    def experimental_local_results(self, value: Any) -> tuple:
        return value.values if isinstance(value, PerReplica) else (value,)

    def experimental_distribute_dataset(self, dataset: Any, options: Any = None) -> Any:
        """Each global batch of `dataset` split along axis 0 into one PerReplica part per
        replica (as evenly as possible)."""
        if self.num_replicas_in_sync == 1:
            return dataset
        return _SplitBatches(dataset, self.num_replicas_in_sync)

    def distribute_datasets_from_function(self, dataset_fn: Callable,
                                          options: Any = None) -> Any:
        """`dataset_fn(InputContext)` once (one input pipeline); its batches, which should
        have the per-replica size, are dealt to the replicas in turn."""
        n = self.num_replicas_in_sync
        dataset = dataset_fn(base.InputContext(1, 0, n))
        return dataset if n == 1 else _DealtBatches(dataset, n)

    experimental_distribute_datasets_from_function = distribute_datasets_from_function


def _select(structure: Any, index: int) -> Any:
    """Replica `index`'s part of a structure that may hold PerReplica values."""
    if isinstance(structure, PerReplica):
        return structure.values[index]
    if isinstance(structure, tuple) and not hasattr(structure, "_fields"):
        return tuple(_select(s, index) for s in structure)
    if isinstance(structure, list):
        return [_select(s, index) for s in structure]
    if isinstance(structure, dict):
        return {k: _select(v, index) for k, v in structure.items()}
    return structure


def _regroup(per_replica: list) -> Any:
    """A list of same-structured replica values -> one structure of PerReplica leaves."""
    first = per_replica[0]
    if isinstance(first, tuple) and not hasattr(first, "_fields"):
        return tuple(_regroup([p[i] for p in per_replica]) for i in range(len(first)))
    if isinstance(first, list):
        return [_regroup([p[i] for p in per_replica]) for i in range(len(first))]
    if isinstance(first, dict):
        return {k: _regroup([p[k] for p in per_replica]) for k in first}
    if first is None:
        return None
    return PerReplica(tuple(per_replica))


def split_batch(batch: Any, n: int) -> Any:
    """A batch (any structure of arrays/tensors) as PerReplica parts along axis 0."""
    def split(x: Any) -> Any:
        if x is None:
            return None
        rows = int(x.shape[0]) if x.shape[0] is not None else None
        if rows is None:
            raise ValueError("MirroredStrategy: a batch with an unknown size cannot be split "
                             "between replicas")
        bounds = np.linspace(0, rows, n + 1).round().astype(int)
        return PerReplica(tuple(x[int(a):int(b)] for a, b in zip(bounds[:-1], bounds[1:])))

    return nest.map_structure(split, batch)


class _SplitBatches:
    def __init__(self, dataset: Any, n: int):
        self._dataset, self._n = dataset, n

    def __iter__(self) -> Any:
        for batch in self._dataset:
            yield split_batch(batch, self._n)


class _DealtBatches:
    def __init__(self, dataset: Any, n: int):
        self._dataset, self._n = dataset, n

    def __iter__(self) -> Any:
        batches: list = []
        for batch in self._dataset:
            batches.append(batch)
            if len(batches) == self._n:
                yield _regroup(batches)
                batches = []
