"""A witness that outlives mpiexec's clean-up, to name the rank that died.

Under a plain ``mpiexec``, when one rank's process dies MPICH's process manager kills every
other rank at once (SIGKILL): no survivor can say which rank it was, and MPICH prints only a
PID. So the lowest rank on each host starts a small watchdog process in its own session (MPICH
ends the processes it started, not this one) that watches that host's ranks. Each rank says
goodbye on a local datagram socket when it exits normally (or aborts the job after printing an
uncaught error); the first rank that disappears without saying goodbye is named on stderr, e.g.

    tapeflow watchdog: rank 1 = worker 1 (pid 9234 on vm) died (killed by signal 9); mpiexec
    ends the other ranks

and the watchdog leaves once every rank it watches is gone. It only sees its own host: a rank
on another host is named by that host's watchdog.
"""

from __future__ import annotations

import atexit
import os
import socket
import subprocess
import sys

_PROGRAM = r'''
import os, select, socket, sys
name, rank_pids, labels = "\0" + sys.argv[1], sys.argv[2], sys.argv[3].split("\x1f")
ready_fd = int(sys.argv[4])
pids = {int(r): int(p) for r, p in (x.split(":") for x in rank_pids.split(","))}
sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
sock.bind(name)
fds = {}
for r, p in pids.items():
    try:
        fds[os.pidfd_open(p)] = r
    except OSError:
        pass
os.write(ready_fd, b"r")
os.close(ready_fd)
said_bye, quiet = set(), False
def status(pid):
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            code = int(f.read().rsplit(b")", 1)[1].split()[49])
    except (OSError, IndexError, ValueError):
        return ""
    if code & 0x7F:
        return f" (killed by signal {code & 0x7F})"
    return f" (exit code {code >> 8})"
while fds:
    ready, _, _ = select.select([sock] + list(fds), [], [])
    if sock in ready:
        r, how = sock.recv(64).decode().split(":")
        said_bye.add(int(r))
        quiet = quiet or how == "abort"  # it printed its error; the rest follows from it
        continue
    for fd in ready:
        r = fds.pop(fd)
        if r not in said_bye and not quiet:
            quiet = True
            os.write(2, (f"tapeflow watchdog: rank {r} = {labels[r]} died{status(pids[r])}; "
                         f"mpiexec ends the other ranks\n").encode())
        os.close(fd)
'''

_socket_name: list[str] = []


def _name(host_pid: int) -> str:
    return f"\0tapeflow-watchdog-{host_pid}"


def start(rank: int, hosts: list[str], pids: list[int], labels: list[str]) -> None:
    """Called on every rank after rank discovery: the host's lowest rank starts the watchdog
    (and waits until it watches); every rank says goodbye to it when it exits normally."""
    here = hosts[rank]
    local = [r for r, h in enumerate(hosts) if h == here]
    if len(hosts) < 2 or not hasattr(os, "pidfd_open"):
        return
    name = _name(pids[local[0]])
    if rank == local[0]:
        ready_r, ready_w = os.pipe()
        subprocess.Popen(
            [sys.executable, "-S", "-c", _PROGRAM, name[1:],  # abstract: no NUL in argv
             ",".join(f"{r}:{pids[r]}" for r in local), "\x1f".join(labels), str(ready_w)],
            start_new_session=True, stdin=subprocess.DEVNULL, pass_fds=(ready_w,))
        os.close(ready_w)
        os.read(ready_r, 1)  # it watches every local rank now
        os.close(ready_r)
    _socket_name[:] = [name]
    atexit.register(goodbye, rank, "ok")


def goodbye(rank: int, how: str) -> None:
    """Tell the watchdog this rank ends on purpose: "ok" (a normal exit) or "abort" (it printed
    an uncaught error and ends the job: the ranks MPICH kills then are not news)."""
    if not _socket_name:
        return
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
            s.sendto(f"{rank}:{how}".encode(), _socket_name[0])
    except OSError:
        pass
