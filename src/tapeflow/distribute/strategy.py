"""Distribution strategies: the base (one replica; the default strategy) and its contexts.

On one CPU there is one replica: ``run`` calls the function once in a replica context,
``reduce`` over replicas is the identity (then reduces along ``axis`` if one is given), and a
distributed dataset is the dataset itself. Code written for several replicas (scaling the batch
by ``num_replicas_in_sync``, ``strategy.reduce(SUM, ...)``) runs unchanged. The multi-replica
strategies subclass ``Strategy``: ``mirrored.py`` (threads of this process, one per logical
CPU), ``multi_worker.py`` and ``parameter_server.py`` (processes).
"""

from __future__ import annotations

import contextlib
import enum
import threading
from collections.abc import Callable, Iterator
from typing import Any

from tapeflow._api import export
from tapeflow.framework import errors, nest


class ReduceOp(enum.Enum):
    """How values from replicas combine (``tf.distribute.ReduceOp``)."""

    SUM = "SUM"
    MEAN = "MEAN"


def _reduce_op(op: Any) -> ReduceOp:
    if isinstance(op, ReduceOp):
        return op
    try:
        return ReduceOp(str(op).upper())
    except ValueError:
        raise ValueError(f"reduce_op must be tf.distribute.ReduceOp.SUM or MEAN (or 'SUM', "
                         f"'MEAN'), got {op!r}") from None


class _Stack(threading.local):
    def __init__(self) -> None:
        self.strategies: list[Strategy] = []
        self.replica: list[ReplicaContext | None] = []


_stack = _Stack()
_set_scopes = threading.local()  # the scope experimental_set_strategy entered, per thread


@export("distribute.experimental_set_strategy")
def experimental_set_strategy(strategy: Strategy | None) -> None:
    """Make `strategy` current without a ``with strategy.scope()`` block (None: unset), as
    TF's: not inside another strategy's scope; per thread here."""
    entered = getattr(_set_scopes, "scope", None)
    if len(_stack.strategies) != (entered is not None):
        raise RuntimeError("tf.distribute.experimental_set_strategy must not be called inside "
                           f"a strategy's scope (current: {_stack.strategies[-1]!r})")
    if entered is not None:
        _set_scopes.scope = None
        entered.__exit__(None, None, None)
    if strategy is not None:
        scope = strategy.scope()
        scope.__enter__()
        _set_scopes.scope = scope


class InputContext:
    """What ``distribute_datasets_from_function`` tells the dataset function."""

    def __init__(self, num_input_pipelines: int = 1, input_pipeline_id: int = 0,
                 num_replicas_in_sync: int = 1):
        self.num_input_pipelines = num_input_pipelines
        self.input_pipeline_id = input_pipeline_id
        self.num_replicas_in_sync = num_replicas_in_sync

    def get_per_replica_batch_size(self, global_batch_size: int) -> int:
        if global_batch_size % self.num_replicas_in_sync:
            raise ValueError(f"The global batch size ({global_batch_size}) must be divisible "
                             f"by num_replicas_in_sync ({self.num_replicas_in_sync})")
        return global_batch_size // self.num_replicas_in_sync


class ReplicaContext:
    """The context inside ``strategy.run``: which replica this is, and cross-replica sums."""

    def __init__(self, strategy: Strategy, replica_id: int = 0):
        self._strategy = strategy
        self._replica_id = replica_id

    @property
    def strategy(self) -> Strategy:
        return self._strategy

    @property
    def num_replicas_in_sync(self) -> int:
        return self._strategy.num_replicas_in_sync

    @property
    def replica_id_in_sync_group(self) -> int:
        return self._replica_id

    def all_reduce(self, reduce_op: Any, value: Any, options: Any = None) -> Any:
        """Combine `value` across replicas; every replica gets the result."""
        _reduce_op(reduce_op)
        return value

    def _aggregate_gradients(self, grads: list, variables: list | None = None,
                             optimizer: Any = None) -> list | None:
        """What ``apply_gradients`` does to gradients in this context (one replica: nothing;
        None: the strategy applied them elsewhere)."""
        return grads

    def merge_call(self, merge_fn: Callable, args: tuple = (), kwargs: dict | None = None) -> Any:
        """Run `merge_fn(strategy, *args)` once in cross-replica context."""
        _stack.replica.append(None)
        try:
            return merge_fn(self._strategy, *args, **(kwargs or {}))
        finally:
            _stack.replica.pop()


