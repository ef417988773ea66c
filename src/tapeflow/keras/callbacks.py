"""``tf.keras.callbacks``: hooks into ``fit``/``evaluate``/``predict``, and the progress bar.

The progress bar is drawn by tqdm with Keras's layout::

    Epoch 1/5
    32/32 [==============================] - 1s 20ms/step - loss: 0.1234 - accuracy: 0.9500
"""

from __future__ import annotations

import csv
import os
import sys
import time
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
from tqdm import tqdm

from tapeflow.keras import backend
from tapeflow.keras.io_utils import is_interactive_logging_enabled, print_msg


class Callback:
    """Base class: override the ``on_*`` hooks you need; ``self.model`` is the model."""

    def __init__(self) -> None:
        self.model: Any = None
        self.params: dict = {}

    def set_model(self, model: Any) -> None:
        self.model = model

    def set_params(self, params: dict) -> None:
        self.params = params

    def on_train_begin(self, logs: dict | None = None) -> None: ...
    def on_train_end(self, logs: dict | None = None) -> None: ...
    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None: ...
    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None: ...
    def on_train_batch_begin(self, batch: int, logs: dict | None = None) -> None: ...
    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None: ...
    def on_test_begin(self, logs: dict | None = None) -> None: ...
    def on_test_end(self, logs: dict | None = None) -> None: ...
    def on_test_batch_begin(self, batch: int, logs: dict | None = None) -> None: ...
    def on_test_batch_end(self, batch: int, logs: dict | None = None) -> None: ...
    def on_predict_begin(self, logs: dict | None = None) -> None: ...
    def on_predict_end(self, logs: dict | None = None) -> None: ...
    def on_predict_batch_begin(self, batch: int, logs: dict | None = None) -> None: ...
    def on_predict_batch_end(self, batch: int, logs: dict | None = None) -> None: ...

    def on_batch_begin(self, batch: int, logs: dict | None = None) -> None:
        self.on_train_batch_begin(batch, logs)

    def on_batch_end(self, batch: int, logs: dict | None = None) -> None:
        self.on_train_batch_end(batch, logs)


class CallbackList:
    """Dispatches each hook to every callback, in order."""

    def __init__(self, callbacks: Iterable[Callback] | None = None, model: Any = None,
                 **params: Any):
        self.callbacks = list(callbacks or [])
        if model is not None:
            for cb in self.callbacks:
                cb.set_model(model)
        for cb in self.callbacks:
            cb.set_params(params)

    def append(self, callback: Callback) -> None:
        self.callbacks.append(callback)

    def __iter__(self):
        return iter(self.callbacks)

    def __getattr__(self, hook: str) -> Callable:
        if not hook.startswith("on_"):
            raise AttributeError(hook)

        def call_all(*args: Any) -> None:
            for cb in self.callbacks:
                getattr(cb, hook)(*args)

        return call_all


class History(Callback):
    """Records every epoch's logs: ``history.history['loss']`` is the loss per epoch."""

    def __init__(self) -> None:
        super().__init__()
        self.history: dict[str, list] = {}
        self.epoch: list[int] = []

    def on_train_begin(self, logs: dict | None = None) -> None:
        self.epoch = []

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        self.epoch.append(epoch)
        for k, v in (logs or {}).items():
            self.history.setdefault(k, []).append(v)
        if self.model is not None:
            self.model.history = self


# --- progress bar -------------------------------------------------------------------
def format_value(value: float) -> str:
    """Keras shows 4 decimals, or scientific notation for tiny values."""
    return f"{value:.4f}" if abs(value) > 1e-3 else f"{value:.4e}"


def format_time_per_step(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.0f}s/step"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.0f}ms/step"
    return f"{seconds * 1e6:.0f}us/step"


def format_eta(seconds: float) -> str:
    if seconds > 3600:
        return f"{int(seconds) // 3600}:{(int(seconds) % 3600) // 60:02d}:{int(seconds) % 60:02d}"
    if seconds > 60:
        return f"{int(seconds) // 60}:{int(seconds) % 60:02d}"
    return f"{int(seconds)}s"


def _logs_text(logs: dict) -> str:
    return "".join(f" - {k}: {format_value(float(v))}" for k, v in logs.items()
                   if np.ndim(v) == 0)


