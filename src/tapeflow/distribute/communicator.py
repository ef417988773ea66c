"""MPI collectives with a deadline: every collective is non-blocking underneath, and a rank
that waits longer than the timeout finds out which ranks never joined and raises an error
naming them and the collective, instead of hanging forever (MPI itself has no timeouts).

How the missing ranks are found, at no cost on the happy path: a rank waiting in a collective
answers "present at collective #k" queries on a duplicate (control) communicator while it
polls. A rank that times out asks every peer and waits a short grace period for answers; the
ranks that answer are waiting too, the silent ones are stalled or dead. A peer on the same host
whose process is gone is named at once (twice a second the waiting rank looks its PID up), so
under ``mpiexec -disable-auto-cleanup`` a killed rank is reported by rank within a second.
The transport and the collective algorithms are MPI's (mpi4py over MPICH); nothing here moves
data itself.
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from typing import Any

import numpy as np

from tapeflow.framework import errors

DEFAULT_TIMEOUT_S = 60.0
_TAG_QUERY, _TAG_HERE = 71, 72
# A waiting rank polls, yielding its core between bursts of polls (sched_yield, as MPICH's own
# blocking waits do) for this long, then backs off with sleeps. Two ranks must both be inside MPI
# for a shared-memory transfer to move: sleeping from the first 50 ms on left the peer waiting on
# a loaded machine (32 MB in 4 MB buckets, 2 ranks at load 8-9: median 143-285 ms with sleeps,
# 87-122 ms yielding, raw Allreduce 118-433 ms in the same rounds).
_YIELD_S = 1.0
_LIVENESS_S = 0.5  # how often a waiting rank checks that its same-host peers still exist


class RankDiedError(errors.UnavailableError):
    """A peer's process ended while this rank waited for it in a collective."""

    def __init__(self, message: str, dead: list[int], collective: str):
        super().__init__(None, collective, message)
        self.dead_ranks = dead
        self.collective = collective


class CollectiveTimeoutError(errors.DeadlineExceededError):
    """A collective that some rank(s) did not join within the communication timeout."""

    def __init__(self, message: str, missing: list[int], collective: str):
        super().__init__(None, collective, message)
        self.missing_ranks = missing
        self.collective = collective


def mpi() -> Any:
    """The ``mpi4py.MPI`` module, or a clear error naming the extra to install."""
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise ImportError("multi-process training needs mpi4py and an MPI library: "
                          "pip install 'tapeflow[mpi]' (mpi4py + mpich)") from e
    return MPI


def launched_by_mpiexec() -> bool:
    """True when a process manager (mpiexec) started this process as one of several ranks."""
    for key in ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS"):
        if os.environ.get(key, "1").isdigit() and int(os.environ.get(key, "1")) > 1:
            return True
    return False


_REDUCE_OPS = ("sum", "max", "min", "prod")


class Pending:
    """A posted non-blocking collective: ``wait()`` returns its result."""

    def __init__(self, comm: Communicator, request: Any, result: Any, what: str, index: int):
        self._comm = comm
        self._request = request
        self.result = result
        self.what = what
        self.index = index
        self.done = False

    def test(self) -> bool:
        """Whether it has finished; also lets MPI progress it (and every other posted one)."""
        if not self.done and self._request.Test():
            self.done = True
        return self.done

    def wait(self) -> Any:
        if not self.done:
            self._comm._wait(self._request, self.what, self.index)
            self.done = True
        return self.result


