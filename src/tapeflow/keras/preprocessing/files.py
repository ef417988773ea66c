"""``tf.keras.utils.get_file``: download once into a cache (``~/.keras/datasets`` by default),
check a hash, extract archives safely. Downloads are written to a temporary file and renamed, so
an interrupted download never leaves a file that looks complete."""

from __future__ import annotations

import hashlib
import os
import shutil
import tarfile
import tempfile
import urllib.parse
import urllib.request
import zipfile
from typing import Any


def _hasher(algorithm: str, file_hash: str | None) -> Any:
    if algorithm == "auto":
        algorithm = "sha256" if file_hash is None or len(file_hash) == 64 else "md5"
    if algorithm not in ("sha256", "md5"):
        raise ValueError(f"get_file: hash_algorithm must be 'sha256', 'md5' or 'auto', got "
                         f"{algorithm!r}")
    return hashlib.new(algorithm)


def validate_file(fpath: str, file_hash: str, algorithm: str = "auto",
                  chunk_size: int = 65535) -> bool:
    """Whether the file's sha256 (or md5, for a 32-digit hash) equals `file_hash`."""
    hasher = _hasher(algorithm, file_hash)
    with open(fpath, "rb") as f:
        for chunk in iter(lambda: f.read(chunk_size), b""):
            hasher.update(chunk)
    return hasher.hexdigest() == str(file_hash)


def _inside(root: str, name: str) -> bool:
    target = os.path.realpath(os.path.join(root, name))
    return os.path.commonpath([os.path.realpath(root), target]) == os.path.realpath(root)


def _extract(path: str, into: str, archive_format: Any) -> bool:
    """Extract a tar or zip archive whose members all stay inside `into`."""
    formats = ["tar", "zip"] if archive_format == "auto" else (
        [archive_format] if isinstance(archive_format, str) else list(archive_format or []))
    if "tar" in formats and tarfile.is_tarfile(path):
        with tarfile.open(path) as archive:
            bad = [m.name for m in archive.getmembers() if not _inside(into, m.name)
                   or m.issym() or m.islnk()]
            if bad:
                raise ValueError(f"get_file: archive {path} has members outside its folder or "
                                 f"links: {bad[:5]}")
            archive.extractall(into)
        return True
    if "zip" in formats and zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            bad = [n for n in archive.namelist() if not _inside(into, n)]
            if bad:
                raise ValueError(f"get_file: archive {path} has members outside its folder: "
                                 f"{bad[:5]}")
            archive.extractall(into)
        return True
    return False


def get_file(fname: str | None = None, origin: str | None = None, untar: bool = False,
             md5_hash: str | None = None, file_hash: str | None = None,
             cache_subdir: str = "datasets", hash_algorithm: str = "auto",
             extract: bool = False, archive_format: Any = "auto",
             cache_dir: str | None = None) -> str:
    """Path of `fname` in the cache, downloaded from `origin` if absent (or if its hash is wrong);
    with `extract` (or `untar`), the archive is unpacked beside it."""
    if origin is None:
        raise ValueError('get_file: please specify the "origin" argument (URL of the file to '
                         'download).')
    cache_dir = os.path.expanduser(cache_dir or os.path.join("~", ".keras"))
    datadir = os.path.join(cache_dir, cache_subdir)
    os.makedirs(datadir, exist_ok=True)
    fname = fname or os.path.basename(urllib.parse.urlsplit(origin).path)
    if not fname:
        raise ValueError(f"get_file: cannot name the file for origin {origin!r}; pass `fname`")
    file_hash = file_hash or md5_hash
    if md5_hash and not file_hash:
        hash_algorithm = "md5"
    untar_path = os.path.join(datadir, fname)
    fpath = untar_path + ".tar.gz" if untar else untar_path
    if not (os.path.exists(fpath) and (file_hash is None or
                                       validate_file(fpath, file_hash, hash_algorithm))):
        _download(origin, fpath)
        if file_hash is not None and not validate_file(fpath, file_hash, hash_algorithm):
            os.remove(fpath)
            raise ValueError(f"get_file: the file downloaded from {origin} does not match the "
                             f"expected hash {file_hash} ({hash_algorithm}); it was removed.")
    if untar:
        if not os.path.exists(untar_path):
            _extract(fpath, datadir, "tar")
        return untar_path
    if extract:
        _extract(fpath, datadir, archive_format)
    return fpath


def _download(origin: str, fpath: str) -> None:
    folder = os.path.dirname(fpath)
    handle, tmp = tempfile.mkstemp(dir=folder, prefix=".download-")
    try:
        with os.fdopen(handle, "wb") as out, urllib.request.urlopen(origin) as response:
            shutil.copyfileobj(response, out)
        os.replace(tmp, fpath)
    except Exception as e:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise OSError(f"get_file: failed to download {origin}: {e}") from e
