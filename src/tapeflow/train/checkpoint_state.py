"""The ``checkpoint`` index file of a directory: which checkpoint is the latest, which exist.

JSON, written atomically next to the data files, so ``tf.train.latest_checkpoint(dir)`` finds
the newest complete checkpoint even after a crash during a later save.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from tapeflow.framework import errors
from tapeflow.train import checkpoint_io

STATE_FILE = "checkpoint"


def _state_path(directory: str, latest_filename: str | None = None) -> str:
    return os.path.join(directory, latest_filename or STATE_FILE)


def read_state(directory: str, latest_filename: str | None = None) -> dict[str, Any] | None:
    """{'model_checkpoint_path', 'all_model_checkpoint_paths', 'timestamps'} or None."""
    path = _state_path(directory, latest_filename)
    if not os.path.isfile(path):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            state = json.load(f)
        if not isinstance(state, dict) or "model_checkpoint_path" not in state:
            raise ValueError("missing 'model_checkpoint_path'")
    except ValueError as e:
        raise errors.DataLossError(
            None, "latest_checkpoint",
            f"Checkpoint index {path!r} is corrupt ({e})\n{errors.user_line()}") from e
    state.setdefault("all_model_checkpoint_paths", [state["model_checkpoint_path"]])
    state.setdefault("timestamps", [])
    return state


def _absolute(directory: str, path: str) -> str:
    return path if os.path.isabs(path) else os.path.join(directory, path)


def _relative(directory: str, path: str) -> str:
    if os.path.dirname(os.path.abspath(path)) == os.path.abspath(directory):
        return os.path.basename(path)
    return os.path.abspath(path)


def write_state(directory: str, latest: str, all_paths: list[str],
                timestamps: list[float]) -> None:
    """Record `latest` and `all_paths` (oldest first) for `directory`."""
    state = {"model_checkpoint_path": _relative(directory, latest),
             "all_model_checkpoint_paths": [_relative(directory, p) for p in all_paths],
             "timestamps": list(timestamps)}
    checkpoint_io.atomic_write(_state_path(directory),
                               json.dumps(state, indent=1).encode("utf-8"))


def checkpoints_in(directory: str) -> tuple[list[str], list[float]]:
    """(paths, timestamps) listed in `directory`'s index whose files still exist."""
    state = read_state(directory)
    if state is None:
        return [], []
    paths = [_absolute(directory, p) for p in state["all_model_checkpoint_paths"]]
    stamps = list(state["timestamps"]) + [0.0] * (len(paths) - len(state["timestamps"]))
    kept = [(p, t) for p, t in zip(paths, stamps) if checkpoint_io.exists(p)]
    return [p for p, _ in kept], [t for _, t in kept]


def record_save(path: str) -> None:
    """Add a just-written checkpoint to its directory's index as the latest."""
    directory = os.path.dirname(os.path.abspath(path))
    paths, stamps = checkpoints_in(directory)
    if os.path.abspath(path) in [os.path.abspath(p) for p in paths]:
        i = [os.path.abspath(p) for p in paths].index(os.path.abspath(path))
        del paths[i], stamps[i]
    write_state(directory, path, paths + [path], stamps + [time.time()])


def latest_checkpoint(checkpoint_dir: str, latest_filename: str | None = None) -> str | None:
    """The newest checkpoint recorded in `checkpoint_dir` (``tf.train.latest_checkpoint``)."""
    checkpoint_dir = os.fspath(checkpoint_dir)
    state = read_state(checkpoint_dir, latest_filename)
    if state is None:
        return None
    path = _absolute(checkpoint_dir, state["model_checkpoint_path"])
    return path if checkpoint_io.exists(path) else None