class Progbar:
    """One progress line (a tqdm bar in Keras's layout), for one epoch or evaluation."""

    def __init__(self, target: int | None, verbose: int = 1, file: Any = None):
        self.target = target
        self.verbose = verbose
        # no file given and interactive logging disabled: finished lines go to the logger
        self._to_logger = file is None and not is_interactive_logging_enabled()
        self.file = file or sys.stdout
        self._start = time.time()
        self._bar = None
        self._width = len(str(target)) if target else 7
        interactive = hasattr(self.file, "isatty") and self.file.isatty() and \
            not self._to_logger
        if verbose == 1 and interactive:  # a live bar; a log file or pipe gets the final line
            if target:
                fmt = f"{{n:>{self._width}d}}/{{total}} [{{bar:30}}]{{desc}}"
            else:
                fmt = f"{{n:>{self._width}d}}/Unknown{{desc}}"
            self._bar = tqdm(total=target, file=self.file, bar_format=fmt, ascii=".>=",
                             mininterval=0.1, delay=1e-9, leave=False, dynamic_ncols=True)

    def _static_bar(self, current: int) -> str:
        """Keras's bar text for a finished line: all ``=`` or ``==>...`` when stopped early."""
        if not self.target:
            return f"{current:>{self._width}d}/Unknown"
        done = min(int(30 * current / self.target), 30)
        bar = "=" * done if current >= self.target else \
            ("=" * (done - 1) + ">" if done else "") + "." * (30 - done)
        return f"{current:>{self._width}d}/{self.target} [{bar}]"

    def update(self, current: int, logs: dict | None = None, finalize: bool = False) -> None:
        """Move to step `current` showing `logs`; `finalize` ends the line with timings."""
        elapsed = time.time() - self._start
        per_step = elapsed / max(current, 1)
        text = _logs_text(logs or {})
        if self.verbose == 2:
            if finalize:
                steps = f"{current}/{self.target}" if self.target else f"{current}"
                self._line(f"{steps} - {elapsed:.0f}s{text} - {elapsed * 1e3:.0f}ms/epoch - "
                           f"{format_time_per_step(per_step)}")
            return
        if self.verbose != 1:
            return
        if finalize:
            # the finished line is printed whole (a live bar is cut at the terminal width)
            if self._bar is not None:
                self._bar.close()
                self._bar = None
            self._line(f"{self._static_bar(current)} - {elapsed:.0f}s "
                       f"{format_time_per_step(per_step)}{text}")
            return
        if self._bar is None:
            return
        remaining = per_step * (self.target - current) if self.target else 0.0
        timing = f" - ETA: {format_eta(remaining)}" if self.target else \
            f" - {elapsed:.0f}s {format_time_per_step(per_step)}"
        self._bar.set_description_str(timing + text, refresh=False)
        self._bar.update(current - self._bar.n)


    def _line(self, text: str) -> None:
        if self._to_logger:
            print_msg(text)
        else:
            print(text, file=self.file, flush=True)


class ProgbarLogger(Callback):
    """Prints ``Epoch i/N`` and a progress bar per epoch (verbose 1) or a line (verbose 2)."""

    def __init__(self, count_mode: str = "steps", verbose: int = 1) -> None:
        super().__init__()
        self.verbose = verbose
        self._bar: Progbar | None = None
        self._seen = 0
        self._mode = "train"

    def _new_bar(self) -> None:
        self._seen = 0
        self._bar = Progbar(self.params.get("steps"), verbose=self.verbose)

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        if self.verbose:
            print_msg(f"Epoch {epoch + 1}/{self.params.get('epochs', 1)}")
        self._mode = "train"
        self._new_bar()

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        self._seen = batch + 1
        if self._bar is not None:
            self._bar.update(self._seen, logs)

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        if self._bar is not None:
            self._bar.update(self._seen, logs, finalize=True)
            self._bar = None

    def on_test_begin(self, logs: dict | None = None) -> None:
        if self.params.get("is_evaluate"):
            self._mode = "test"
            self._new_bar()

    def on_test_batch_end(self, batch: int, logs: dict | None = None) -> None:
        if self._mode == "test" and self._bar is not None:
            self._seen = batch + 1
            self._bar.update(self._seen, logs)

    def on_test_end(self, logs: dict | None = None) -> None:
        if self._mode == "test" and self._bar is not None:
            self._bar.update(self._seen, logs, finalize=True)
            self._bar = None

    def on_predict_begin(self, logs: dict | None = None) -> None:
        self._mode = "predict"
        self._new_bar()

    def on_predict_batch_end(self, batch: int, logs: dict | None = None) -> None:
        self._seen = batch + 1
        if self._bar is not None:
            self._bar.update(self._seen)

    def on_predict_end(self, logs: dict | None = None) -> None:
        if self._bar is not None:
            self._bar.update(self._seen, finalize=True)
            self._bar = None


