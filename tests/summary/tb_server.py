"""A real TensorBoard (the installed `tensorboard` package) on 127.0.0.1 at a free port,
for tests that read back what tapeflow wrote through TensorBoard's HTTP data API."""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class TensorBoard:
    def __init__(self, url: str):
        self.url = url

    def get(self, path: str, **params: str) -> bytes:
        query = ("?" + urllib.parse.urlencode(params)) if params else ""
        with urllib.request.urlopen(self.url + path + query, timeout=30) as r:
            return r.read()

    def json(self, path: str, **params: str):
        return json.loads(self.get(path, **params))

    def wait_for(self, path: str, ready, timeout: float = 90.0, **params: str):
        """Poll `path` until ``ready(json)`` holds (TensorBoard loads event files lazily)."""
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            try:
                last = self.json(path, **params)
                if ready(last):
                    return last
            except (urllib.error.URLError, ConnectionError, ValueError):
                pass
            time.sleep(0.5)
        raise TimeoutError(f"TensorBoard never served {path} {params} as expected: {last!r}")


@contextlib.contextmanager
def tensorboard(logdir: str) -> Iterator[TensorBoard]:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tensorboard.main", "--logdir", str(logdir), "--host",
         "127.0.0.1", "--port", str(port), "--reload_interval", "1"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    board = TensorBoard(f"http://127.0.0.1:{port}")
    try:
        board.wait_for("/data/runs", lambda runs: isinstance(runs, list), timeout=120)
        yield board
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
