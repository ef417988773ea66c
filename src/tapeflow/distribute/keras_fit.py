"""What Keras ``fit``/``evaluate`` do differently under a multi-worker strategy.

A model remembers the strategy whose scope it was created (or compiled) in. When that strategy
has several workers, the loops ask ``training_hooks(model)`` to:
- give each worker its slice of every global batch (``data``; arrays are shuffled with one seed
  from the chief so all workers agree on the global order);
- run each step under ``strategy.run`` (gradients all-reduced, loss scaled) (``step``);
- report metrics over all workers: the metrics' state variables are summed over the workers
  and the results computed from the sums (``logs``);
- print progress and write checkpoints, TensorBoard logs and CSV logs on the chief only
  (``callbacks``).
Without a multi-worker strategy the hooks change nothing.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator
from typing import Any

import numpy as np

from tapeflow.distribute import input_lib, strategy


class _NoHooks:
    distributed = False

    def data(self, handler: Any) -> Any:
        return handler

    def callbacks(self, callbacks: Any, verbose: int) -> tuple[Any, int]:
        return callbacks, verbose

    def step(self, fn: Any) -> Any:
        return fn

    def logs(self, logs: dict) -> dict:
        return logs


_NO_HOOKS = _NoHooks()
_WRITERS = ("ModelCheckpoint", "TensorBoard", "CSVLogger")


class _MultiWorkerHooks:
    distributed = True

    def __init__(self, model: Any, strat: Any):
        self._model = model
        self._strategy = strat
        self._comm = strat.communicator
        self._aggregated: tuple = ((), [], [])  # logs keys, their metrics, their states

    def data(self, handler: Any) -> Any:
        return _ShardedHandler(handler, self._comm)

    def callbacks(self, callbacks: Any, verbose: int) -> tuple[Any, int]:
        if self._strategy.is_chief:
            return callbacks, verbose
        kept = [c for c in (callbacks or []) if type(c).__name__ not in _WRITERS
                and not any(b.__name__ in _WRITERS for b in type(c).__mro__)]
        return kept, 0

    def step(self, fn: Any) -> Any:
        run = self._strategy.run
        return lambda batch: run(fn, args=(batch,))

    def logs(self, logs: dict) -> dict:
        key = tuple(logs)
        if self._aggregated[0] != key:  # ``model.metrics`` walks every layer: once per fit
            metrics = [m for m in self._model.metrics if m.name in logs]
            self._aggregated = (key, metrics, [v for m in metrics for v in m.variables])
        _, metrics, states = self._aggregated
        if not states:
            return logs
        local = [v._value for v in states]
        flat = np.concatenate([np.ravel(a).astype(np.float64) for a in local])
        total = self._comm.allreduce(flat, "sum", "metric aggregation")
        start = 0
        try:
            for v, a in zip(states, local):
                v._value = total[start:start + a.size].reshape(a.shape).astype(a.dtype)
                start += a.size
            out = dict(logs)
            for m in metrics:
                out[m.name] = float(np.asarray(m.result()))
            return out
        finally:
            for v, a in zip(states, local):
                v._value = a


class _ParameterServerHooks(_NoHooks):
    """``fit`` with a DatasetCreator under a ParameterServerStrategy: each step is scheduled on
    the coordinator (asynchronous: it returns at once); each worker reads its own pipeline
    (``create_per_worker_dataset``); at the end of an epoch ``fit`` joins, and the epoch's logs
    are the mean over its steps of what each step's ``train_step`` returned (metrics are reset
    on the worker before each step, so each value is that step's). Validation and
    ``evaluate`` run on the coordinator."""

    distributed = True

    def __init__(self, model: Any, strat: Any):
        self._model = model
        self._strategy = strat
        self._active = False
        self._pending: list = []
        self._last_logs: dict = {}

    def data(self, handler: Any) -> Any:
        source = getattr(handler, "_source", None)
        self._active = isinstance(source, _ScheduledSteps)
        if self._active:
            self._coordinator = self._strategy._coordinator or _new_coordinator(self._strategy)
            self._iterator = source.iterator(self._coordinator, self._strategy)
            self._source = source
        return handler

    def step(self, fn: Any) -> Any:
        if not self._active:
            return fn
        model, iterator = self._model, self._iterator
        worker_step = _worker_step(model)
        compiled = model._train_fn, model._test_fn, model._predict_fn
        model._train_fn = model._test_fn = model._predict_fn = None  # traced again there
        try:
            self._coordinator._register(worker_step)  # pickles it with the model, now
        finally:
            model._train_fn, model._test_fn, model._predict_fn = compiled

        def schedule(batch: Any) -> dict:
            self._pending.append(self._coordinator.schedule(worker_step, args=(iterator,)))
            if not self._source.at_epoch_end():
                return {}
            self._coordinator.join()
            results = [v.fetch() for v in self._pending]
            self._pending = []
            return {k: float(np.mean([float(np.asarray(r[k])) for r in results]))
                    for k in results[0]}

        return schedule

    def logs(self, logs: dict) -> dict:
        if not self._active:
            return logs
        if logs:
            self._last_logs = logs
        return self._last_logs


class _InProcessReplicaHooks(_NoHooks):
    """``fit``/``evaluate`` under a MirroredStrategy with several logical CPUs: each global
    batch is split between the replicas (threads), gradients are summed over them; the metrics'
    state is shared, so after every replica has updated it, the last replica's logs cover the
    global batch."""

    distributed = True

    def __init__(self, strat: Any):
        self._strategy = strat

    def step(self, fn: Any) -> Any:
        """`fn` (the model's train/test step, traced or not) run by every replica on its part
        of the batch; traced, the whole replicated step is one function (one graph holding
        every replica's ops), as Keras does under TensorFlow's MirroredStrategy."""
        replicated = _REPLICATED.get(fn)
        if replicated is None:
            from tapeflow.distribute.mirrored import PerReplica, split_batch

            strat, n = self._strategy, self._strategy.num_replicas_in_sync
            step = getattr(fn, "python_function", fn)

            def replicated(batch: Any) -> Any:
                out = strat.run(step, args=(split_batch(batch, n),))
                return {k: v.values[-1] if isinstance(v, PerReplica) else v
                        for k, v in out.items()}

            if hasattr(fn, "python_function"):
                from tapeflow.graph.function import function

                replicated = function(replicated)
            _REPLICATED[fn] = replicated
        return replicated


_REPLICATED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _worker_step(model: Any) -> Any:
    """What runs on a worker for one step (a closure: Ray sends it with the model)."""

    def worker_step(iterator: Any) -> dict:
        from tapeflow.keras.engine import data_adapter

        model.reset_metrics()
        batch = data_adapter.unpack_x_y_sample_weight(next(iterator))
        return model.make_train_function()(batch)

    return worker_step


def _new_coordinator(strat: Any) -> Any:
    from tapeflow.distribute.parameter_server import ClusterCoordinator

    return ClusterCoordinator(strat)


class _ScheduledSteps:
    """``fit``'s input under a ParameterServerStrategy: `steps_per_epoch` steps per epoch,
    for ever (a generator to the data handler), and the per-worker datasets."""

    def __init__(self, creator: Any, steps_per_epoch: int):
        self._creator = creator
        self._steps = int(steps_per_epoch)
        self._count = 0
        self._iterator = None

    def __iter__(self) -> _ScheduledSteps:
        return self

    def __next__(self) -> int:
        self._count += 1
        return self._count  # a placeholder: the batch itself is read on the worker

    def at_epoch_end(self) -> bool:
        return self._count % self._steps == 0

    def iterator(self, coordinator: Any, strat: Any) -> Any:
        if self._iterator is None:
            creator = self._creator

            def per_worker_dataset_fn() -> Any:
                return strat.distribute_datasets_from_function(creator)

            self._iterator = iter(coordinator.create_per_worker_dataset(per_worker_dataset_fn))
        return self._iterator


def fit_input(model: Any, x: Any, steps_per_epoch: int | None) -> Any:
    """What ``fit`` iterates for `x`: a DatasetCreator becomes scheduled steps under a
    ParameterServerStrategy, else the dataset its function makes for one input pipeline."""
    from tapeflow.distribute.dataset_creator import DatasetCreator
    from tapeflow.distribute.parameter_server import ParameterServerStrategy

    strat = getattr(model, "_distribution_strategy", None)
    if isinstance(strat, ParameterServerStrategy):
        if not isinstance(x, DatasetCreator):
            raise ValueError("Model.fit under a ParameterServerStrategy takes its input as a "
                             "tf.keras.utils.experimental.DatasetCreator (each worker builds "
                             f"its own pipeline), got {type(x).__name__}")
        if steps_per_epoch is None:
            raise ValueError("When using a `tf.keras.utils.experimental.DatasetCreator`, "
                             "`steps_per_epoch` argument must be provided in `Model.fit`.")
        return _ScheduledSteps(x, steps_per_epoch)
    if isinstance(x, DatasetCreator):
        if steps_per_epoch is None:
            raise ValueError("When using a `tf.keras.utils.experimental.DatasetCreator`, "
                             "`steps_per_epoch` argument must be provided in `Model.fit`.")
        return x(strategy.InputContext())
    return x


def training_hooks(model: Any) -> Any:
    """The loop hooks for `model`: multi-worker or parameter-server ones if it belongs to such
    a strategy."""
    from tapeflow.distribute.mirrored import MirroredStrategy
    from tapeflow.distribute.multi_worker import MultiWorkerMirroredStrategy
    from tapeflow.distribute.parameter_server import ParameterServerStrategy

    strat = getattr(model, "_distribution_strategy", None)
    if isinstance(strat, MultiWorkerMirroredStrategy) and strat.num_replicas_in_sync > 1:
        return _MultiWorkerHooks(model, strat)
    if isinstance(strat, ParameterServerStrategy):
        return _ParameterServerHooks(model, strat)
    if isinstance(strat, MirroredStrategy) and strat.num_replicas_in_sync > 1:
        return _InProcessReplicaHooks(strat)
    return _NO_HOOKS


def strategy_for_new_model() -> Any:
    """The strategy a model created (or compiled) now belongs to (None outside any scope)."""
    return strategy.get_strategy() if strategy.has_strategy() else None


class _ShardedHandler:
    """A DataHandler whose batches are this worker's slices of the global batches."""

    def __init__(self, handler: Any, comm: Any):
        self._handler = handler
        self._comm = comm
        self.steps = handler.steps
        self._dist = None
        if handler.is_dataset:
            self._dist = input_lib.DistributedDataset(handler._dataset, comm.size, comm.rank)
            if self._dist.policy is not input_lib.AutoShardPolicy.DATA:
                self.steps = None  # FILE/OFF: this worker's own count of batches

    def __getattr__(self, name: str) -> Any:
        return getattr(self._handler, name)

    def epoch(self) -> Iterator[tuple[Any, Any, Any]]:
        if self._dist is not None and self._dist.policy is not input_lib.AutoShardPolicy.DATA:
            yield from self._uneven_epoch()
            return
        seed = int(self._comm.bcast(np.random.randint(0, 2**31 - 1, size=1, dtype=np.int64),
                                    0, "fit shuffle seed")[0])
        saved = np.random.get_state()
        np.random.seed(seed)  # the global order comes from the chief's seed on every worker
        batches = self._handler.epoch()
        try:
            first = next(batches, None)
        finally:
            np.random.set_state(saved)
        for batch in (() if first is None else _chain(first, batches)):
            part = input_lib.split_rows(batch, self._comm.size, self._comm.rank)
            if part is not None:
                yield part

    def _uneven_epoch(self) -> Iterator[tuple[Any, Any, Any]]:
        from tapeflow.keras.engine import data_adapter

        it = iter(self._dist)
        while True:
            element = next(it, None)
            have = np.array([0.0 if element is None else 1.0])
            if self._comm.allreduce(have, "min", "end-of-data agreement")[0] < 1:
                return
            yield data_adapter.unpack_x_y_sample_weight(element)


def _chain(first: Any, rest: Iterator) -> Iterator:
    yield first
    yield from rest
