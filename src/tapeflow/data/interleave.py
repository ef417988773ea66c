"""`interleave` and `flat_map`: map elements to datasets and merge them in TF's exact order.

The order is defined by a cycle of `cycle_length` open datasets, visited round-robin taking
`block_length` elements from each; an exhausted dataset is replaced, in the same cycle position,
by the dataset of the next input element. The parallel version keeps that order (unless
`deterministic=False`) while every open dataset, and `cycle_length` future ones, fill their own
buffers on background threads.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

from tapeflow.data import structure, workers
from tapeflow.data.autotune import AUTOTUNE, default_cpu_budget
from tapeflow.data.dataset import UNKNOWN, Dataset, _EpochCounter
from tapeflow.data.mapping import fn_name, seed_offset, stage_salt
from tapeflow.framework import errors
from tapeflow.framework.context import state as _context

_END = workers._END


def open_dataset(fn: Callable, element: Any, offset: int) -> Dataset:
    """`fn(element)`, which must return a Dataset."""
    previous = _context.seed_offset
    _context.seed_offset = offset
    try:
        ds = structure.call_with_element(fn, element)
    finally:
        _context.seed_offset = previous
    if not isinstance(ds, Dataset):
        raise TypeError(f"interleave/flat_map: {fn_name(fn)} must return a tf.data.Dataset, "
                        f"got {type(ds).__name__}")
    return ds


def interleave_order(open_next: Callable[[], Any], cycle_length: int, block_length: int,
                     deterministic: bool = True) -> Iterator[Any]:
    """TF's interleave loop over slots with `next()` (returns _END when done) and `close()`."""
    cycle: list = [None] * cycle_length
    cycle_index = block_index = num_open = 0
    end_of_input = False
    try:
        while not (end_of_input and num_open == 0):
            slot = cycle[cycle_index]
            if slot is not None:
                if not deterministic and not slot.ready():
                    ready = [i for i, s in enumerate(cycle) if s is not None and s.ready()]
                    if ready:
                        cycle_index, block_index, slot = ready[0], 0, cycle[ready[0]]
                element = slot.next()
                if element is not _END:
                    yield element
                    block_index += 1
                    if block_index == block_length:
                        cycle_index, block_index = (cycle_index + 1) % cycle_length, 0
                    continue
                slot.close()
                cycle[cycle_index] = None
                num_open -= 1
                cycle_index, block_index = (cycle_index + 1) % cycle_length, 0
            elif not end_of_input:
                slot = open_next()
                if slot is None:
                    end_of_input = True
                else:
                    cycle[cycle_index] = slot
                    num_open += 1
            else:
                cycle_index, block_index = (cycle_index + 1) % cycle_length, 0
    finally:
        for slot in cycle:
            if slot is not None:
                slot.close()


class _SequentialSlot:
    """An open dataset advanced on the consumer's thread."""

    def __init__(self, iterator: Iterator):
        self._it = iterator

    def ready(self) -> bool:
        return True

    def next(self) -> Any:
        return next(self._it, _END)

    def close(self) -> None:
        self._it.close()


