"""Reading checkpoints without a model: ``tf.train.list_variables`` / ``load_variable``."""

from __future__ import annotations

import os

import numpy as np

from tapeflow.framework import errors
from tapeflow.train import checkpoint_io
from tapeflow.train.checkpoint_state import latest_checkpoint


def _file(ckpt_dir_or_file: str) -> str:
    path = os.fspath(ckpt_dir_or_file)
    return (latest_checkpoint(path) or path) if os.path.isdir(path) else path


def list_variables(ckpt_dir_or_file: str) -> list[tuple[str, list[int]]]:
    """(key, shape) of every value in a checkpoint (a path, or a directory: its latest)."""
    tensors = checkpoint_io.read_tensors(_file(ckpt_dir_or_file))
    return sorted((k, list(v.shape)) for k, v in tensors.items())


def load_variable(ckpt_dir_or_file: str, name: str) -> np.ndarray:
    """The value stored under `name` in a checkpoint."""
    path = _file(ckpt_dir_or_file)
    tensors = checkpoint_io.read_tensors(path)
    if name not in tensors:
        raise errors.NotFoundError(None, "load_variable",
                                   f"Key {name!r} not found in checkpoint {path!r}; it has "
                                   f"{sorted(tensors)[:20]}")
    return tensors[name]
