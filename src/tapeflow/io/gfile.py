"""`tf.io.gfile`: files and directories with TensorFlow's names, modes and errors.

Local paths only (no gs:// or hdfs:// schemes). Text modes read and write str, binary modes
bytes; a missing path raises `tf.errors.NotFoundError`, copying or renaming onto an existing
file without `overwrite` raises `AlreadyExistsError`, as TensorFlow does.
"""

from __future__ import annotations

import glob as _glob
import os
import shutil
from collections.abc import Iterator
from typing import Any, NamedTuple

from tapeflow.framework import errors

__all__ = ["GFile", "copy", "exists", "get_registered_schemes", "glob", "isdir", "join",
           "listdir", "makedirs", "mkdir", "remove", "rename", "rmtree", "stat", "walk"]


def _path(p: Any) -> str:
    if hasattr(p, "numpy"):
        p = p.numpy()
    return os.fsdecode(p) if isinstance(p, (bytes, os.PathLike)) else str(p)


def _not_found(path: str) -> errors.NotFoundError:
    return errors.NotFoundError(None, None, f"{path}; No such file or directory")


class GFile:
    """A file object (`tf.io.gfile.GFile`): opened lazily, readable and writable as in TF."""

    def __init__(self, name: Any, mode: str = "r"):
        self.name = _path(name)
        self.mode = mode
        self._file: Any = None

    def _open(self) -> Any:
        if self._file is None:
            if "r" in self.mode and not os.path.exists(self.name):
                raise _not_found(self.name)
            kwargs = {} if "b" in self.mode else {"encoding": "utf-8", "newline": ""}
            self._file = open(self.name, self.mode, **kwargs)  # noqa: SIM115 - kept open
        return self._file

    def read(self, n: int = -1) -> Any:
        return self._open().read(n)

    def readline(self) -> Any:
        return self._open().readline()

    def readlines(self) -> list:
        return self._open().readlines()

    def write(self, data: Any) -> None:
        f = self._open()
        if "b" not in self.mode and isinstance(data, bytes):
            data = data.decode()
        elif "b" in self.mode and isinstance(data, str):
            data = data.encode()
        f.write(data)

    def seek(self, offset: int, whence: int = 0) -> None:
        self._open().seek(offset, whence)

    def tell(self) -> int:
        return self._open().tell()

    def size(self) -> int:
        return os.path.getsize(self.name)

    def seekable(self) -> bool:
        return True

    def flush(self) -> None:
        if self._file is not None:
            self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def __iter__(self) -> Iterator:
        return iter(self._open())

    def __next__(self) -> Any:
        return next(self._open())

    def __enter__(self) -> GFile:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class FileStatistics(NamedTuple):
    """`tf.io.gfile.stat`'s answer."""

    length: int
    mtime_nsec: int
    is_directory: bool


def exists(path: Any) -> bool:
    return os.path.exists(_path(path))


def isdir(path: Any) -> bool:
    return os.path.isdir(_path(path))


def listdir(path: Any) -> list:
    """The entries of a directory (names only)."""
    p = _path(path)
    if not os.path.isdir(p):
        raise errors.NotFoundError(None, None, f"Could not find directory {p}")
    return os.listdir(p)


def glob(pattern: Any) -> list:
    return sorted(_glob.glob(_path(pattern)))


def makedirs(path: Any) -> None:
    os.makedirs(_path(path), exist_ok=True)


def mkdir(path: Any) -> None:
    os.makedirs(_path(path), exist_ok=True)


def remove(path: Any) -> None:
    p = _path(path)
    if not os.path.exists(p):
        raise _not_found(p)
    os.remove(p)


def rmtree(path: Any) -> None:
    p = _path(path)
    if not os.path.exists(p):
        raise _not_found(p)
    shutil.rmtree(p)


def _refuse_overwrite(dst: str, overwrite: bool) -> None:
    if os.path.exists(dst) and not overwrite:
        raise errors.AlreadyExistsError(None, None, "file already exists")


def copy(src: Any, dst: Any, overwrite: bool = False) -> None:
    s, d = _path(src), _path(dst)
    if not os.path.exists(s):
        raise _not_found(s)
    _refuse_overwrite(d, overwrite)
    shutil.copyfile(s, d)


def rename(src: Any, dst: Any, overwrite: bool = False) -> None:
    s, d = _path(src), _path(dst)
    if not os.path.exists(s):
        raise _not_found(s)
    _refuse_overwrite(d, overwrite)
    os.replace(s, d)


def stat(path: Any) -> FileStatistics:
    p = _path(path)
    if not os.path.exists(p):
        raise _not_found(p)
    st = os.stat(p)
    return FileStatistics(st.st_size, st.st_mtime_ns, os.path.isdir(p))


def walk(top: Any, topdown: bool = True, onerror: Any = None) -> Iterator:
    return os.walk(_path(top), topdown=topdown, onerror=onerror)


def join(path: Any, *paths: Any) -> str:
    return os.path.join(_path(path), *map(_path, paths))


def get_registered_schemes() -> list:
    """Only local files are supported."""
    return []
