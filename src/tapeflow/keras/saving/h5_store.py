"""HDF5 plumbing shared by the Keras file formats: h5py imported on use, atomic writes,
datasets read in their numeric order, values assigned with shape checks."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from typing import Any

import numpy as np


def h5py() -> Any:
    try:
        import h5py as module
    except ImportError as e:
        raise ImportError("Keras model and weight files (.keras, .h5) are HDF5, read and "
                          "written with h5py, which is not installed: pip install h5py") from e
    return module


@contextlib.contextmanager
def open_h5(target: Any, mode: str, source: str | None = None) -> Iterator[Any]:
    """An h5py File on a path or a file object; a clear error when it is not HDF5."""
    module = h5py()
    try:
        f = module.File(target, mode)
    except OSError as e:
        raise ValueError(f"{source or target}: not a readable HDF5 file ({e})") from None
    with f:
        yield f


@contextlib.contextmanager
def atomic_write(filepath: str) -> Iterator[Any]:
    """A binary file object whose content replaces `filepath` only once fully written."""
    filepath = os.fspath(filepath)
    directory = os.path.dirname(os.path.abspath(filepath))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=os.path.basename(filepath))
    try:
        with os.fdopen(fd, "wb") as out:
            yield out
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, filepath)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def datasets(f: Any, key: str, source: str) -> list[np.ndarray]:
    """The arrays ``0``, ``1``, ... of group `key`, in numeric order."""
    group = f[key]
    names = sorted(group.keys(), key=lambda n: int(n) if n.isdigit() else -1)
    if any(not n.isdigit() for n in names):
        raise ValueError(f"{source}: group '{key}' holds non-numbered entries {names[:5]}")
    return [np.asarray(group[n]) for n in names]


def assign(variables: list, values: list, where: str) -> None:
    """Check every shape first, then assign (nothing changes when one is wrong)."""
    for var, value in zip(variables, values):
        want = tuple(var.shape.as_list())
        if tuple(np.shape(value)) != want:
            raise ValueError(f"{where}: variable {var.name} has shape {want}, but the file "
                             f"holds shape {tuple(np.shape(value))}")
    for var, value in zip(variables, values):
        var.assign(np.asarray(value, dtype=var.dtype.as_numpy_dtype))
