"""Starting real worker processes from tests: mpiexec ranks, or TF_CONFIG tasks by hand."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WORKERS = Path(__file__).resolve().parent / "workers"


def env(**extra: str) -> dict:
    e = dict(os.environ, **extra)
    e["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + e.get("PYTHONPATH", "")
    e["OMP_NUM_THREADS"] = e["OPENBLAS_NUM_THREADS"] = "1"
    return e


def need_mpi() -> str:
    pytest.importorskip("mpi4py")
    exe = shutil.which("mpiexec")
    if exe is None:
        pytest.skip("mpiexec not found (pip install 'tapeflow[mpi]')")
    return exe


def mpiexec(n: int, script: str, *args: str, timeout: float = 120, flags: tuple = (),
            **extra_env: str) -> subprocess.CompletedProcess:
    exe = need_mpi()
    return subprocess.run([exe, *flags, "-n", str(n), sys.executable, str(WORKERS / script),
                           *args],
                          env=env(**extra_env), capture_output=True, text=True, timeout=timeout)


def python(script: str, *args: str, timeout: float = 120,
           **extra_env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(WORKERS / script), *args],
                          env=env(**extra_env), capture_output=True, text=True, timeout=timeout)


def free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def tf_config_tasks(n: int, script: str, *args: str) -> list[subprocess.Popen]:
    """`n` worker processes started by hand, each with its own TF_CONFIG."""
    need_mpi()
    addresses = [f"localhost:{p}" for p in free_ports(n)]
    procs = []
    for i in range(n):
        e = env()
        e["TF_CONFIG"] = json.dumps({"cluster": {"worker": addresses},
                                     "task": {"type": "worker", "index": i}})
        procs.append(subprocess.Popen([sys.executable, str(WORKERS / script), *args], env=e,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      text=True))
    return procs