class Strategy:
    """A way to spread training over devices; this base runs everything on one replica."""

    def __init__(self, devices: list[str] | None = None, cross_device_ops: Any = None):
        self._devices = tuple(devices) if devices else ("/job:localhost/replica:0/task:0/"
                                                        "device:CPU:0",)
        if len(self._devices) > 1:
            raise errors.InvalidArgumentError(
                None, type(self).__name__,
                f"{type(self).__name__}: {len(self._devices)} devices requested "
                f"({', '.join(self._devices)}) but this process drives one CPU replica; use "
                f"one process per replica (multi-process strategies)\n{errors.user_line()}")
        self._cross_device_ops = cross_device_ops

    @property
    def num_replicas_in_sync(self) -> int:
        """How many replicas run each step together (1 in a single process on CPU)."""
        return len(self._devices)

    @property
    def extended(self) -> Strategy:
        return self

    @property
    def worker_devices(self) -> tuple[str, ...]:
        return self._devices

    @contextlib.contextmanager
    def scope(self) -> Iterator[Strategy]:
        """Make this the current strategy: variables and models created inside belong to it."""
        _stack.strategies.append(self)
        try:
            yield self
        finally:
            _stack.strategies.pop()

    def run(self, fn: Callable, args: tuple = (), kwargs: dict | None = None,
            options: Any = None) -> Any:
        """Run `fn(*args, **kwargs)` on each replica (here: once) in a replica context."""
        _stack.replica.append(ReplicaContext(self, 0))
        _stack.strategies.append(self)
        try:
            return fn(*args, **(kwargs or {}))
        finally:
            _stack.strategies.pop()
            _stack.replica.pop()

    def reduce(self, reduce_op: Any, value: Any, axis: int | None = None) -> Any:
        """Combine per-replica values; with `axis`, also reduce each value along that axis."""
        op = _reduce_op(reduce_op)
        if axis is None:
            return value
        from tapeflow.ops import reduce_ops

        fn = reduce_ops.reduce_sum if op is ReduceOp.SUM else reduce_ops.reduce_mean
        return nest.map_structure(lambda v: fn(v, axis=axis), value)

    def experimental_distribute_dataset(self, dataset: Any, options: Any = None) -> Any:
        """The dataset each replica iterates; one replica sees every global batch."""
        return dataset

    def distribute_datasets_from_function(self, dataset_fn: Callable,
                                          options: Any = None) -> Any:
        """`dataset_fn(InputContext)` for the one input pipeline."""
        return dataset_fn(InputContext(1, 0, self.num_replicas_in_sync))

    experimental_distribute_datasets_from_function = distribute_datasets_from_function

    def experimental_local_results(self, value: Any) -> tuple:
        """The per-replica parts of `value` (one here)."""
        return (value,)

    def gather(self, value: Any, axis: int) -> Any:
        """Concatenate per-replica values along `axis` (one replica: the value)."""
        return value

    def __repr__(self) -> str:
        return f"<{type(self).__name__} replicas={self.num_replicas_in_sync}>"


class OneDeviceStrategy(Strategy):
    """Everything on one device (``tf.distribute.OneDeviceStrategy``)."""

    def __init__(self, device: str):
        super().__init__([device])


class _DefaultStrategy(Strategy):
    """The strategy in effect when no ``scope()`` is open."""


_default = _DefaultStrategy()


def get_strategy() -> Strategy:
    """The strategy of the innermost open ``scope()`` (or ``run``), else the default one."""
    return _stack.strategies[-1] if _stack.strategies else _default


def has_strategy() -> bool:
    """True inside some strategy's ``scope()``."""
    return bool(_stack.strategies)


def in_cross_replica_context() -> bool:
    """True outside ``strategy.run`` (and inside ``merge_call``)."""
    return not _stack.replica or _stack.replica[-1] is None


def get_replica_context() -> ReplicaContext | None:
    """The replica context inside ``run``; the default one outside any scope; else None."""
    if _stack.replica:
        return _stack.replica[-1]
    return None if _stack.strategies else ReplicaContext(_default, 0)


def scale_loss_for_distribution(loss: Any) -> Any:
    """`loss` divided by the replicas in sync inside a replica context (gradients are then
    summed over replicas, giving the mean over the global batch); otherwise unchanged."""
    ctx = _stack.replica[-1] if _stack.replica else None
    n = ctx.num_replicas_in_sync if ctx is not None else 1
    return loss if n == 1 else loss / n


@export("nn.compute_average_loss")
def compute_average_loss(per_example_loss: Any, sample_weight: Any = None,
                         global_batch_size: int | None = None) -> Any:
    """Per-example losses summed and divided by the global batch size
    (``tf.nn.compute_average_loss``): the loss to use in ``strategy.run`` training steps."""
    from tapeflow.ops import array_ops, math_ops, reduce_ops

    loss = math_ops.cast(per_example_loss, "float32") if not hasattr(
        per_example_loss, "dtype") else per_example_loss
    if sample_weight is not None:
        loss = loss * math_ops.cast(sample_weight, loss.dtype)
    total = reduce_ops.reduce_sum(loss)
    if global_batch_size is None:
        ctx = get_replica_context()
        n = ctx.num_replicas_in_sync if ctx is not None else 1
        per_replica = array_ops.shape(loss)[0]
        return total / math_ops.cast(per_replica * n, loss.dtype)
    return total / float(global_batch_size)
