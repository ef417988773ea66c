"""``tf.keras.callbacks.BackupAndRestore``: a job restarted after a failure (a worker died, the
machine was pre-empted) resumes ``fit`` at the epoch after its last backup, with the model's
weights and the optimizer's state (slots, iterations) as they were then.

The backup is a checkpoint in `backup_dir` holding the model (with its optimizer) and the
number of epochs done. Under a multi-worker strategy every worker restores from it (the
directory must be one all workers see) and only the chief writes it.
"""

from __future__ import annotations

import os
import shutil
from typing import Any

import numpy as np

from tapeflow.framework.context import eager_scope
from tapeflow.framework.variable import Variable
from tapeflow.keras.callbacks import Callback


class BackupAndRestore(Callback):
    """Back up the training state at the end of every epoch; restore it when ``fit`` starts."""

    def __init__(self, backup_dir: str, save_freq: Any = "epoch", delete_checkpoint: bool = True,
                 save_before_preemption: bool = False):
        super().__init__()
        if not backup_dir:
            raise ValueError("BackupAndRestore: empty `backup_dir` argument passed")
        if save_freq != "epoch":
            raise ValueError(f"BackupAndRestore: save_freq={save_freq!r} is not supported; "
                             f"backups are made at the end of each epoch ('epoch')")
        self.backup_dir = os.fspath(backup_dir)
        self.save_freq = save_freq
        self.delete_checkpoint = delete_checkpoint
        self.save_before_preemption = save_before_preemption
        self._manager = None
        self._epochs_done = None

    def _is_chief(self) -> bool:
        strategy = getattr(self.model, "_distribution_strategy", None)
        return getattr(strategy, "is_chief", True)

    def on_train_begin(self, logs: dict | None = None) -> None:
        from tapeflow import train

        with eager_scope():
            self._epochs_done = Variable(np.int64(0), trainable=False, name="epochs_done")
        checkpoint = train.Checkpoint(model=self.model, epochs_done=self._epochs_done)
        self._manager = train.CheckpointManager(checkpoint, self.backup_dir, max_to_keep=1)
        latest = self._manager.latest_checkpoint
        if latest is not None:
            checkpoint.restore(latest)
            self.model._resume_at_epoch = int(self._epochs_done.numpy())

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        self._epochs_done.assign(np.int64(epoch + 1))
        if self._is_chief():
            self._manager.save()

    def on_train_end(self, logs: dict | None = None) -> None:
        if self.delete_checkpoint and self._is_chief():
            shutil.rmtree(self.backup_dir, ignore_errors=True)
