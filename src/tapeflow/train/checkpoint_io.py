"""Checkpoint files: safetensors (loading never runs code), written atomically, checksummed.

A save writes a temporary file in the target directory, flushes and fsyncs it, then
``os.replace``s it over the final name: a crash at any point leaves either the old file or the
new one, never a torn file. Temporaries are named ``.{final name}.{random}.tmp`` so that the
next save can recognise and remove the ones a killed process left (``remove_temporaries``). Files
are created with mode 0666 less the umask, as ``open`` would. A CRC32 over every tensor's key,
dtype, shape and bytes, kept in the safetensors metadata, catches corruption that keeps the file
parseable; a file without it is refused.
"""

from __future__ import annotations

import glob
import json
import os
import secrets
import zlib

import numpy as np
from safetensors.numpy import load as _st_load
from safetensors.numpy import save as _st_save

from tapeflow.framework import errors

SUFFIX = ".safetensors"
FORMAT = "tapeflow.checkpoint"
VERSION = "2"  # version 1 (still read) left dtype and shape out of the checksum
_TMP = ".tmp"


def data_path(prefix: str) -> str:
    """The file a checkpoint prefix (``ckpt-3``) is stored in (``ckpt-3.safetensors``)."""
    prefix = os.fspath(prefix)
    return prefix if prefix.endswith(SUFFIX) else prefix + SUFFIX


def exists(prefix: str) -> bool:
    return os.path.isfile(data_path(prefix)) or os.path.isfile(os.fspath(prefix))


def _checksum(tensors: dict[str, np.ndarray], version: str = VERSION) -> str:
    crc = 0
    for key in sorted(tensors):
        value = np.asarray(tensors[key], order="C")
        crc = zlib.crc32(key.encode(), crc)
        if version != "1":
            crc = zlib.crc32(f"|{value.dtype.str}|{value.shape}|".encode(), crc)
        crc = zlib.crc32(value.tobytes(), crc)
    return f"{crc:08x}"


def atomic_write(path: str, data: bytes) -> None:
    """Write `data` to `path` so that readers see the old file or the new one, never a part."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    tmp = os.path.join(directory, f".{os.path.basename(path)}.{secrets.token_hex(6)}{_TMP}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # the umask applies
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


def remove_temporaries(directory: str, name_prefix: str) -> list[str]:
    """Delete what killed saves left in `directory`: temporaries of files named `name_prefix`*."""
    pattern = os.path.join(glob.escape(directory), f".{glob.escape(name_prefix)}*{_TMP}")
    removed = []
    for tmp in glob.glob(pattern):
        try:
            os.unlink(tmp)
            removed.append(tmp)
        except FileNotFoundError:
            pass
    return removed


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
    metadata = {"format": FORMAT, "version": VERSION, "crc32": _checksum(arrays)}
    path = data_path(prefix)
    atomic_write(path, _canonical(_st_save(arrays, metadata=metadata)))
    return path


def _canonical(data: bytes) -> bytes:
    """The same file with its JSON header's keys in sorted order.

    safetensors writes the metadata entries in its hash map's order, which changes from process
    to process, so two identical saves differed in their bytes. Sorting keeps the header's length
    (only the order moves; the library's space padding is kept), so offsets stay valid.
    """
    size = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + size])
    text = json.dumps(header, separators=(",", ":"), sort_keys=True).encode()
    if len(text) > size:   # never expected: the library writes the same compact JSON
        return data
    return data[:8] + text.ljust(size, b" ") + data[8 + size:]


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
    problem = _metadata_problem(header.get("__metadata__"), tensors)
    if problem:
        raise errors.DataLossError(
            None, "restore",
            f"Checkpoint file {path!r} is corrupt: {problem}; nothing was restored"
            f"\n{errors.user_line()}")
    return tensors


def _metadata_problem(metadata: object, tensors: dict[str, np.ndarray]) -> str | None:
    """What is wrong with a file's format metadata and checksum, or None."""
    if not isinstance(metadata, dict) or metadata.get("format") != FORMAT:
        return f"no {FORMAT!r} metadata (not a tapeflow checkpoint, or its header was damaged)"
    version, expected = metadata.get("version"), metadata.get("crc32")
    if version not in ("1", VERSION):
        return f"unknown format version {version!r}"
    if not isinstance(expected, str):
        return "no checksum in its metadata"
    computed = _checksum(tensors, version)
    if expected != computed:
        return f"checksum mismatch (stored {expected}, computed {computed})"
    return None
