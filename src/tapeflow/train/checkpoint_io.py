"""Checkpoint files: safetensors (loading never runs code), written atomically, checksummed.

A save writes a temporary file in the target directory, flushes and fsyncs it, then
``os.replace``s it over the final name: a crash at any point leaves either the old file or the
new one, never a torn file. A CRC32 of every tensor, kept in the safetensors metadata, catches
corruption that keeps the file parseable.
"""

from __future__ import annotations

import json
import os
import tempfile
import zlib

import numpy as np
from safetensors.numpy import load as _st_load
from safetensors.numpy import save as _st_save

from tapeflow.framework import errors

SUFFIX = ".safetensors"
FORMAT = "tapeflow.checkpoint"


def data_path(prefix: str) -> str:
    """The file a checkpoint prefix (``ckpt-3``) is stored in (``ckpt-3.safetensors``)."""
    prefix = os.fspath(prefix)
    return prefix if prefix.endswith(SUFFIX) else prefix + SUFFIX


def exists(prefix: str) -> bool:
    return os.path.isfile(data_path(prefix)) or os.path.isfile(os.fspath(prefix))


def _checksum(tensors: dict[str, np.ndarray]) -> str:
    crc = 0
    for key in sorted(tensors):
        crc = zlib.crc32(key.encode(), crc)
        crc = zlib.crc32(np.asarray(tensors[key], order="C").tobytes(), crc)
    return f"{crc:08x}"


def atomic_write(path: str, data: bytes) -> None:
    """Write `data` to `path` so that readers see the old file or the new one, never a part."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    _fsync_directory(directory)


def _fsync_directory(directory: str) -> None:
    """Make the rename itself durable (POSIX); a no-op where directories cannot be opened."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some filesystems cannot fsync a directory; the rename itself is still atomic
    finally:
        os.close(fd)


def write_tensors(prefix: str, tensors: dict[str, np.ndarray]) -> str:
    """Save `tensors` under `prefix` atomically; returns the file written."""
    arrays = {k: np.asarray(v, order="C") for k, v in tensors.items()}
    metadata = {"format": FORMAT, "version": "1", "crc32": _checksum(arrays)}
    path = data_path(prefix)
    atomic_write(path, _st_save(arrays, metadata=metadata))
    return path


def _resolve(prefix: str) -> str:
    path = data_path(prefix)
    if os.path.isfile(path):
        return path
    if os.path.isfile(os.fspath(prefix)):
        return os.fspath(prefix)
    hint = ""
    if os.path.isdir(os.fspath(prefix)):
        hint = (" (it is a directory: pass a checkpoint path such as "
                "tf.train.latest_checkpoint(directory))")
    raise errors.NotFoundError(
        None, "restore",
        f"Checkpoint not found: {prefix!r}{hint}; no file {path!r}\n{errors.user_line()}")


def read_tensors(prefix: str) -> dict[str, np.ndarray]:
    """All tensors of a checkpoint, verified; NotFoundError / DataLossError otherwise."""
    path = _resolve(prefix)
    with open(path, "rb") as f:
        data = f.read()
    try:
        header_len = int.from_bytes(data[:8], "little")
        if len(data) < 8 or header_len > len(data) - 8:
            raise ValueError(f"header of {header_len} bytes in a {len(data)}-byte file")
        header = json.loads(data[8:8 + header_len])
        tensors = _st_load(data)
    except Exception as e:
        raise errors.DataLossError(
            None, "restore",
            f"Checkpoint file {path!r} is corrupt or truncated ({e}); nothing was restored"
            f"\n{errors.user_line()}") from e
    metadata = header.get("__metadata__") or {}
    expected = metadata.get("crc32")
    if expected is not None and expected != _checksum(tensors):
        raise errors.DataLossError(
            None, "restore",
            f"Checkpoint file {path!r} is corrupt: checksum mismatch (stored {expected}, "
            f"computed {_checksum(tensors)}); nothing was restored\n{errors.user_line()}")
    return tensors
