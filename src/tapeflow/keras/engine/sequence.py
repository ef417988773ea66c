"""``tf.keras.utils.Sequence``: a dataset as an indexable list of batches (``fit`` takes one)."""

from __future__ import annotations

import functools
import multiprocessing
from collections import deque
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
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


class PyDataset(Sequence):
    """Keras 3's name for a Sequence that carries its own loading options: ``fit`` loads its
    batches with ``workers`` threads (processes with ``use_multiprocessing``), up to
    ``max_queue_size`` ahead. Subclasses call ``super().__init__(**kwargs)``."""

    def __init__(self, workers: int = 1, use_multiprocessing: bool = False,
                 max_queue_size: int = 10):
        self.workers = workers
        self.use_multiprocessing = use_multiprocessing
        self.max_queue_size = max_queue_size

    @property
    def num_batches(self) -> int:
        return len(self)


# Sequences being loaded by forked workers, by id: a child inherits this table at fork, so the
# Sequence itself is never pickled (only batch indices go out and batches come back).
_SHARED: dict[int, Sequence] = {}


def _load(uid: int, index: int) -> Any:
    return _SHARED[uid][index]


def ordered_batches(seq: Sequence, indices: list[int], workers: int, max_queue_size: int,
                    use_multiprocessing: bool) -> Iterator[Any]:
    """``seq[i]`` for each index, in order, loaded by `workers` threads (or forked processes
    with `use_multiprocessing`, as Keras does), at most `max_queue_size` ahead. The pool lives
    for one epoch, so processes see the Sequence as ``on_epoch_end`` left it."""
    if workers <= 1:
        for i in indices:
            yield seq[i]
        return
    fork = use_multiprocessing and "fork" in multiprocessing.get_all_start_methods()
    if fork:
        pool: Any = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"))
        uid = id(seq)
        _SHARED[uid] = seq
        submit = functools.partial(pool.submit, _load, uid)
    else:
        pool = ThreadPoolExecutor(workers, thread_name_prefix="keras_sequence")
        submit = functools.partial(pool.submit, seq.__getitem__)
    try:
        pending: deque = deque()
        for i in indices:
            pending.append(submit(i))
            if len(pending) >= max_queue_size:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        if fork:
            _SHARED.pop(uid, None)
