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
        metrics = [m for m in self._model.metrics if m.name in logs]
        states = [v for m in metrics for v in m.variables]
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


def training_hooks(model: Any) -> Any:
    """The loop hooks for `model`: multi-worker ones if it belongs to such a strategy."""
    from tapeflow.distribute.multi_worker import MultiWorkerMirroredStrategy

    strat = getattr(model, "_distribution_strategy", None)
    if isinstance(strat, MultiWorkerMirroredStrategy) and strat.num_replicas_in_sync > 1:
        return _MultiWorkerHooks(model, strat)
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