class Communicator:
    """A group of ranks with timeout-checked collectives over an ``mpi4py`` communicator."""

    def __init__(self, comm: Any, timeout: float | None = DEFAULT_TIMEOUT_S,
                 name: str = "world", labels: list[str] | None = None):
        self.comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self.timeout = DEFAULT_TIMEOUT_S if timeout is None else float(timeout)
        self.name = name
        self.labels = labels  # how errors call each rank ("worker 1 (localhost:23456)")
        self.local_pids: dict[int, int] = {}  # rank -> PID, for peers on this host
        self._ctrl = comm.Dup() if self.size > 1 else None
        self._count = 0
        self._replies: list[Any] = []

    # --- collectives ------------------------------------------------------------------
    def iallreduce(self, array: np.ndarray, op: str = "sum", what: str = "all-reduce",
                   out: np.ndarray | None = None) -> Pending:
        """Post an all-reduce of a contiguous array; the result lands in `out` (or a new one)."""
        send = np.ascontiguousarray(array)
        recv = np.empty_like(send) if out is None else out
        index = self._next()
        if self.size == 1:   # one process: a copy, and mpi4py need not be installed
            if recv is not send:
                recv[...] = send
            return _done(self, recv, what, index)
        MPI = mpi()
        if recv is send:  # the caller's own buffer: reduce in place
            req = self.comm.Iallreduce(MPI.IN_PLACE, recv, op=_mpi_op(MPI, op))
        else:
            req = self.comm.Iallreduce(send, recv, op=_mpi_op(MPI, op))
        pending = Pending(self, req, recv, what, index)
        pending._keep = send  # the send buffer must live until the request completes
        return pending

    def allreduce(self, array: np.ndarray, op: str = "sum", what: str = "all-reduce"
                  ) -> np.ndarray:
        return self.iallreduce(np.asarray(array), op, what).wait()

    def bcast(self, array: np.ndarray, root: int = 0, what: str = "broadcast") -> np.ndarray:
        """`array` from `root` on every rank (every rank passes an array of the same shape)."""
        buf = np.array(array, copy=True, order="C")
        index = self._next()
        if self.size == 1:
            return buf
        req = self.comm.Ibcast(buf, root=root)
        self._wait(req, what, index)
        return buf

    def allgather(self, array: np.ndarray, what: str = "all-gather") -> np.ndarray:
        """Stack every rank's equally-shaped array along a new leading axis."""
        send = np.ascontiguousarray(array)
        recv = np.empty((self.size,) + send.shape, send.dtype)
        index = self._next()
        if self.size == 1:
            recv[0] = send
            return recv
        req = self.comm.Iallgather(send, recv)
        self._wait(req, what, index)
        return recv

    def barrier(self, what: str = "barrier") -> None:
        index = self._next()
        if self.size > 1:
            self._wait(self.comm.Ibarrier(), what, index)

    def bcast_object(self, value: Any, root: int = 0, what: str = "broadcast") -> Any:
        """A small JSON-able value from `root` (sent as UTF-8 bytes; never pickled)."""
        import json

        data = json.dumps(value).encode() if self.rank == root else b""
        size = int(self.bcast(np.array([len(data)], np.int64), root, what)[0])
        buf = np.frombuffer(data.ljust(size, b"\0"), np.uint8) if self.rank == root else \
            np.zeros(size, np.uint8)
        return json.loads(self.bcast(buf, root, what).tobytes().decode())

    def split(self, color: int, key: int, name: str) -> Communicator:
        """A sub-communicator (``Comm.Split``): ranks with the same color, ordered by key."""
        self.barrier(f"split into {name}")
        return Communicator(self.comm.Split(color, key), self.timeout, name)

    # --- waiting with a deadline --------------------------------------------------------
    def _next(self) -> int:
        self._count += 1
        return self._count

    def _wait(self, request: Any, what: str, index: int) -> None:
        start = time.monotonic()
        deadline = start + self.timeout
        ask_at = deadline - min(5.0, max(0.5, self.timeout / 4))
        yield_until = start + _YIELD_S
        check_at = start + _LIVENESS_S
        delay = 1e-4
        polls = 0
        while not request.Test():
            polls += 1
            if polls % 256:
                continue
            self._answer_queries(index)
            now = time.monotonic()
            if (now >= check_at and self.local_pids) or _peer_failed:
                check_at = now + _LIVENESS_S
                self._check_peers_alive(what, index)
            if now >= ask_at:  # ask who is here in time to name the others at the deadline
                self._timed_out(request, what, index, deadline)
                return
            if now < yield_until:
                os.sched_yield()
            else:
                time.sleep(delay)
                delay = min(delay * 2, 1e-3)

    def _answer_queries(self, index: int) -> None:
        MPI = mpi()
        status = MPI.Status()
        while self._ctrl.Iprobe(MPI.ANY_SOURCE, _TAG_QUERY, status):
            source = status.Get_source()
            asked = np.empty(1, np.int64)
            self._ctrl.Recv(asked, source, _TAG_QUERY)
            reply = np.array([asked[0], index], np.int64)
            self._replies.append((self._ctrl.Isend(reply, source, _TAG_HERE), reply))
        self._replies = [(r, b) for r, b in self._replies if not r.Test()]

    def _timed_out(self, request: Any, what: str, index: int, deadline: float) -> None:
        """Ask the peers who is waiting; if the collective is still not done at the deadline,
        raise naming the ones that did not answer."""
        MPI = mpi()
        query = np.array([index], np.int64)
        peers = [r for r in range(self.size) if r != self.rank]
        sends = [self._ctrl.Isend(query, r, _TAG_QUERY) for r in peers]
        at: dict[int, int] = {}
        status = MPI.Status()
        while time.monotonic() < deadline:
            if request.Test():
                self._replies += [(r, query) for r in sends]  # completed later, as replies are
                return  # the late rank(s) arrived in time
            self._answer_queries(index)
            if len(at) < len(peers) and self._ctrl.Iprobe(MPI.ANY_SOURCE, _TAG_HERE, status):
                reply = np.empty(2, np.int64)
                self._ctrl.Recv(reply, status.Get_source(), _TAG_HERE)
                if reply[0] == index:
                    at[status.Get_source()] = int(reply[1])
            else:
                time.sleep(0.01)
        missing = [r for r in peers if r not in at]
        elsewhere = {r: k for r, k in at.items() if k != index}
        names = ", ".join(self._label(r) for r in missing) or "none"
        message = (f"{what} (collective #{index} on communicator {self.name!r}, "
                   f"{self.size} ranks) timed out after {self.timeout:g} s on rank {self.rank}: "
                   f"rank(s) {missing} never joined it ({names}): stalled, or dead.")
        if elsewhere:
            message += (" Rank(s) waiting in a different collective: " +
                        ", ".join(f"{r} at #{k}" for r, k in sorted(elsewhere.items())) +
                        " (the ranks run different code paths).")
        message += (" Set the limit with tf.distribute.experimental.CommunicationOptions("
                    "timeout_seconds=...).")
        raise CollectiveTimeoutError(message, missing, what)

    def _check_peers_alive(self, what: str, index: int) -> None:
        dead = [r for r, pid in sorted(self.local_pids.items()) if not _process_exists(pid)]
        if dead:
            names = ", ".join(self._label(r) for r in dead)
            raise RankDiedError(
                f"{what} (collective #{index} on communicator {self.name!r}, {self.size} "
                f"ranks): rank(s) {dead} died while rank {self.rank} waited for them ({names}: "
                f"the process is gone). The job cannot go on; restart it (BackupAndRestore "
                f"resumes from the last backup).", dead, what)

    def _label(self, rank: int) -> str:
        if self.labels and rank < len(self.labels):
            return f"rank {rank} = {self.labels[rank]}"
        return f"rank {rank}"