# --- monitoring helpers -------------------------------------------------------------
def _monitor_op(mode: str, monitor: str) -> Callable[[float, float], bool]:
    if mode not in ("auto", "min", "max"):
        raise ValueError(f"mode must be 'auto', 'min' or 'max', got {mode!r}")
    if mode == "max" or (mode == "auto" and ("acc" in monitor or monitor.startswith("fmeasure")
                                              or "auc" in monitor)):
        return np.greater
    return np.less


def _set_learning_rate(optimizer: Any, value: float) -> None:
    lr = optimizer.learning_rate
    if hasattr(lr, "assign"):
        lr.assign(value)
    else:
        optimizer.learning_rate = value


def _get_learning_rate(optimizer: Any) -> float:
    lr = optimizer.learning_rate
    if callable(lr) and not hasattr(lr, "assign"):
        raise TypeError("The optimizer's learning rate is a schedule; callbacks that change the "
                        "learning rate need a float learning rate.")
    return float(backend.get_value(lr))


class EarlyStopping(Callback):
    """Stop training when `monitor` has stopped improving for `patience` epochs."""

    def __init__(self, monitor: str = "val_loss", min_delta: float = 0.0, patience: int = 0,
                 verbose: int = 0, mode: str = "auto", baseline: float | None = None,
                 restore_best_weights: bool = False, start_from_epoch: int = 0):
        super().__init__()
        self.monitor = monitor
        self.patience = patience
        self.verbose = verbose
        self.baseline = baseline
        self.restore_best_weights = restore_best_weights
        self.start_from_epoch = start_from_epoch
        self.monitor_op = _monitor_op(mode, monitor)
        self.min_delta = abs(min_delta) if self.monitor_op is np.greater else -abs(min_delta)
        self.stopped_epoch = 0
        self.best_weights: list | None = None

    def on_train_begin(self, logs: dict | None = None) -> None:
        self.wait = 0
        self.stopped_epoch = 0
        self.best = np.inf if self.monitor_op is np.less else -np.inf
        self.best_weights = None
        self.best_epoch = 0

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        current = (logs or {}).get(self.monitor)
        if current is None:
            print(f"Early stopping conditioned on metric `{self.monitor}` which is not "
                  f"available. Available metrics are: {','.join(logs or {})}", file=sys.stderr)
            return
        if epoch < self.start_from_epoch:
            return
        if self.restore_best_weights and self.best_weights is None:
            self.best_weights = self.model.get_weights()
        self.wait += 1
        if self.monitor_op(current - self.min_delta, self.best):
            self.best = current
            self.best_epoch = epoch
            if self.restore_best_weights:
                self.best_weights = self.model.get_weights()
            if self.baseline is None or self.monitor_op(current - self.min_delta, self.baseline):
                self.wait = 0
            return
        if self.wait >= self.patience and epoch > 0:
            self.stopped_epoch = epoch
            self.model.stop_training = True
            if self.restore_best_weights and self.best_weights is not None:
                if self.verbose > 0:
                    print_msg("Restoring model weights from the end of the best epoch: "
                              f"{self.best_epoch + 1}.")
                self.model.set_weights(self.best_weights)

    def on_train_end(self, logs: dict | None = None) -> None:
        if self.stopped_epoch > 0 and self.verbose > 0:
            print_msg(f"Epoch {self.stopped_epoch + 1}: early stopping")


