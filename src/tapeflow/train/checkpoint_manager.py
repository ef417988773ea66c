"""``tf.train.CheckpointManager``: numbered saves in one directory, keeping the newest N."""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np

from tapeflow.framework.context import eager_scope
from tapeflow.train import checkpoint_io, checkpoint_state
from tapeflow.train.checkpoint import Checkpoint, LoadStatus, save_object


class CheckpointManager:
    """Saves ``{directory}/{checkpoint_name}-{n}``, deleting the oldest beyond `max_to_keep`.

    Picks up the checkpoints an earlier run left in `directory` (from its index file). A save
    is crash-safe in this order: write the new file (atomically), write the index naming it and
    the files about to go, then delete those. Killed at any instant, the directory's index names
    a complete checkpoint at least as new as the last ``save()`` that returned; the next manager
    finishes interrupted deletions and the next save removes temporaries a killed save left.
    """

    def __init__(self, checkpoint: Checkpoint, directory: str, max_to_keep: int | None,
                 keep_checkpoint_every_n_hours: float | None = None,
                 checkpoint_name: str = "ckpt", step_counter: Any = None,
                 checkpoint_interval: int | None = None, init_fn: Any = None):
        if max_to_keep is not None and max_to_keep <= 0:
            raise ValueError(f"CheckpointManager: max_to_keep must be positive or None, got "
                             f"{max_to_keep}")
        if checkpoint_interval is not None and step_counter is None:
            raise ValueError("CheckpointManager: `step_counter` should be passed if "
                             "`checkpoint_interval` is not None.")
        self._checkpoint = checkpoint
        self._directory = os.fspath(directory)
        self._max_to_keep = max_to_keep
        self._keep_every_s = (None if keep_checkpoint_every_n_hours is None
                              else keep_checkpoint_every_n_hours * 3600.0)
        self._name = checkpoint_name
        self._step_counter = step_counter
        self._interval = checkpoint_interval
        self._init_fn = init_fn
        self._last_step: int | None = None
        paths, stamps, deleting = checkpoint_state.checkpoints_in(self._directory)
        self._paths, self._stamps = paths, stamps
        self._last_kept = stamps[0] if stamps else time.time()
        _remove([p for p in deleting if p not in paths])

    @property
    def directory(self) -> str:
        return self._directory

    @property
    def checkpoint(self) -> Checkpoint:
        return self._checkpoint

    @property
    def checkpoints(self) -> list[str]:
        """Managed checkpoint paths, oldest first."""
        return list(self._paths)

    @property
    def latest_checkpoint(self) -> str | None:
        return self._paths[-1] if self._paths else None

    @property
    def checkpoint_interval(self) -> int | None:
        return self._interval

    def save(self, checkpoint_number: int | None = None, check_interval: bool = True,
             options: Any = None) -> str | None:
        """Write a new checkpoint (numbered `checkpoint_number` or the save counter)."""
        if self._interval is not None and check_interval:
            step = int(np.asarray(self._step_counter))
            if self._last_step is not None and step < self._last_step + self._interval:
                return None
            self._last_step = step
        with eager_scope():
            counter = self._checkpoint.save_counter
            counter.assign_add(np.int64(1))
        number = int(counter.numpy()) if checkpoint_number is None else int(
            np.asarray(checkpoint_number))
        path = os.path.join(self._directory, f"{self._name}-{number}")
        checkpoint_io.remove_temporaries(self._directory, f"{self._name}-")
        checkpoint_io.remove_temporaries(self._directory, checkpoint_state.STATE_FILE)
        save_object(self._checkpoint, path)
        if path in self._paths:
            i = self._paths.index(path)
            del self._paths[i], self._stamps[i]
        self._paths.append(path)
        self._stamps.append(time.time())
        doomed = self._sweep()
        checkpoint_state.write_state(self._directory, path, self._paths, self._stamps, doomed)
        _remove(doomed)
        return path

    def _sweep(self) -> list[str]:
        """Drop the oldest checkpoints beyond max_to_keep (keeping one every n hours) from the
        list; returns the paths whose files should go once the new index is written."""
        doomed: list[str] = []
        if self._max_to_keep is None:
            return doomed
        while len(self._paths) > self._max_to_keep:
            path, stamp = self._paths.pop(0), self._stamps.pop(0)
            if self._keep_every_s is not None and stamp - self._last_kept >= self._keep_every_s:
                self._last_kept = stamp
                continue
            doomed.append(path)
        return doomed

    def restore_or_initialize(self) -> str | None:
        """Restore the latest checkpoint, or run `init_fn` when there is none."""
        latest = self.latest_checkpoint
        if latest is not None:
            self._checkpoint.restore(latest)
            return latest
        if self._init_fn is not None:
            self._init_fn()
        return None

    def restore_latest(self) -> LoadStatus:
        return self._checkpoint.restore(self.latest_checkpoint)


def _remove(paths: list[str]) -> None:
    for path in paths:
        try:
            os.remove(checkpoint_io.data_path(path))
        except FileNotFoundError:
            pass
