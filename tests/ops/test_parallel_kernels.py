"""Kernels split over cores (``kernels.parallel.split``) give what one thread gives."""

import threading
import time

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


def _idle(monkeypatch, slices: int) -> None:
    monkeypatch.setattr(threads, "_intra_op", slices)
    monkeypatch.setattr(parallel, "idle_core", lambda: True)


def test_split_shares_slices_out_among_helper_threads_in_order(monkeypatch):
    _idle(monkeypatch, 3)
    where = {}

    def work(lo, hi):
        where[lo] = threading.current_thread().name
        time.sleep(0.002)
        return list(range(lo, hi))

    for _ in range(20):  # the helpers are reused call after call
        assert parallel.split(10, 0, work, slices=5) == [[0, 1], [2, 3], [4, 5], [6, 7],
                                                         [8, 9]]
    assert sorted(where) == [0, 2, 4, 6, 8]
    assert where[0] == threading.current_thread().name  # the caller claims the first slice
    assert "tapeflow-kernel" in where.values()


def _join_when_open(stop=lambda: False) -> threading.Thread:
    """Another thread that joins the first split it sees running alone."""
    def joiner():
        while not parallel._open:
            time.sleep(0.0005)
        parallel.join_open(stop)

    thread = threading.Thread(target=joiner, name="joiner")
    thread.start()
    return thread


def test_a_split_running_alone_is_joined_by_an_idle_thread(monkeypatch):
    """A split that found no idle core runs its slices one after another; another thread
    that comes free (``join_open``, the inter-op worker) takes the ones not yet started."""
    _idle(monkeypatch, 2)
    monkeypatch.setattr(parallel, "idle_core", lambda: False)
    where = {}

    def work(lo, hi):
        where[lo] = threading.current_thread().name
        time.sleep(0.01)
        return lo

    joiner = _join_when_open()
    assert parallel.split(8, 0, work, slices=8) == list(range(8))
    joiner.join()
    assert where[0] == "MainThread" and "joiner" in where.values()
    assert not parallel._open


def test_a_joining_thread_stops_between_slices_when_told(monkeypatch):
    _idle(monkeypatch, 2)
    monkeypatch.setattr(parallel, "idle_core", lambda: False)
    where = []

    def work(lo, hi):
        where.append(threading.current_thread().name)
        time.sleep(0.01)
        return lo

    joiner = _join_when_open(stop=lambda: True)  # new work of its own after each slice
    assert parallel.split(8, 0, work, slices=8) == list(range(8))
    joiner.join()
    assert where.count("joiner") == 1


def test_a_joined_slices_error_is_raised_by_the_caller(monkeypatch):
    _idle(monkeypatch, 2)
    monkeypatch.setattr(parallel, "idle_core", lambda: False)

    def work(lo, hi):
        time.sleep(0.01)
        if threading.current_thread().name == "joiner":
            raise ValueError("joined slice failed")
        return lo

    joiner = _join_when_open()
    with pytest.raises(ValueError, match="joined slice failed"):
        parallel.split(8, 0, work, slices=8)
    joiner.join()


def test_split_raises_a_helpers_error_after_every_slice_is_done(monkeypatch):
    _idle(monkeypatch, 3)
    done = []

    def work(lo, hi):
        if lo == 3:
            raise ValueError("slice 1 failed")
        done.append(lo)
        return lo

    with pytest.raises(ValueError, match="slice 1 failed"):
        parallel.split(9, 0, work, slices=3)
    assert sorted(done) == [0, 6]
    assert parallel.split(9, 0, lambda lo, hi: lo, slices=3) == [0, 3, 6]  # helpers free again


def test_a_busy_helper_leaves_the_slice_to_its_caller(monkeypatch):
    """Two threads splitting at once (the main thread's kernel and the inter-op worker's): the
    one that finds the helper claimed runs that slice itself, with the same results."""
    _idle(monkeypatch, 2)
    release = threading.Event()
    inner = []

    def slow(lo, hi):
        if lo > 0:
            release.wait(5)
        return lo

    outer = threading.Thread(target=lambda: inner.append(parallel.split(4, 0, slow, slices=2)))
    outer.start()
    while not parallel._helpers or not parallel._helpers[0]._claim.locked():
        pass
    assert parallel.split(6, 0, lambda lo, hi: (lo, threading.current_thread().name),
                          slices=2) == [(0, "MainThread"), (3, "MainThread")]
    release.set()
    outer.join()
    assert inner == [[0, 2]]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_row_kernels_split_by_rows_same_bits_idle_or_busy(monkeypatch, dtype):
    """Layer norm forward/backward, softmax and its gradient: row slices give the unsplit rows'
    bits (the layer norm's dgamma/dbeta: the same on idle or busy cores, close to unsplit)."""
    from tapeflow.kernels import layer_norm

    x = rng.standard_normal((7, 3, 16)).astype(dtype) * 3
    x[0, 0, :4] = -np.inf  # masked scores
    g = rng.standard_normal((7, 3, 16)).astype(dtype)
    xn = np.nan_to_num(x, neginf=-5.0)
    gamma, beta = rng.standard_normal(16).astype(dtype), rng.standard_normal(16).astype(dtype)

    def run():
        y, mean, inv = layer_norm.forward(xn, gamma, beta, 1e-3)
        s = layer_norm.softmax(x)
        return [y, mean, inv, s, layer_norm.softmax_grad(g, s),
                *layer_norm.backward(g, xn, gamma, mean, inv)]

    whole = run()
    results = {}
    for idle in (True, False):
        parts = _split_everything(monkeypatch)
        monkeypatch.setattr(parallel, "idle_core", lambda idle=idle: idle)
        results[idle] = run()
        assert parts == [3 if idle else 1] * 4
    for a, b, c in zip(whole[:6], results[True], results[False]):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, c)
    for a, b, c in zip(whole[6:], results[True][6:], results[False][6:]):
        np.testing.assert_array_equal(b, c)
        np.testing.assert_allclose(a, b, rtol=1e-5 if dtype == np.float32 else 1e-12)


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs fork")
def test_a_forked_child_forgets_the_open_splits(monkeypatch):
    import os

    monkeypatch.setitem(parallel._open, -1, parallel._Task(lambda lo, hi: lo, [0, 1, 2]))
    pid = os.fork()
    if pid == 0:  # child: a split left open by a parent's thread must not be joined here
        os._exit(0 if not parallel._open else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
