"""The dispatcher's journal (`DispatcherConfig(fault_tolerant_mode=True, work_dir=...)`).

Every change of the dispatcher's state is a record (a JSON object: registered dataset, worker,
job opened or joined or released, claim, split handed out, stream moved, round of a
coordinated read). The dispatcher appends each record here before it answers, and a dispatcher
started again on the same `work_dir` replays them, so jobs resume exactly where the lost
dispatcher left them. Records are JSON lines, flushed to the OS per record (a killed dispatcher
loses nothing; a machine that loses power may lose the last records). Nothing in the journal
can run code: the datasets' pipelines are not in it (a restarted dispatcher gets them back from
the data workers that run them, or from trainers that register them again).

A torn last line (the process died mid-write) is ignored; any other damage raises
`DataLossError` naming the file and line.

Compaction: one record per claim makes a long job's journal grow without bound, and a restart
replays all of it. `rewrite` replaces the journal by records that give the same state (the
dispatcher writes one `state` record, see dispatcher.py) atomically: a new file is written,
synced and renamed over the old one, so a crash at any point leaves either journal whole.
"""

from __future__ import annotations

import json
import os
from typing import Any

from tapeflow.framework import errors

FILE_NAME = "dispatcher_journal.jsonl"


class Journal:
    def __init__(self, work_dir: str):
        os.makedirs(work_dir, exist_ok=True)
        self.path = os.path.join(work_dir, FILE_NAME)
        self._file: Any = None
        self.appended = 0     # records appended since the journal was opened or rewritten

    def records(self) -> list[dict]:
        """The records written so far (none for a new work_dir)."""
        try:
            with open(self.path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return []
        lines = data.split(b"\n")
        if lines and lines[-1]:
            lines = lines[:-1]    # torn: the writer died before the newline
        out = []
        for number, line in enumerate(lines, 1):
            if not line:
                continue
            try:
                record = json.loads(line)
            except ValueError:
                record = None
            if not isinstance(record, dict) or "op" not in record:
                raise errors.DataLossError(
                    f"tf.data service dispatcher journal {self.path}: line {number} is not a "
                    f"journal record (the file is damaged)")
            out.append(record)
        return out

    def append(self, record: dict) -> None:
        if self._file is None:
            self._drop_torn_tail()
            self._file = open(self.path, "ab")
        self._file.write(_line(record))
        self._file.flush()
        self.appended += 1

    def rewrite(self, records: list[dict]) -> None:
        """Replace the journal by `records` atomically (temporary file, fsync, rename)."""
        self.close()
        tmp = self.path + ".tmp"
        with open(tmp, "wb") as f:
            f.write(b"".join(_line(r) for r in records))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        try:   # make the rename durable
            fd = os.open(os.path.dirname(self.path) or ".", os.O_RDONLY)
        except OSError:
            pass
        else:
            try:
                os.fsync(fd)
            except OSError:
                pass
            finally:
                os.close(fd)
        self.appended = 0

    def _drop_torn_tail(self) -> None:
        """Cut a torn last line before appending after it."""
        try:
            with open(self.path, "rb+") as f:
                data = f.read()
                if data and not data.endswith(b"\n"):
                    f.truncate(data.rfind(b"\n") + 1)
        except FileNotFoundError:
            pass

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def _line(record: dict) -> bytes:
    return json.dumps(record, separators=(",", ":")).encode() + b"\n"
