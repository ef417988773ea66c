"""``tf.distribute.CrossDeviceOps`` and its kinds: how a ``MirroredStrategy`` combines the
values of its replicas.

TensorFlow picks among NCCL, hierarchical copies and reduction on one device because its
replicas sit on separate accelerators. tapeflow's replicas share one process's memory, so every
kind adds the replicas' arrays on the host in replica order (the same bits on every run);
the classes keep TF's names and arguments so that programs which choose one run unchanged,
and ``ReductionToOneDevice(accumulation_fn=...)`` really uses the given function.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tapeflow._api import export
from tapeflow.distribute import strategy as base
from tapeflow.distribute.mirrored import PerReplica, sum_replica_values
from tapeflow.ops import math_ops


@export("distribute.CrossDeviceOps")
class CrossDeviceOps:
    """Reduce per-replica values to one value (the base of TF's cross-device ops)."""

    def reduce(self, reduce_op: Any, per_replica_value: Any, destinations: Any = None,
               options: Any = None) -> Any:
        """The replicas' values summed (or averaged, for MEAN); a plain value is one replica's."""
        op = base._reduce_op(reduce_op)
        values = per_replica_value.values if isinstance(per_replica_value, PerReplica) \
            else (per_replica_value,)
        total = self._sum(tuple(values))
        return total if op is base.ReduceOp.SUM else math_ops.divide(total, float(len(values)))

    def batch_reduce(self, reduce_op: Any, value_destination_pairs: Any,
                     options: Any = None) -> list:
        """`reduce` of each (value, destinations) pair, in order."""
        return [self.reduce(reduce_op, value, destinations, options)
                for value, destinations in value_destination_pairs]

    def broadcast(self, tensor: Any, destinations: Any) -> Any:
        """Every replica reads the host's one copy: the value itself."""
        return tensor

    def _sum(self, values: tuple) -> Any:
        return sum_replica_values(values)


@export("distribute.ReductionToOneDevice")
class ReductionToOneDevice(CrossDeviceOps):
    """Add up the replicas' values with `accumulation_fn` (default: in replica order)."""

    def __init__(self, reduce_to_device: str | None = None,
                 accumulation_fn: Callable | None = None):
        if accumulation_fn is not None and not callable(accumulation_fn):
            raise TypeError(f"ReductionToOneDevice: accumulation_fn must be callable (for "
                            f"example tf.math.add_n), got {accumulation_fn!r}")
        self.reduce_to_device = reduce_to_device
        self.accumulation_fn = accumulation_fn

    def _sum(self, values: tuple) -> Any:
        if self.accumulation_fn is None:
            return super()._sum(values)
        return self.accumulation_fn(list(values))


class _AllReduceKind(CrossDeviceOps):
    """TF's all-reduce kinds take `num_packs` (how many buffers gradients are packed into)."""

    def __init__(self, num_packs: int = 1):
        if isinstance(num_packs, bool) or not isinstance(num_packs, int) or num_packs < 0:
            raise ValueError(f"{type(self).__name__}: num_packs must be a non-negative int, got "
                             f"{num_packs!r}")
        self.num_packs = num_packs


@export("distribute.HierarchicalCopyAllReduce")
class HierarchicalCopyAllReduce(_AllReduceKind):
    """TF's hierarchical-copy all-reduce; here the replicas' values added on the host."""


@export("distribute.NcclAllReduce")
class NcclAllReduce(_AllReduceKind):
    """TF's NCCL all-reduce; here (no GPUs) the replicas' values added on the host."""
