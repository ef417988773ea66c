"""`prefetch`: one background thread runs the input pipeline ahead of the consumer."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tapeflow.data import workers
from tapeflow.data.autotune import AUTOTUNE
from tapeflow.data.dataset import Dataset


class PrefetchDataset(Dataset):
    """Overlaps producing element n+1.. with consuming element n (buffer grows under AUTOTUNE)."""

    def __init__(self, input_dataset: Dataset, buffer_size: int):
        self._inputs = (input_dataset,)
        self._buffer_size = buffer_size

    def _iterate(self, ctx: Any) -> Iterator[Any]:
        autotuned = self._buffer_size == AUTOTUNE
        stats = ctx.tuner.stage("Prefetch", buffer_size=1 if autotuned else self._buffer_size,
                                buffer_autotuned=autotuned)
        buffer = workers.Buffer(stats, ctx.tuner)
        source = self._inputs[0]._iterate(ctx)
        thread = workers.start_thread(workers.fill, source, buffer, "prefetch", name="prefetch")
        try:
            while True:
                try:
                    element = buffer.get()
                except StopIteration:
                    return
                yield element
        finally:
            stats.finish()
            buffer.close()
            workers.join([thread])

    def _compute_spec(self) -> Any:
        return self._inputs[0].element_spec

    def _cardinality(self) -> int:
        return self._inputs[0]._cardinality()
