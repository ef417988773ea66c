"""The Python iterator over a Dataset: converts elements to tensors and owns the worker threads.

Each `iter(dataset)` builds a fresh chain of generators, one per stage. Closing the chain (on
exhaustion, `close()`, `break` + garbage collection, or an error) runs every stage's `finally`,
which stops and joins that stage's threads: no thread outlives its iterator.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from tapeflow.data import iterator_state, structure
from tapeflow.data.autotune import AutotuneReport, Tuner
from tapeflow.data.options import Options
from tapeflow.framework import errors


class IterContext:
    """What every stage of one iterator shares: options, the autotuner and the record of the
    random draws its stages make (see iterator_state.py). `splits` is set on a data-service
    worker in `distributed_epoch` mode: where the pipeline's source takes its splits from;
    `shard_hint` (num_shards, index) on a worker under `ShardingPolicy.HINT`."""

    __slots__ = ("options", "tuner", "draws", "splits", "shard_hint")

    def __init__(self, options: Options, draws: iterator_state.Draws | None = None,
                 splits: Any = None, shard_hint: tuple[int, int] | None = None):
        self.options = options
        self.splits = splits
        self.shard_hint = shard_hint
        self.tuner = Tuner(options.autotune.cpu_budget, options.autotune.ram_budget,
                           options.threading.private_threadpool_size)
        self.draws = draws

    def epoch(self, dataset: Any) -> int:
        """The epoch number of this pass over `dataset` (recorded for checkpoints)."""
        if self.draws is None:
            return dataset._epochs.next()
        return self.draws.epoch(dataset)

    def salt(self, dataset: Any) -> int:
        """The number a map stage mixes into per-element random seeds (kept by checkpoints)."""
        return dataset._stage if self.draws is None else self.draws.salt(dataset)

    def stage_seed(self, dataset: Any, seed: int | None) -> int | None:
        """The seed a random stage uses: its own, else one derived from the iterator's."""
        return seed if self.draws is None else self.draws.stage_seed(dataset, seed)


class Optional:
    """`tf.experimental.Optional`: a value or nothing, from `get_next_as_optional`."""

    def __init__(self, value: Any = None, has_value: bool = False):
        self._value, self._has_value = value, has_value

    def has_value(self) -> bool:
        return self._has_value

    def get_value(self) -> Any:
        if not self._has_value:
            raise errors.InvalidArgumentError("The Optional has no value.")
        return self._value


class DatasetIterator:
    """`iter(dataset)`: yields eager tensors; `get_next()` raises OutOfRangeError at the end."""

    def __init__(self, dataset: Any, to_user=structure.to_user):
        self._dataset = dataset
        self._to_user = to_user
        self._state_var: Any = None
        self._start(int(np.random.default_rng().integers(1 << 62)), None, 0)

    def _start(self, seed: int, replay: dict | None, position: int,
               salts: dict | None = None, seeds: dict | None = None) -> None:
        """(Re)build the stages' generators; the other arguments restore a saved state."""
        dataset = self._dataset
        self._ctx = IterContext(dataset.options(),
                                iterator_state.Draws(dataset, seed, replay, salts, seeds))
        self._gen = dataset._iterate(self._ctx)
        dataset._last_tuner = self._ctx.tuner
        self._position = 0
        for _ in range(position):   # run forward to the saved position (same draws, same order)
            try:
                next(self._gen)
            except StopIteration:
                raise errors.InvalidArgumentError(
                    f"Cannot restore the iterator: the pipeline ended after {self._position} "
                    f"elements, before the saved position {position} (has its data changed?)"
                ) from None
            self._position += 1

    @property
    def element_spec(self) -> Any:
        return self._dataset.element_spec

    def __iter__(self) -> DatasetIterator:
        return self

    def __next__(self) -> Any:
        if self._state_var is not None and self._state_var._value is not self._state_value:
            self._restore()
        start = time.perf_counter()
        tuner = self._ctx.tuner
        try:
            element = next(self._gen)
        except BaseException:
            tuner.ended = tuner.ended or time.perf_counter()
            raise
        end = time.perf_counter()
        tuner.consumer_wait_s += end - start
        tuner.elements += 1
        self._position += 1
        return self._to_user(element)

    # ---- checkpointing (tf.train.Checkpoint(iterator=it)) --------------------------------
    def _checkpoint_dependencies(self) -> list:
        """The iterator's state as one variable, brought up to date as the checkpoint walks
        its objects; a restore that assigns it is applied before the next element."""
        from tapeflow.framework.variable import Variable

        iterator_state.refuse_unrestorable(self._dataset, self._ctx.options)
        value = iterator_state.encode(self._position, self._ctx.draws, self._dataset)
        if self._state_var is None:
            self._state_var = Variable(value, trainable=False, name="iterator_state")
        else:
            self._state_var.assign(value)
        self._state_value = self._state_var._value
        return [("_iterator_state", self._state_var)]

    def _restore(self) -> None:
        state = iterator_state.decode(self._state_var.numpy(), self._dataset)
        self.close()
        self._start(state["seed"], state["draws"], state["position"], state["salts"],
                    state["seeds"])
        self._state_value = self._state_var._value

    def get_next(self) -> Any:
        """The next element; `OutOfRangeError` at the end of the sequence (TF's contract)."""
        try:
            return next(self)
        except StopIteration:
            raise errors.OutOfRangeError("End of sequence") from None

    def get_next_as_optional(self) -> Optional:
        try:
            return Optional(next(self), True)
        except StopIteration:
            return Optional()

    def autotune_report(self) -> AutotuneReport:
        """Knob values, buffered bytes and the bottleneck stage of this iterator."""
        return self._ctx.tuner.report()

    def close(self) -> None:
        """Stop and join every worker thread of this iterator (idempotent)."""
        gen = self.__dict__.get("_gen")
        if gen is not None:
            gen.close()

    def __del__(self) -> None:
        self.close()


class NumpyIterator(DatasetIterator):
    """``dataset.as_numpy_iterator()``: the same iterator, yielding NumPy values."""

    def __init__(self, dataset: Any):
        super().__init__(dataset, to_user=structure.to_numpy)
