"""Joining processes started by hand (``TF_CONFIG``) into one MPI communicator.

The chief's address in the cluster spec is only the rendezvous: the chief listens there, every
other task connects and says which rank it is, and once all are present the chief opens an MPI
port (``MPI_Open_port``) and hands its name to each task in rank order. The group accepts each
newcomer (``MPI_Comm_accept`` / ``MPI_Comm_connect``) and merges the inter-communicator into a
larger intra-communicator, so rank order is chief, worker 0, worker 1, ... From then on every
byte moves over MPI. The TCP exchange carries a few short JSON lines and nothing else.
"""

from __future__ import annotations

import json
import socket
import time
from typing import Any

from tapeflow.distribute.communicator import mpi


def _split_address(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"cluster address {address!r} is not host:port")
    return host, int(port)


def _send(sock: socket.socket, value: Any) -> None:
    sock.sendall(json.dumps(value).encode() + b"\n")


def _recv(sock: socket.socket, deadline: float) -> Any:
    data = b""
    while not data.endswith(b"\n"):
        sock.settimeout(max(0.1, deadline - time.monotonic()))
        chunk = sock.recv(4096)
        if not chunk:
            raise ConnectionError("rendezvous: the peer closed the connection")
        data += chunk
    return json.loads(data)


def join(tasks: list[tuple[str, int]], addresses: list[str], rank: int,
         timeout: float) -> Any:
    """The merged intra-communicator of all `tasks` (rank i = tasks[i]); every task calls it."""
    MPI = mpi()
    size = len(tasks)
    deadline = time.monotonic() + timeout
    if rank == 0:
        comm = _chief(MPI, tasks, addresses, size, deadline, timeout)
    else:
        comm = _member(MPI, addresses[0], rank, size, deadline, timeout)
    if comm.Get_rank() != rank or comm.Get_size() != size:
        raise RuntimeError(f"rendezvous: joined as rank {comm.Get_rank()} of {comm.Get_size()}, "
                           f"expected rank {rank} of {size}")
    return comm


def _chief(MPI: Any, tasks: list, addresses: list, size: int, deadline: float,
           timeout: float) -> Any:
    host, port = _split_address(addresses[0])
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("" if host in ("localhost", "0.0.0.0") else host, port))
    server.listen(size)
    peers: dict[int, socket.socket] = {}
    try:
        while len(peers) < size - 1:
            left = deadline - time.monotonic()
            if left <= 0:
                missing = [f"{t}:{i} ({addresses[r]})" for r, (t, i) in enumerate(tasks)
                           if r and r not in peers]
                raise TimeoutError(f"rendezvous at {addresses[0]}: task(s) {missing} did not "
                                   f"connect within {timeout:g} s")
            server.settimeout(min(left, 1.0))
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            peers[int(_recv(conn, deadline)["rank"])] = conn
        port_name = MPI.Open_port()
        comm = MPI.COMM_SELF
        for r in range(1, size):
            _send(peers[r], {"port": port_name})
            inter = comm.Accept(port_name, root=0)
            comm = inter.Merge(high=False)
            inter.Disconnect()
        for conn in peers.values():
            _send(conn, {"done": True})
        MPI.Close_port(port_name)
        return comm
    finally:
        for conn in peers.values():
            conn.close()
        server.close()


def _member(MPI: Any, chief: str, rank: int, size: int, deadline: float,
            timeout: float) -> Any:
    address = _split_address(chief)
    while True:
        try:
            sock = socket.create_connection(address, timeout=1.0)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise TimeoutError(f"rendezvous: the chief at {chief} did not answer within "
                                   f"{timeout:g} s (is it running?)") from None
            time.sleep(0.2)
    try:
        _send(sock, {"rank": rank})
        port_name = _recv(sock, deadline + timeout)["port"]
        inter = MPI.COMM_SELF.Connect(port_name, root=0)
        comm = inter.Merge(high=True)
        inter.Disconnect()
        for _ in range(rank + 1, size):  # accept the later ranks together with the group
            inter = comm.Accept("", root=0)  # the port matters at the root only
            comm = inter.Merge(high=False)
            inter.Disconnect()
        _recv(sock, deadline + timeout)
        return comm
    finally:
        sock.close()
