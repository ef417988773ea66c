"""`tapeflow train --workers 2` (mpiexec) and `--strategy parameter-server` (Ray) end with the
held-out accuracy, as the one-process job does."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from tests.distribute import mpi_helpers


def _train(tmp_path, *flags: str) -> str:
    run = subprocess.run([sys.executable, "-m", "tapeflow.cli", "train", "mlp", "--epochs", "2",
                          "--logdir", "", *flags], cwd=tmp_path, env=mpi_helpers.env(),
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    return run.stdout


@pytest.mark.slow
def test_train_on_two_mpi_workers(tmp_path):
    mpi_helpers.need_mpi()
    out = _train(tmp_path, "--workers", "2")
    assert "on 2 workers (MultiWorkerMirroredStrategy, MPI): global batch 64 (32 per worker)" \
        in out
    assert len(re.findall(r"held-out accuracy", out)) == 1  # the chief alone reports
    assert float(re.search(r"held-out accuracy: ([0-9.]+)", out).group(1)) > 0.8


@pytest.mark.slow
def test_train_with_parameter_servers_on_ray(tmp_path):
    pytest.importorskip("ray")
    out = _train(tmp_path, "--strategy", "parameter-server", "--workers", "2")
    assert "1 parameter server, 2 workers" in out and "staleness: mean" in out
    assert float(re.search(r"held-out accuracy: ([0-9.]+)", out).group(1)) > 0.8
