"""The ``checkpoint`` index file of a directory: which checkpoint is the latest, which exist.

JSON, written atomically next to the data files, so ``tf.train.latest_checkpoint(dir)`` finds
the newest complete checkpoint even after a crash during a later save. Entries are bare file
names inside the directory: an index that names anything else (``../x``, ``/etc/y``) or holds
fields of the wrong type is refused with a ``DataLossError`` naming the file and the field.
``deleting`` lists files a ``CheckpointManager`` was about to remove when the index was written,
so a later manager finishes the job if the process died in between.
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
        with open(path, "rb") as f:
            state = json.loads(f.read().decode("utf-8"))
        _validate(state)
    except (ValueError, UnicodeDecodeError) as e:
        raise errors.DataLossError(
            None, "latest_checkpoint",
            f"Checkpoint index {path!r} is corrupt: {e}\n{errors.user_line()}") from e
    state.setdefault("all_model_checkpoint_paths", [state["model_checkpoint_path"]])
    state.setdefault("timestamps", [])
    state.setdefault("deleting", [])
    return state


def _validate(state: Any) -> None:
    """Raise ValueError naming the first malformed field of a parsed index."""
    if not isinstance(state, dict):
        raise ValueError(f"expected a JSON object, found {type(state).__name__}")
    if "model_checkpoint_path" not in state:
        raise ValueError("missing 'model_checkpoint_path'")
    _check_name("model_checkpoint_path", state["model_checkpoint_path"])
    for field in ("all_model_checkpoint_paths", "deleting"):
        names = state.get(field, [])
        if not isinstance(names, list):
            raise ValueError(f"{field!r} must be a list, found {type(names).__name__}")
        for i, name in enumerate(names):
            _check_name(f"{field}[{i}]", name)
    stamps = state.get("timestamps", [])
    if not isinstance(stamps, list) or not all(
            isinstance(t, (int, float)) and not isinstance(t, bool) for t in stamps):
        raise ValueError(f"'timestamps' must be a list of numbers, found {stamps!r:.80}")


def _check_name(field: str, name: Any) -> None:
    if not isinstance(name, str):
        raise ValueError(f"{field!r} must be a string, found {type(name).__name__}")
    if not name or name in (".", "..") or os.path.basename(name) != name or "/" in name or (
            os.altsep and os.altsep in name) or "\0" in name:
        raise ValueError(f"{field!r} is {name!r}, which is not a file name inside the "
                         f"checkpoint directory")


def _absolute(directory: str, name: str) -> str:
    return os.path.join(directory, name)


def _relative(directory: str, path: str) -> str:
    if os.path.dirname(os.path.abspath(path)) != os.path.abspath(directory):
        raise ValueError(f"checkpoint {path!r} is not inside {directory!r}")
    return os.path.basename(path)


def write_state(directory: str, latest: str, all_paths: list[str],
                timestamps: list[float], deleting: list[str] = ()) -> None:
    """Record `latest` and `all_paths` (oldest first) for `directory`, and files being removed."""
    state = {"model_checkpoint_path": _relative(directory, latest),
             "all_model_checkpoint_paths": [_relative(directory, p) for p in all_paths],
             "timestamps": list(timestamps)}
    if deleting:
        state["deleting"] = [_relative(directory, p) for p in deleting]
    checkpoint_io.atomic_write(_state_path(directory),
                               json.dumps(state, indent=1).encode("utf-8"))


def checkpoints_in(directory: str) -> tuple[list[str], list[float], list[str]]:
    """(paths, timestamps) listed in `directory`'s index whose files still exist, and the
    files an interrupted save meant to delete."""
    state = read_state(directory)
    if state is None:
        return [], [], []
    paths = [_absolute(directory, p) for p in state["all_model_checkpoint_paths"]]
    stamps = list(state["timestamps"]) + [0.0] * (len(paths) - len(state["timestamps"]))
    kept = [(p, t) for p, t in zip(paths, stamps) if checkpoint_io.exists(p)]
    deleting = [_absolute(directory, p) for p in state["deleting"]]
    return [p for p, _ in kept], [t for _, t in kept], deleting


def record_save(path: str) -> None:
    """Add a just-written checkpoint to its directory's index as the latest."""
    directory = os.path.dirname(os.path.abspath(path))
    paths, stamps, _ = checkpoints_in(directory)
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