class ModelCheckpoint(Callback):
    """Save the model's weights every epoch (or only when `monitor` improves)."""

    def __init__(self, filepath: str, monitor: str = "val_loss", verbose: int = 0,
                 save_best_only: bool = False, save_weights_only: bool = False,
                 mode: str = "auto", save_freq: Any = "epoch", initial_value_threshold: Any = None,
                 **kwargs: Any):
        super().__init__()
        self.filepath = os.fspath(filepath)
        self.monitor = monitor
        self.verbose = verbose
        self.save_best_only = save_best_only
        self.save_weights_only = save_weights_only
        self.save_freq = save_freq
        self.monitor_op = _monitor_op(mode, monitor)
        default = np.inf if self.monitor_op is np.less else -np.inf
        self.best = default if initial_value_threshold is None else initial_value_threshold
        self._batches_seen = 0

    def _path(self, epoch: int, logs: dict) -> str:
        return self.filepath.format(epoch=epoch + 1, **logs)

    def _save(self, epoch: int, logs: dict) -> None:
        path = self._path(epoch, logs)
        if self.save_best_only:
            current = logs.get(self.monitor)
            if current is None:
                print(f"Can save best model only with {self.monitor} available, skipping.",
                      file=sys.stderr)
                return
            if not self.monitor_op(current, self.best):
                if self.verbose > 0:
                    print_msg(f"\nEpoch {epoch + 1}: {self.monitor} did not improve from "
                              f"{self.best:.5f}")
                return
            if self.verbose > 0:
                print_msg(f"\nEpoch {epoch + 1}: {self.monitor} improved from {self.best:.5f} to "
                          f"{current:.5f}, saving model to {path}")
            self.best = current
        elif self.verbose > 0:
            print_msg(f"\nEpoch {epoch + 1}: saving model to {path}")
        directory = os.path.dirname(path)
        if directory:
            os.makedirs(directory, exist_ok=True)
        self.model.save_weights(path)

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        if isinstance(self.save_freq, int):
            self._batches_seen += 1
            if self._batches_seen % self.save_freq == 0:
                self._save(self.params.get("epoch", 0), dict(logs or {}))

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        if self.save_freq == "epoch":
            self._save(epoch, dict(logs or {}))


class LearningRateScheduler(Callback):
    """Set the learning rate at each epoch start to ``schedule(epoch, lr)``."""

    def __init__(self, schedule: Callable, verbose: int = 0):
        super().__init__()
        self.schedule = schedule
        self.verbose = verbose

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        lr = _get_learning_rate(self.model.optimizer)
        try:
            new_lr = self.schedule(epoch, lr)
        except TypeError:
            new_lr = self.schedule(epoch)
        new_lr = float(backend.get_value(new_lr))
        _set_learning_rate(self.model.optimizer, new_lr)
        if self.verbose > 0:
            print_msg(f"\nEpoch {epoch + 1}: LearningRateScheduler setting learning rate to "
                      f"{new_lr}.")

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        if logs is not None:
            logs["lr"] = _get_learning_rate(self.model.optimizer)


class ReduceLROnPlateau(Callback):
    """Multiply the learning rate by `factor` when `monitor` stalls for `patience` epochs."""

    def __init__(self, monitor: str = "val_loss", factor: float = 0.1, patience: int = 10,
                 verbose: int = 0, mode: str = "auto", min_delta: float = 1e-4,
                 cooldown: int = 0, min_lr: float = 0.0, **kwargs: Any):
        super().__init__()
        if factor >= 1.0:
            raise ValueError("ReduceLROnPlateau does not support a factor >= 1.0. Got "
                             f"{factor}")
        self.monitor = monitor
        self.factor = factor
        self.patience = patience
        self.verbose = verbose
        self.min_delta = min_delta
        self.cooldown = cooldown
        self.min_lr = min_lr
        self._mode = mode
        self._reset()

    def _reset(self) -> None:
        op = _monitor_op(self._mode, self.monitor)
        if op is np.less:
            self.monitor_op = lambda a, b: np.less(a, b - self.min_delta)
            self.best = np.inf
        else:
            self.monitor_op = lambda a, b: np.greater(a, b + self.min_delta)
            self.best = -np.inf
        self.cooldown_counter = 0
        self.wait = 0

    def on_train_begin(self, logs: dict | None = None) -> None:
        self._reset()

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        logs = logs if logs is not None else {}
        logs["lr"] = _get_learning_rate(self.model.optimizer)
        current = logs.get(self.monitor)
        if current is None:
            print(f"Learning rate reduction is conditioned on metric `{self.monitor}` which is "
                  f"not available. Available metrics are: {','.join(logs)}", file=sys.stderr)
            return
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.wait = 0
        if self.monitor_op(current, self.best):
            self.best = current
            self.wait = 0
        elif self.cooldown_counter <= 0:
            self.wait += 1
            if self.wait >= self.patience:
                old_lr = _get_learning_rate(self.model.optimizer)
                if old_lr > np.float32(self.min_lr):
                    new_lr = max(old_lr * self.factor, self.min_lr)
                    _set_learning_rate(self.model.optimizer, new_lr)
                    if self.verbose > 0:
                        print_msg(f"\nEpoch {epoch + 1}: ReduceLROnPlateau reducing learning rate "
                                  f"to {new_lr}.")
                    self.cooldown_counter = self.cooldown
                    self.wait = 0


