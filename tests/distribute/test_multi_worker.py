"""MultiWorkerMirroredStrategy with real processes: mpiexec ranks and TF_CONFIG tasks."""

from __future__ import annotations

import numpy as np
import pytest
from tests.distribute import mpi_helpers


def _train(tmp_path, n: int, mode: str, opt: str, **env: str) -> dict:
    out = tmp_path / f"{mode}-{opt}-{n}.npz"
    args = (str(out), mode, opt, "64", "20")
    run = mpi_helpers.mpiexec(n, "mwms_train.py", *args, **env) if n > 1 else \
        mpi_helpers.python("mwms_train.py", *args, **env)
    assert run.returncode == 0, run.stdout + run.stderr
    return dict(np.load(out))


@pytest.mark.parametrize("mode,opt", [("fit", "adam"),
                                      pytest.param("loop", "sgd", marks=pytest.mark.slow)])
def test_two_workers_of_batch_32_match_one_process_of_batch_64(tmp_path, mode, opt):
    two = _train(tmp_path, 2, mode, opt)
    one = _train(tmp_path, 1, mode, opt)
    assert int(two["replicas"]) == 2 and int(one["replicas"]) == 1
    for i in range(4):  # every weight after 20 steps (ranks started from different draws)
        np.testing.assert_allclose(two[f"w{i}"], one[f"w{i}"], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(two["loss"], one["loss"], rtol=1e-5, atol=1e-6)
    if mode == "fit":  # metrics aggregate over both workers; only the chief writes its log
        np.testing.assert_allclose(two["mae"], one["mae"], rtol=1e-5)
        assert (tmp_path / f"{mode}-{opt}-2.npz.rank0.csv").exists()
        assert not (tmp_path / f"{mode}-{opt}-2.npz.rank1.csv").exists()
    else:  # gather concatenates the ranks' rows; a MEAN over axis 0 spans the global batch
        np.testing.assert_array_equal(two["gathered"], [[0.0, 0.0], [1.0, 1.0]])
        assert float(two["mean_axis"]) == pytest.approx(1.5)


@pytest.mark.slow
def test_densenet_with_sync_batch_norm_two_workers_match_one_process(tmp_path):
    """SGD with momentum, 20 steps. (With Adam the runs drift apart by ~1e-2: the conv biases
    feeding a batch norm have a true gradient of zero, and Adam scales their rounding noise,
    which differs with the summation order, up to learning-rate-sized steps.)"""
    two = _train(tmp_path, 2, "fit", "sgd", MWMS_MODEL="densenet")
    one = _train(tmp_path, 1, "fit", "sgd", MWMS_MODEL="densenet")
    weights = [k for k in one if k.startswith("w")]
    assert len(weights) == 38
    for k in weights:
        np.testing.assert_allclose(two[k], one[k], rtol=1e-5, atol=1e-5)


def test_a_stalled_rank_is_named_and_the_job_ends():
    run = mpi_helpers.mpiexec(2, "mwms_fault.py", "stall", "2", timeout=60)
    assert run.returncode != 0
    text = run.stdout + run.stderr
    assert "CollectiveTimeoutError" in text and "strategy.reduce(SUM)" in text
    assert "rank(s) [1] never joined" in text and "timed out after 2 s on rank 0" in text
    assert "step 1 total [2.0, 4.0]" in text and "done" not in text


def test_tf_config_workers_join_and_a_dead_one_is_named():
    procs = mpi_helpers.tf_config_tasks(2, "mwms_fault.py", "kill", "3")
    try:
        out0, _ = procs[0].communicate(timeout=60)
        procs[1].wait(timeout=30)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    assert "started worker:0 of 2" in out0 and "step 1 total [2.0, 4.0]" in out0
    assert procs[0].returncode != 0 and procs[1].returncode != 0
    assert "rank(s) [1] never joined" in out0 and "worker:1 (localhost:" in out0