_peer_failed: list[bool] = []  # non-empty once mpiexec signalled that a peer failed


def notice_peer_failures(comm: Communicator) -> None:
    """Under ``mpiexec -disable-auto-cleanup`` MPICH's process manager sends SIGUSR1 to the
    live ranks when one fails (by default that signal would end them). The handler names the
    dead same-host ranks on stderr at once (MPICH may still kill this rank moments later) and
    notes the failure, so a waiting collective raises ``RankDiedError`` without delay."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return

    def handler(signum: int, frame: Any) -> None:
        _peer_failed.append(True)
        dead = [r for r, pid in sorted(comm.local_pids.items()) if not _process_exists(pid)]
        if dead:
            names = ", ".join(comm._label(r) for r in dead)
            os.write(2, f"tapeflow: rank {comm.rank}: rank(s) {dead} of communicator "
                        f"{comm.name!r} died ({names}: the process is gone)\n".encode())

    signal.signal(signal.SIGUSR1, handler)


def _process_exists(pid: int) -> bool:
    """Whether process `pid` is alive (a zombie, dead but not yet reaped, counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X", b"x")
    except (OSError, IndexError):
        return True


def _done(comm: Communicator, result: Any, what: str, index: int) -> Pending:
    p = Pending(comm, None, result, what, index)
    p.done = True
    return p


def _mpi_op(MPI: Any, op: str) -> Any:
    op = op.lower()
    if op not in _REDUCE_OPS:
        raise ValueError(f"all-reduce: unknown reduction {op!r}; expected one of {_REDUCE_OPS}")
    return {"sum": MPI.SUM, "max": MPI.MAX, "min": MPI.MIN, "prod": MPI.PROD}[op]


_abort_installed = False


def abort_job_on_uncaught_error(comm: Any) -> None:
    """An uncaught exception on one rank ends the whole job (``MPI_Abort``) after printing it:
    exiting normally would wait in ``MPI_Finalize`` for peers that may never come."""
    global _abort_installed
    if _abort_installed:
        return
    _abort_installed = True
    previous = sys.excepthook

    def hook(kind: type, value: BaseException, tb: Any) -> None:
        sys.stderr.write(f"{kind.__name__}: {value}\n")  # first, whole: the job may end soon
        sys.stderr.flush()
        previous(kind, value, tb) if previous is not sys.__excepthook__ else \
            traceback.print_exception(kind, value, tb)
        sys.stderr.flush()
        sys.stdout.flush()
        time.sleep(2.0)  # let mpiexec forward the message before the abort tears the job down
        from tapeflow.distribute import watchdog

        watchdog.goodbye(comm.Get_rank(), "abort")
        try:
            comm.Abort(1)
        finally:
            os._exit(1)

    sys.excepthook = hook
