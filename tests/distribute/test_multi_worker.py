"""MultiWorkerMirroredStrategy with real processes: mpiexec ranks and TF_CONFIG tasks."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import numpy as np
import pytest
from tests.distribute import mpi_helpers

import tapeflow as tf


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


def test_eager_steps_all_reduce_buckets_during_the_backward_pass(tmp_path):
    """An eager custom loop (Adam): each step posts its last layer's bucket (real MPI
    Iallreduce) before the first layer's kernel gradient is computed, and 2 workers of batch
    32 still end where 1 process of batch 64 does."""
    two = _train(tmp_path, 2, "eager", "adam", MWMS_BYTES_PER_PACK="256")
    one = _train(tmp_path, 1, "eager", "adam")
    assert int(two["overlapped"]) == 20 and int(one["overlapped"]) == 0
    for i in range(4):
        np.testing.assert_allclose(two[f"w{i}"], one[f"w{i}"], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(two["loss"], one["loss"], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mode", ["loop", pytest.param("eager", marks=pytest.mark.slow)])
def test_embedding_gradients_travel_as_rows(tmp_path, mode):
    """An embedding's IndexedSlices gradient is all-gathered as rows (TF's way), so a sparse
    rule (legacy SGD with momentum: rows not looked up keep value and momentum) applies as in
    one process; summed densely, the rows of the other id range would keep moving."""
    env = dict(MWMS_MODEL="embedding", MWMS_BYTES_PER_PACK="256")
    two = _train(tmp_path, 2, mode, "legacy_sgd", **env)
    one = _train(tmp_path, 1, mode, "legacy_sgd", **env)
    assert sorted(k for k in two if k.startswith("w")) == ["w0", "w1", "w2"]
    if mode == "loop":  # traced once: the update is counted when traced
        assert int(two["sparse_updates"]) >= 1 and int(one["sparse_updates"]) >= 1
    else:
        assert int(two["sparse_updates"]) == 20 == int(one["sparse_updates"])
    for k in ["w0", "w1", "w2"]:
        np.testing.assert_allclose(two[k], one[k], rtol=1e-5, atol=1e-6)


def _max_drift(a: dict, b: dict) -> float:
    keys = [k for k in b if k.startswith("w")]
    assert len(keys) == 38 and all(a[k].dtype == b[k].dtype for k in keys)
    return max(float(np.abs(a[k] - b[k]).max()) for k in keys)


@pytest.mark.slow
def test_densenet_with_synchronized_batch_norm_two_workers_match_one_process(tmp_path):
    """SGD with momentum, float32, 20 steps: every weight within 1e-5."""
    two = _train(tmp_path, 2, "fit", "sgd", MWMS_MODEL="densenet")
    one = _train(tmp_path, 1, "fit", "sgd", MWMS_MODEL="densenet")
    assert _max_drift(two, one) < 1e-5


@pytest.mark.slow
def test_densenet_adam_two_workers_match_one_process_in_float64(tmp_path):
    """Adam(0.01), 20 steps. In float64 the two runs agree to 1e-9: the distributed step is the
    one-process step. (Per-replica batch statistics instead drift by ~0.1.)"""
    env = dict(MWMS_MODEL="densenet", MWMS_FLOATX="float64")
    two = _train(tmp_path, 2, "fit", "adam", **env)
    one = _train(tmp_path, 1, "fit", "adam", **env)
    assert str(one["w0"].dtype) == "float64"
    assert _max_drift(two, one) < 1e-9


@pytest.mark.slow
def test_densenet_adam_in_float32_drifts_no_more_than_one_process_reordering_its_batch(tmp_path):
    """In float32 this training is chaotic: one process fed each batch in reverse order (the same
    math) ends ~4e-2 from itself after 20 steps, and TensorFlow 2.21 does the same (4.7e-2,
    tests/distribute/tf_reference/densenet_adam_reorder.py). 1e-5 cannot hold here; what can
    is that 2 workers stay within that rounding band of one process."""
    env = dict(MWMS_MODEL="densenet")
    two = _train(tmp_path, 2, "fit", "adam", **env)
    one = _train(tmp_path, 1, "fit", "adam", **env)
    one_reversed = _train(tmp_path, 1, "fit", "adam", MWMS_PERMUTE="1", **env)
    floor = _max_drift(one_reversed, one)
    assert 1e-3 < floor  # the band exists (else this test would say nothing)
    assert _max_drift(two, one) < 2 * floor


def test_a_stalled_rank_is_named_and_the_job_ends():
    run = mpi_helpers.mpiexec(2, "mwms_fault.py", "stall", "2", timeout=60)
    assert run.returncode != 0
    text = run.stdout + run.stderr
    assert "CollectiveTimeoutError" in text and "strategy.reduce(SUM)" in text
    assert "rank(s) [1] never joined" in text and "timed out after 2 s on rank 0" in text
    assert "step 1 total [2.0, 4.0]" in text and "done" not in text
    assert "watchdog" not in text  # rank 0 ended the job on purpose, after saying why


def test_a_killed_mpiexec_rank_is_named_by_rank():
    """Under a plain mpiexec MPICH kills the other ranks at once (and its banner may give a
    killed survivor's PID); the watchdog, outside MPICH's clean-up, names the rank that died
    and how. A normal run prints nothing of the kind."""
    run = mpi_helpers.mpiexec(2, "mwms_fault.py", "kill", "30", timeout=60)
    text = run.stdout + run.stderr
    assert run.returncode != 0 and "step 1 total [2.0, 4.0]" in text and "done" not in text
    rank_of = {pid: rank for rank, pid in re.findall(r"rank (\d) = worker \d \(pid (\d+) on ",
                                                      text)}
    assert len(rank_of) == 2
    # the exit status when the watchdog reads it before mpiexec reaps the process
    named = re.findall(r"tapeflow watchdog: rank (\d) = worker \d \(pid (\d+) on [^)]*\) died"
                       r"(?: \(killed by signal 9\))?; mpiexec ends the other ranks", text)
    assert len(named) == 1 and named[0][0] == "1" and rank_of[named[0][1]] == "1", text
    clean = mpi_helpers.mpiexec(2, "mwms_fault.py", "none", "30", timeout=60)
    assert clean.returncode == 0 and "watchdog" not in clean.stdout + clean.stderr


def test_a_waiting_rank_names_a_dead_same_host_peer_by_rank():
    """What a survivor does under mpiexec -disable-auto-cleanup (when MPICH lets it live: it
    sometimes kills it anyway): a peer whose process is gone is named at once."""
    from tapeflow.distribute import communicator

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    comm = communicator.Communicator.__new__(communicator.Communicator)
    comm.rank, comm.size, comm.name = 0, 3, "world"
    comm.labels = ["worker 0", "worker 1 (pid 1 on vm)", f"worker 2 (pid {child.pid} on vm)"]
    comm.local_pids = {1: os.getpid(), 2: child.pid}
    with pytest.raises(communicator.RankDiedError, match=r"rank\(s\) \[2\] died while rank 0 "
                                                         r"waited for them \(rank 2 = worker 2"):
        comm._check_peers_alive("strategy.reduce(SUM)", 3)
    assert isinstance(communicator.RankDiedError("m", [2], "c"), tf.errors.UnavailableError)


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


def test_bucketed_gradients_equal_a_float64_sum_and_survive_later_calls():
    """Real MPI, several buckets of mixed dtypes and non-contiguous gradients: each result is
    NumPy's float64 sum of both ranks' gradients rounded once, and a result held across two
    later calls keeps its value (bucket buffers are reused only once nothing holds them)."""
    run = mpi_helpers.mpiexec(2, "allreduce_sum.py", "check", timeout=120)
    assert run.returncode == 0 and run.stdout.count("ok") == 2, run.stdout + run.stderr


@pytest.mark.slow
def test_a_rank_stalled_before_the_gradient_buckets_is_named():
    run = mpi_helpers.mpiexec(2, "allreduce_sum.py", "stall", timeout=60)
    text = run.stdout + run.stderr
    assert run.returncode != 0 and "CollectiveTimeoutError" in text, text
    assert "rank(s) [1] never joined" in text and "gradient all-reduce (bucket 1 of" in text