class InterleaveDataset(Dataset):
    """Sequential interleave (and flat_map, which is cycle_length=1)."""

    def __init__(self, input_dataset: Dataset, map_func: Callable, cycle_length: int,
                 block_length: int):
        if not callable(map_func):
            raise TypeError(f"map_func must be callable\n{errors.user_line()}")
        self._inputs = (input_dataset,)
        self._fn = map_func
        self._cycle_length = cycle_length
        self._block_length = block_length
        self._stage = stage_salt()
        self._epochs = _EpochCounter()

    def _resolved_cycle_length(self) -> int:
        return default_cpu_budget() if self._cycle_length == AUTOTUNE else self._cycle_length

    def _iterate(self, ctx: Any) -> Iterator[Any]:
        source = self._inputs[0]._iterate(ctx)
        fn, stage, epoch = self._fn, ctx.salt(self), ctx.epoch(self)
        counter = iter(range(1 << 62))

        def open_next() -> _SequentialSlot | None:
            element = next(source, _END)
            if element is _END:
                return None
            ds = open_dataset(fn, element, seed_offset(stage, epoch, next(counter)))
            return _SequentialSlot(ds._iterate(ctx))

        try:
            yield from interleave_order(open_next, self._resolved_cycle_length(),
                                        self._block_length)
        finally:
            source.close()

    def _compute_spec(self) -> Any:
        from tapeflow.data.iterator import IterContext

        source = self._inputs[0]._iterate(IterContext(self._inputs[0].options()))
        try:
            first = next(source, _END)
            if first is _END:
                return None
            return open_dataset(self._fn, first, 0).element_spec
        finally:
            source.close()

    def _cardinality(self) -> int:
        return UNKNOWN


class _Feeder:
    """An open dataset filling its own buffer on a background thread."""

    def __init__(self, dataset: Dataset, ctx: Any, stats: Any, capacity: int, gates: tuple):
        self.current = False
        self._buffer = workers.Buffer(stats, ctx.tuner, capacity)
        current_gate, future_gate = gates
        gate = lambda: current_gate if self.current else future_gate  # noqa: E731
        self._thread = workers.start_thread(
            workers.fill, dataset._iterate(ctx), self._buffer, "interleave", gate,
            name="interleave")

    def ready(self) -> bool:
        return self._buffer.ready()

    def next(self) -> Any:
        try:
            return self._buffer.get()
        except StopIteration:
            return _END

    def close(self) -> None:
        self._buffer.close()
        workers.join([self._thread])


class ParallelInterleaveDataset(InterleaveDataset):
    """Interleave whose open (and next few) datasets are read by background threads."""

    def __init__(self, input_dataset: Dataset, map_func: Callable, cycle_length: int,
                 block_length: int, num_parallel_calls: int, deterministic: bool | None):
        super().__init__(input_dataset, map_func, cycle_length, block_length)
        self._parallelism = num_parallel_calls
        self._deterministic = deterministic

    def _iterate(self, ctx: Any) -> Iterator[Any]:
        cycle_length = self._resolved_cycle_length()
        autotuned = self._parallelism == AUTOTUNE
        parallelism = cycle_length if autotuned else min(self._parallelism, cycle_length)
        per_slot = max(2, self._block_length)
        n_future = cycle_length
        stats = ctx.tuner.stage(f"ParallelInterleave({fn_name(self._fn)})",
                                parallelism=parallelism, parallelism_autotuned=autotuned,
                                buffer_size=per_slot)
        stats.notes.append(f"cycle_length {cycle_length}, {n_future} datasets opened ahead")
        gates = (threading.Semaphore(parallelism), threading.Semaphore(n_future))
        deterministic = (ctx.options.is_deterministic if self._deterministic is None
                         else self._deterministic)
        source = self._inputs[0]._iterate(ctx)
        fn, stage, epoch = self._fn, ctx.salt(self), ctx.epoch(self)
        futures: deque = deque()
        state = {"index": 0, "input_done": False}

        def refill(target: int) -> None:
            while len(futures) < target and not state["input_done"]:
                element = next(source, _END)
                if element is _END:
                    state["input_done"] = True
                    return
                offset = seed_offset(stage, epoch, state["index"])
                state["index"] += 1
                ds = open_dataset(fn, element, offset)
                futures.append(_Feeder(ds, ctx, stats, per_slot, gates))

        def open_next() -> _Feeder | None:
            refill(n_future + 1)
            if not futures:
                return None
            feeder = futures.popleft()
            feeder.current = True
            refill(n_future)
            return feeder

        try:
            yield from interleave_order(open_next, cycle_length, self._block_length,
                                        deterministic)
        finally:
            stats.finish()
            for feeder in futures:
                feeder.close()
            source.close()
