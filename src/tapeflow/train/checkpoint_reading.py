"""More of ``tf.train`` for reading and watching checkpoints and coordinating threads:
load_checkpoint (a CheckpointReader), get_checkpoint_state, checkpoints_iterator,
CheckpointOptions, and the TF1 thread Coordinator (TensorFlow's semantics)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import numpy as np

from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework import errors
from tapeflow.train import checkpoint_io
from tapeflow.train.checkpoint_state import checkpoints_in, latest_checkpoint, read_state
from tapeflow.train.checkpoint_utils import _file


class CheckpointReader:
    """The values of one checkpoint file by key (``tf.train.load_checkpoint``'s result)."""

    def __init__(self, path: str):
        self._path = path
        self._tensors = checkpoint_io.read_tensors(path)

    def get_tensor(self, tensor_str: str) -> np.ndarray:
        if tensor_str not in self._tensors:
            raise errors.NotFoundError(None, "get_tensor", f"Key {tensor_str} not found in "
                                                           f"checkpoint {self._path}")
        return self._tensors[tensor_str]

    def has_tensor(self, tensor_str: str) -> bool:
        return tensor_str in self._tensors

    def get_variable_to_shape_map(self) -> dict:
        return {k: list(v.shape) for k, v in self._tensors.items()}

    def get_variable_to_dtype_map(self) -> dict:
        return {k: _dtypes.from_numpy(np.asarray(v).dtype) for k, v in self._tensors.items()}


def load_checkpoint(ckpt_dir_or_file: str) -> CheckpointReader:
    """A reader for a checkpoint file, or for a directory's latest checkpoint."""
    path = _file(ckpt_dir_or_file)
    if not checkpoint_io.exists(path):
        raise ValueError(f"Couldn't find 'checkpoint' file or checkpoints in given directory "
                         f"{ckpt_dir_or_file}")
    return CheckpointReader(path)


class CheckpointState(NamedTuple):
    """What a directory's checkpoint index records (TF's CheckpointState proto fields)."""

    model_checkpoint_path: str
    all_model_checkpoint_paths: list
    all_model_checkpoint_timestamps: list
    last_preserved_timestamp: float


def get_checkpoint_state(checkpoint_dir: str, latest_filename: str | None = None
                         ) -> CheckpointState | None:
    """The checkpoint index of `checkpoint_dir` (None when it has none)."""
    checkpoint_dir = os.fspath(checkpoint_dir)
    state = read_state(checkpoint_dir, latest_filename)
    if state is None:
        return None
    paths, stamps, _ = checkpoints_in(checkpoint_dir)
    latest = os.path.join(checkpoint_dir, state["model_checkpoint_path"])
    return CheckpointState(latest, paths, stamps, min(stamps) if stamps else 0.0)


def checkpoints_iterator(checkpoint_dir: str, min_interval_secs: float = 0,
                         timeout: float | None = None,
                         timeout_fn: Callable[[], bool] | None = None) -> Iterator[str]:
    """Yield each new latest checkpoint of `checkpoint_dir` as it appears (an evaluation
    loop's driver); after `timeout` seconds without one, stop unless timeout_fn() says go on."""
    checkpoint_dir = os.fspath(checkpoint_dir)
    last = None
    while True:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            path = latest_checkpoint(checkpoint_dir)
            if path is not None and path != last:
                break
            if deadline is not None and time.monotonic() >= deadline:
                path = None
                break
            time.sleep(0.05 if timeout is not None and timeout < 1 else 1.0)
        if path is None:
            if timeout_fn is not None and not timeout_fn():
                continue
            return
        start = time.monotonic()
        last = path
        yield path
        wait = min_interval_secs - (time.monotonic() - start)
        if wait > 0:
            time.sleep(wait)


class CheckpointOptions:
    """Options for Checkpoint.save/read/restore (accepted; tapeflow writes on the host)."""

    def __init__(self, experimental_io_device: str | None = None,
                 experimental_enable_async_checkpoint: bool = False,
                 experimental_write_callbacks: Any = None, enable_async: bool = False,
                 experimental_sharding_callback: Any = None,
                 experimental_skip_slot_variables: bool = False):
        self.experimental_io_device = experimental_io_device
        self.enable_async = bool(enable_async or experimental_enable_async_checkpoint)
        self.experimental_enable_async_checkpoint = self.enable_async
        self.experimental_write_callbacks = experimental_write_callbacks
        self.experimental_sharding_callback = experimental_sharding_callback
        self.experimental_skip_slot_variables = experimental_skip_slot_variables


class Coordinator:
    """Threads that stop together (TF1's tf.train.Coordinator): any thread may request a
    stop, optionally with the exception that caused it; join() waits for the registered
    threads and re-raises that exception."""

    def __init__(self, clean_stop_exception_types: tuple | None = None):
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._exc_info: Any = None
        self._threads: list = []
        self._clean = tuple(clean_stop_exception_types or (errors.OutOfRangeError,))

    def should_stop(self) -> bool:
        return self._stop.is_set()

    def request_stop(self, ex: BaseException | None = None) -> None:
        with self._lock:
            if ex is not None and not isinstance(ex, self._clean) and self._exc_info is None:
                self._exc_info = ex
            self._stop.set()

    def clear_stop(self) -> None:
        with self._lock:
            self._exc_info = None
            self._stop.clear()

    def stop_on_exception(self) -> Any:
        coord = self

        class _Guard:
            def __enter__(self) -> None:
                return None

            def __exit__(self, kind: Any, value: Any, tb: Any) -> bool:
                if value is not None:
                    coord.request_stop(value)
                return True

        return _Guard()

    def wait_for_stop(self, timeout: float | None = None) -> bool:
        return self._stop.wait(timeout)

    def register_thread(self, thread: threading.Thread) -> None:
        with self._lock:
            self._threads.append(thread)

    def join(self, threads: list | None = None, stop_grace_period_secs: float = 120,
             ignore_live_threads: bool = False) -> None:
        threads = list(threads or []) + self._threads
        for t in threads:
            t.join(stop_grace_period_secs if self._stop.is_set() else None)
        alive = [t.name for t in threads if t.is_alive()]
        if self._exc_info is not None:
            raise self._exc_info
        if alive and not ignore_live_threads:
            raise RuntimeError(f"Coordinator stopped with threads still running: {alive}")

    @property
    def joined(self) -> bool:
        return all(not t.is_alive() for t in self._threads)

    def raise_requested_exception(self) -> None:
        if self._exc_info is not None:
            raise self._exc_info
