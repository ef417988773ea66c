"""``tf.keras.utils.Sequence``: a dataset as an indexable list of batches (``fit`` takes one)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


class Sequence:
    """Subclass it with ``__len__`` (batches per epoch) and ``__getitem__(index)`` (one batch:
    ``x``, ``(x, y)`` or ``(x, y, sample_weight)``); ``on_epoch_end`` runs after each epoch."""

    def __getitem__(self, index: int) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement __getitem__")

    def __len__(self) -> int:
        raise NotImplementedError(f"{type(self).__name__} must implement __len__")

    def on_epoch_end(self) -> None:
        """Called after every epoch (shuffle the data here)."""

    def __iter__(self) -> Iterator[Any]:
        for i in range(len(self)):
            yield self[i]
