"""``tf.keras.callbacks.BackupAndRestore``: a job restarted after a failure (a worker died, the
machine was pre-empted) resumes ``fit`` where its last backup was made, with the model's
weights and the optimizer's state (slots, iterations) as they were then.

Backups are made at the end of every epoch (``save_freq="epoch"``) or every `save_freq`
batches (an int, TF 2.21's argument); then ``fit`` resumes mid-epoch, skipping the batches of
that epoch done before the backup (with ``shuffle=False`` or a dataset in a fixed order, the
same batches as an uninterrupted run). The backup is a checkpoint in `backup_dir` holding the
model (with its optimizer) and the epoch and batch to resume at. Under a multi-worker strategy
every worker restores from it (the directory must be one all workers see) and only the chief
writes it.
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

    def __init__(self, backup_dir: str, save_freq: Any = "epoch", double_checkpoint: bool = False,
                 delete_checkpoint: bool = True, save_before_preemption: bool = False):
        super().__init__()
        if not backup_dir:
            raise ValueError("BackupAndRestore: empty `backup_dir` argument passed")
        if save_freq != "epoch" and (isinstance(save_freq, bool) or not isinstance(
                save_freq, int) or save_freq < 1):
            raise ValueError(f"BackupAndRestore: invalid value for argument `save_freq`. "
                             f"Received: save_freq={save_freq!r}. Expected either 'epoch' or "
                             f"a positive integer (a backup every that many batches).")
        self.backup_dir = os.fspath(backup_dir)
        self.save_freq = save_freq
        self.double_checkpoint = bool(double_checkpoint)
        self.delete_checkpoint = delete_checkpoint
        self.save_before_preemption = save_before_preemption
        self._manager = None
        self._epochs_done = None  # the epoch to resume at
        self._batches_done = None  # and how many of its batches were done
        self._epoch = 0
        self._batches_seen = 0

    def _is_chief(self) -> bool:
        strategy = getattr(self.model, "_distribution_strategy", None)
        return getattr(strategy, "is_chief", True)

    def on_train_begin(self, logs: dict | None = None) -> None:
        from tapeflow import train

        with eager_scope():
            self._epochs_done = Variable(np.int64(0), trainable=False, name="epochs_done")
            self._batches_done = Variable(np.int64(0), trainable=False, name="batches_done")
        checkpoint = train.Checkpoint(model=self.model, epochs_done=self._epochs_done,
                                      batches_done=self._batches_done)
        self._manager = train.CheckpointManager(checkpoint, self.backup_dir,
                                                max_to_keep=2 if self.double_checkpoint else 1)
        self._batches_seen = 0
        latest = self._manager.latest_checkpoint
        if latest is not None:
            checkpoint.restore(latest)
            self.model._resume_at_epoch = int(self._epochs_done.numpy())
            self.model._resume_at_step = int(self._batches_done.numpy())

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        self._epoch = epoch

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        if self.save_freq == "epoch":
            return
        self._batches_seen += 1
        if self._batches_seen % self.save_freq == 0:
            steps = self.params.get("steps")
            if steps is not None and batch + 1 >= steps:  # the epoch's last batch
                self._save(self._epoch + 1, 0)
            else:
                self._save(self._epoch, batch + 1)

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        if self.save_freq == "epoch":
            self._save(epoch + 1, 0)

    def _save(self, epoch: int, batches: int) -> None:
        self._epochs_done.assign(np.int64(epoch))
        self._batches_done.assign(np.int64(batches))
        if self._is_chief():
            self._manager.save()

    def on_train_end(self, logs: dict | None = None) -> None:
        if self.delete_checkpoint and self._is_chief():
            shutil.rmtree(self.backup_dir, ignore_errors=True)