class CSVLogger(Callback):
    """Append one CSV row of logs per epoch (``epoch,loss,...``)."""

    def __init__(self, filename: str, separator: str = ",", append: bool = False):
        super().__init__()
        self.filename = os.fspath(filename)
        self.sep = separator
        self.append = append
        self._file: Any = None
        self._writer: Any = None
        self._keys: list[str] | None = None

    def on_train_begin(self, logs: dict | None = None) -> None:
        has_header = self.append and os.path.exists(self.filename) and \
            os.path.getsize(self.filename) > 0
        self._file = open(self.filename, "a" if self.append else "w", newline="")  # noqa: SIM115
        self._keys = None
        self._has_header = has_header

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        logs = logs or {}
        if self._keys is None:
            self._keys = sorted(logs)
            self._writer = csv.DictWriter(self._file, fieldnames=["epoch"] + self._keys,
                                          delimiter=self.sep)
            if not self._has_header:
                self._writer.writeheader()
        row = {"epoch": epoch}
        row.update({k: logs.get(k, "NA") for k in self._keys})
        self._writer.writerow(row)
        self._file.flush()

    def on_train_end(self, logs: dict | None = None) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class LambdaCallback(Callback):
    """A callback from plain functions: ``LambdaCallback(on_epoch_end=lambda e, logs: ...)``."""

    _HOOKS = ("on_epoch_begin", "on_epoch_end", "on_batch_begin", "on_batch_end",
              "on_train_begin", "on_train_end", "on_train_batch_begin", "on_train_batch_end",
              "on_test_begin", "on_test_end", "on_predict_begin", "on_predict_end")

    def __init__(self, **hooks: Callable):
        super().__init__()
        unknown = set(hooks) - set(self._HOOKS)
        if unknown:
            raise TypeError(f"LambdaCallback: unknown hook(s) {sorted(unknown)}")
        for name, fn in hooks.items():
            if fn is not None:
                setattr(self, name, fn)
        if "on_batch_begin" in hooks and "on_train_batch_begin" not in hooks:
            self.on_train_batch_begin = hooks["on_batch_begin"]
        if "on_batch_end" in hooks and "on_train_batch_end" not in hooks:
            self.on_train_batch_end = hooks["on_batch_end"]


class BaseLogger(Callback):
    """Keras 1's epoch averager: sums each batch's logs weighted by ``logs["size"]`` (times
    ``logs["num_steps"]``, default 1) and at epoch end writes ``total / samples seen`` into the
    epoch logs for every name in ``params["metrics"]``; names in `stateful_metrics` keep their
    last value instead. TF2's ``fit`` already averages its logs and sets no
    ``params["metrics"]`` (tf-keras's BaseLogger raises KeyError there): this one then leaves
    the epoch logs as they are."""

    def __init__(self, stateful_metrics: Any = None):
        super().__init__()
        self.stateful_metrics = set(stateful_metrics or [])
        self.seen = 0
        self.totals: dict = {}

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        self.seen = 0
        self.totals = {}

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        logs = logs or {}
        batch_size = logs.get("size", 0)
        self.seen += batch_size * logs.get("num_steps", 1)
        for key, value in logs.items():
            if key in self.stateful_metrics:
                self.totals[key] = value
            else:
                self.totals[key] = self.totals.get(key, 0) + value * batch_size

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        if logs is None:
            return
        for key in self.params.get("metrics", ()):
            if key in self.totals:
                logs[key] = self.totals[key] if key in self.stateful_metrics \
                    else self.totals[key] / self.seen


class TerminateOnNaN(Callback):
    """Stop training as soon as the loss becomes NaN or infinite."""

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        loss = (logs or {}).get("loss")
        if loss is not None and not np.isfinite(loss):
            print_msg(f"Batch {batch}: Invalid loss, terminating training")
            self.model.stop_training = True


def __getattr__(name: str) -> Any:
    if name == "TensorBoard":  # its own module: needs the optional `tensorboard` package
        from tapeflow.keras.tensorboard import TensorBoard

        return TensorBoard
    if name == "BackupAndRestore":
        from tapeflow.keras.backup_and_restore import BackupAndRestore

        return BackupAndRestore
    raise AttributeError(f"module 'tapeflow.keras.callbacks' has no attribute {name!r}")
