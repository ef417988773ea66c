"""A 2-D (batch x model) mesh over MPI ranks: an MLP whose Dense kernels are split along their
output features matches one process after 20 steps."""

from __future__ import annotations

import numpy as np
import pytest
from tests.distribute import mpi_helpers

import tapeflow as tf


def _weights(tmp_path, b: int, m: int) -> list[np.ndarray]:
    out = tmp_path / f"mesh{b}x{m}.npz"
    run = mpi_helpers.mpiexec(b * m, "mesh_mlp.py", str(out), str(b), str(m)) if b * m > 1 \
        else mpi_helpers.python("mesh_mlp.py", str(out), "1", "1")
    assert run.returncode == 0, run.stdout + run.stderr
    data = np.load(out)
    return [data[k] for k in sorted(data.files, key=lambda k: int(k.split("_")[1]))]


@pytest.mark.parametrize("b,m", [(2, 2), pytest.param(1, 2, marks=pytest.mark.slow),
                                 pytest.param(2, 1, marks=pytest.mark.slow)])
def test_mlp_on_a_mesh_matches_one_process(tmp_path, b, m):
    mesh = _weights(tmp_path, b, m)
    one = _weights(tmp_path, 1, 1)
    assert [w.shape for w in mesh] == [(12, 16), (16,), (16, 8), (8,), (8, 4), (4,)]
    for a, r in zip(mesh, one):
        np.testing.assert_allclose(a, r, rtol=1e-5, atol=1e-5)


def test_mesh_and_layout_on_one_process():
    dtensor = tf.experimental.dtensor
    mesh = dtensor.create_distributed_mesh([("batch", 1), ("model", 1)])
    assert mesh.shape() == [1, 1] and mesh.coords == [0, 0] and mesh.comm("model") is None
    layout = dtensor.Layout.batch_sharded(mesh, "batch", rank=2)
    assert layout.sharding_specs == ["batch", dtensor.UNSHARDED]
    np.testing.assert_array_equal(layout.local(np.arange(6).reshape(3, 2)),
                                  np.arange(6).reshape(3, 2))
    with pytest.raises(ValueError, match="has 4 positions but there are 1 processes"):
        dtensor.Mesh(["batch", "model"], [2, 2], comm=_OneRank())
    with pytest.raises(ValueError, match="no dimension 'x'"):
        dtensor.Layout(["x"], mesh)
    with pytest.raises(ValueError, match="one dimension only"):
        dtensor.Layout(["batch", "batch"], mesh)


class _OneRank:
    def Get_size(self):  # noqa: N802 (mpi4py's spelling)
        return 1

    def Get_rank(self):  # noqa: N802
        return 0
