"""Kernels split over cores (``kernels.parallel.split``) give what one thread gives."""

import numpy as np
import pytest

from tapeflow.framework import threads
from tapeflow.kernels import activations, concat, conv, parallel, pool

rng = np.random.default_rng(21)


def _split_everything(monkeypatch) -> list:
    """Three uneven slices for any size of work; returns the list of slice counts used."""
    monkeypatch.setattr(threads, "_intra_op", 3)
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(parallel, "idle_core", lambda: True)
    parts = []
    real = parallel.parts_for
    monkeypatch.setattr(parallel, "parts_for", lambda n, nbytes: parts.append(real(n, nbytes))
                        or parts[-1])
    return parts


@pytest.mark.parametrize("k, s, padding", [(2, 2, "VALID"), (3, 2, "SAME"), (3, 1, "SAME")])
def test_pool_kernels_split_by_images(monkeypatch, k, s, padding):
    x = rng.standard_normal((5, 9, 8, 4)).astype(np.float32)
    geo = conv.geometry((9, 8), (k, k), (s, s), (1, 1), padding)
    g = rng.standard_normal((5, geo.ho, geo.wo, 4)).astype(np.float32)

    def run():
        out = pool.max_pool(x, geo)
        return [out, pool.max_pool_grad(x, out, g, geo), pool.avg_pool(x, geo),
                pool.avg_pool_grad(g, geo)]

    whole = run()
    parts = _split_everything(monkeypatch)
    for a, b in zip(whole, run()):
        np.testing.assert_array_equal(a, b)
    assert parts == [3, 3, 3, 3]


def test_concat_and_relu_grad_split_by_rows(monkeypatch):
    a = rng.standard_normal((7, 3, 5)).astype(np.float32)
    b = rng.standard_normal((7, 3, 2)).astype(np.float32)
    g, out = rng.standard_normal((7, 3, 5)), np.maximum(rng.standard_normal((7, 3, 5)), 0)
    whole = [concat.concat((a, b), -1), activations.relu_grad(g, out)]
    parts = _split_everything(monkeypatch)
    for x, y in zip(whole, [concat.concat((a, b), -1), activations.relu_grad(g, out)]):
        np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(whole[0], np.concatenate((a, b), -1))
    assert parts == [3, 3]


def test_small_work_and_a_busy_machine_stay_on_one_thread(monkeypatch):
    monkeypatch.setattr(threads, "_intra_op", 2)
    assert parallel.parts_for(1000, parallel.PARALLEL_MIN_BYTES - 1) == 1
    monkeypatch.setattr(parallel, "idle_core", lambda: False)
    assert parallel.parts_for(1000, parallel.PARALLEL_MIN_BYTES) == 1
    monkeypatch.setattr(parallel, "idle_core", lambda: True)
    assert parallel.parts_for(1000, parallel.PARALLEL_MIN_BYTES) == 2
    assert parallel.parts_for(1, parallel.PARALLEL_MIN_BYTES) == 1
    seen = []
    assert parallel.split(10, parallel.PARALLEL_MIN_BYTES,
                          lambda lo, hi: seen.append((lo, hi)) or hi - lo) == [5, 5]
    assert sorted(seen) == [(0, 5), (5, 10)]
