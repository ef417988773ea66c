"""``tf.keras.callbacks.TensorBoard``: training curves as TensorBoard event files.

Scalars only, in Keras's layout: ``log_dir/train`` gets ``epoch_<metric>`` at step = epoch (and
``batch_<metric>`` every `update_freq` batches at step = batches seen), ``log_dir/validation``
gets the ``val_`` logs without their prefix. Events are written with the ``tensorboard``
package's protos and event-file writer (``pip install tapeflow[tensorboard]``), so any
TensorBoard reads them; the package is imported only when the callback is created.
"""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np

from tapeflow.keras.callbacks import Callback

_UNSUPPORTED = {"histogram_freq": 0, "write_images": False, "embeddings_freq": 0}


def _tensorboard_modules() -> tuple[Any, Any, Any]:
    try:
        from tensorboard.compat.proto import event_pb2, summary_pb2
        from tensorboard.summary.writer.event_file_writer import EventFileWriter
    except ImportError as e:
        raise ImportError("tf.keras.callbacks.TensorBoard writes event files with the "
                          "`tensorboard` package, which is not installed. Install the optional "
                          "extra: pip install 'tapeflow[tensorboard]'") from e
    return event_pb2, summary_pb2, EventFileWriter


class TensorBoard(Callback):
    """Write the loss and metrics of ``fit`` as TensorBoard scalar summaries."""

    def __init__(self, log_dir: str | os.PathLike = "logs", histogram_freq: int = 0,
                 write_graph: bool = True, write_images: bool = False,
                 write_steps_per_second: bool = False, update_freq: str | int = "epoch",
                 profile_batch: Any = 0, embeddings_freq: int = 0,
                 embeddings_metadata: Any = None, **kwargs: Any) -> None:
        super().__init__()
        self._event_pb2, self._summary_pb2, self._writer_cls = _tensorboard_modules()
        given = {"histogram_freq": histogram_freq, "write_images": write_images,
                 "embeddings_freq": embeddings_freq}
        for name, default in _UNSUPPORTED.items():
            if given[name] != default:
                raise NotImplementedError(f"TensorBoard: {name}={given[name]!r} is not "
                                          "supported; only scalar summaries are written.")
        if update_freq not in ("epoch", "batch") and not (
                isinstance(update_freq, int) and update_freq > 0):
            raise ValueError(f"TensorBoard: update_freq must be 'epoch', 'batch' or a positive "
                             f"int, got {update_freq!r}")
        self.log_dir = os.fspath(log_dir)
        self.update_freq = 1 if update_freq == "batch" else update_freq
        self.write_steps_per_second = write_steps_per_second
        self._writers: dict[str, Any] = {}
        self._batches_seen = 0
        self._epoch_start = 0.0
        self._epoch_batches = 0

    def _writer(self, name: str) -> Any:
        if name not in self._writers:
            path = os.path.join(self.log_dir, name)
            os.makedirs(path, exist_ok=True)
            self._writers[name] = self._writer_cls(path)
        return self._writers[name]

    def _write(self, name: str, prefix: str, logs: dict, step: int) -> None:
        values = [self._summary_pb2.Summary.Value(tag=f"{prefix}{k}", simple_value=float(v))
                  for k, v in logs.items() if np.ndim(v) == 0]
        if values:
            event = self._event_pb2.Event(wall_time=time.time(), step=int(step),
                                          summary=self._summary_pb2.Summary(value=values))
            self._writer(name).add_event(event)

    def on_train_begin(self, logs: dict | None = None) -> None:
        self._writer("train")

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        self._epoch_start = time.time()
        self._epoch_batches = 0

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        self._batches_seen += 1
        self._epoch_batches += 1
        if self.update_freq != "epoch" and self._batches_seen % self.update_freq == 0:
            self._write("train", "batch_", logs or {}, self._batches_seen)

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        logs = logs or {}
        train = {k: v for k, v in logs.items() if not k.startswith("val_")}
        if self.write_steps_per_second:
            train["steps_per_second"] = self._epoch_batches / max(
                time.time() - self._epoch_start, 1e-9)
        self._write("train", "epoch_", train, epoch)
        val = {k[4:]: v for k, v in logs.items() if k.startswith("val_")}
        if val:
            self._write("validation", "epoch_", val, epoch)
        for writer in self._writers.values():
            writer.flush()

    def on_train_end(self, logs: dict | None = None) -> None:
        for writer in self._writers.values():
            writer.close()
        self._writers = {}
