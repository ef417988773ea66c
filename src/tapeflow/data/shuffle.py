"""`shuffle`: uniform sampling from a buffer of the next `buffer_size` elements (TF's algorithm)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from tapeflow.data import seeds
from tapeflow.data.dataset import Dataset, _EpochCounter


class ShuffleDataset(Dataset):
    """Fill a buffer, then repeatedly emit a random buffered element and refill its place."""

    def __init__(self, input_dataset: Dataset, buffer_size: int, seed: int | None,
                 reshuffle_each_iteration: bool):
        self._inputs = (input_dataset,)
        self._buffer_size = buffer_size
        self._reshuffle = reshuffle_each_iteration
        self._epochs = _EpochCounter()
        self._seed = seeds.resolve(seed)
        if self._seed is None and not reshuffle_each_iteration:
            # without any seed, a non-reshuffling dataset still repeats one order: pick it now
            self._seed = int(np.random.default_rng().integers(1 << 62))

    def _iterate(self, ctx: Any) -> Iterator[Any]:
        epoch = ctx.epoch(self)
        rng = seeds.epoch_rng(ctx.stage_seed(self, self._seed), epoch if self._reshuffle else 0)
        source = self._inputs[0]._iterate(ctx)
        buffer: list = []
        try:
            for element in source:
                buffer.append(element)
                if len(buffer) == self._buffer_size:
                    break
            for element in source:
                i = int(rng.integers(len(buffer)))
                yield buffer[i]
                buffer[i] = element
            while buffer:
                i = int(rng.integers(len(buffer)))
                buffer[i], buffer[-1] = buffer[-1], buffer[i]
                yield buffer.pop()
        finally:
            source.close()

    def _compute_spec(self) -> Any:
        return self._inputs[0].element_spec

    def _cardinality(self) -> int:
        return self._inputs[0]._cardinality()
