"""`map(use_processes=True)`: worker processes, shared-memory transport, order, seeds, errors,
shutdown. Each test iterates one pool over a few elements (a pool starts in ~0.1 s once the
fork server is up)."""

import gc
import multiprocessing
import os
import pickle
import threading
import time

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.data import AUTOTUNE, Dataset, process_pool, shm
from tapeflow.framework import errors


def shm_blocks():
    """Shared-memory blocks of this test process's pipelines (Linux lists them in /dev/shm)."""
    if not os.path.isdir("/dev/shm"):
        return set()
    return {n for n in os.listdir("/dev/shm") if n.startswith(shm.prefix())}


@pytest.fixture(autouse=True)
def no_process_or_block_left_behind():
    yield
    gc.collect()
    assert multiprocessing.active_children() == []
    assert shm_blocks() == set()


def features(x):
    """A dict element with arrays of several dtypes and a string leaf."""
    n = int(x)
    return {"image": tf.fill([3, 4], tf.cast(x, tf.float32)),
            "ids": tf.range(n, dtype=tf.int32),
            "name": tf.constant(f"item-{n}")}


def sleepy_pid(x):
    time.sleep(0.03)
    return x, os.getpid()


def sleepy_reversed(x):
    time.sleep(0.01 * (5 - int(x) % 5))  # later elements finish first
    return x


def noisy(x):
    return tf.random.uniform([3]), tf.random.normal([2], seed=7)


def fails_on_three(x):
    if int(x) == 3:
        raise ValueError(f"element {int(x)} is bad")
    return x


class LockedError(Exception):
    """An exception that cannot be pickled (it holds a lock)."""

    def __init__(self, message):
        super().__init__(message)
        self.lock = threading.Lock()


def raises_unpicklable(x):
    raise LockedError(f"cannot ship element {int(x)}")


def dies(x):
    os._exit(3)


@tf.function
def traced_double(x):
    return x * 2


def test_top_level_tf_function_runs_traced_in_the_workers():
    ds = Dataset.range(4).map(traced_double, num_parallel_calls=2, use_processes=True)
    assert list(ds.as_numpy_iterator()) == [0, 2, 4, 6]


def test_values_structures_and_dtypes_round_trip():
    ds = Dataset.range(5).map(features, num_parallel_calls=2, use_processes=True)
    out = list(ds.as_numpy_iterator())
    assert len(out) == 5
    for n, e in enumerate(out):
        np.testing.assert_array_equal(e["image"], np.full((3, 4), n, np.float32))
        assert e["image"].dtype == np.float32
        np.testing.assert_array_equal(e["ids"], np.arange(n, dtype=np.int32))
        assert e["name"] == f"item-{n}".encode()
    assert ds.element_spec["image"].shape == (3, 4)


def test_runs_on_several_processes_in_input_order():
    ds = Dataset.range(8).map(sleepy_pid, num_parallel_calls=2, use_processes=True)
    out = list(ds.as_numpy_iterator())
    assert [int(x) for x, _ in out] == list(range(8))
    pids = {int(p) for _, p in out}
    assert len(pids) == 2 and os.getpid() not in pids
    report = str(ds.autotune_report())
    assert "ProcessMap(sleepy_pid)" in report


def slow_first(x):
    time.sleep(0.3 if int(x) == 0 else 0.0)
    return x


def test_results_waiting_behind_a_slow_element_are_bounded():
    ds = Dataset.range(50).map(slow_first, num_parallel_calls=2, use_processes=True)
    assert list(ds.as_numpy_iterator()) == list(range(50))
    stage = next(s for s in ds.autotune_report().stages if s.name.startswith("ProcessMap"))
    assert stage.peak_buffered_bytes <= 4 * 8  # 2 per worker, int64 scalars


def test_nondeterministic_yields_every_element():
    ds = Dataset.range(10).map(sleepy_reversed, num_parallel_calls=2, deterministic=False,
                               use_processes=True)
    assert sorted(ds.as_numpy_iterator()) == list(range(10))


def test_per_element_seeds_match_the_thread_path():
    tf.random.set_seed(11)
    threads = list(Dataset.range(6).map(noisy, num_parallel_calls=2).as_numpy_iterator())
    tf.random.set_seed(11)
    procs = list(Dataset.range(6).map(noisy, num_parallel_calls=AUTOTUNE,
                                      use_processes=True).as_numpy_iterator())
    for (tu, tn), (pu, pn) in zip(threads, procs, strict=True):
        np.testing.assert_array_equal(tu, pu)
        np.testing.assert_array_equal(tn, pn)
    assert not np.array_equal(procs[0][0], procs[1][0])  # each element has its own stream


def test_exception_surfaces_with_worker_traceback():
    ds = Dataset.range(6).map(fails_on_three, num_parallel_calls=2, use_processes=True)
    seen = []
    with pytest.raises(ValueError, match="element 3 is bad") as info:
        for x in ds:
            seen.append(int(x))
    assert seen == [0, 1, 2]  # deterministic: the error comes in its element's place
    notes = "\n".join(info.value.__notes__)
    assert "map function fails_on_three" in notes
    assert 'raise ValueError(f"element {int(x)} is bad")' in notes


def test_unpicklable_exception_arrives_as_unknown_error_with_its_text():
    ds = Dataset.range(2).map(raises_unpicklable, num_parallel_calls=1, use_processes=True)
    with pytest.raises(errors.UnknownError, match="LockedError: cannot ship element 0") as info:
        list(ds)
    assert "raise LockedError" in "\n".join(info.value.__notes__)


def test_dead_worker_is_reported():
    ds = Dataset.range(4).map(dies, num_parallel_calls=1, use_processes=True)
    with pytest.raises(errors.UnknownError, match="dies.*exited unexpectedly with code 3"):
        list(ds)


def test_failed_pool_start_stops_the_workers_already_started(monkeypatch):
    real = process_pool._context()

    def refuse():
        raise OSError("no more processes")

    class SecondStartFails:
        Pipe = staticmethod(real.Pipe)
        get_start_method = staticmethod(real.get_start_method)

        @staticmethod
        def Process(**kwargs):
            proc = real.Process(**kwargs)
            if kwargs["name"].endswith("-1"):
                proc.start = refuse
            return proc

    monkeypatch.setattr(process_pool, "_context", SecondStartFails)
    with pytest.raises(OSError, match="no more processes"):
        list(Dataset.range(4).map(sleepy_pid, num_parallel_calls=2, use_processes=True))
    # the fixture checks that worker 0 was stopped and no block is left


def test_unpicklable_function_is_named():
    def local_fn(x):
        return x
    with pytest.raises(TypeError, match=r"(?s)<lambda> cannot be pickled.*test_process_map\.py"):
        Dataset.range(3).map(lambda x: x, use_processes=True)
    with pytest.raises(TypeError, match="local_fn cannot be pickled"):
        Dataset.range(3).map(local_fn, use_processes=True)


def test_abandoned_iterator_stops_its_pool():
    it = iter(Dataset.range(100).map(sleepy_pid, num_parallel_calls=2, use_processes=True))
    next(it)
    assert len(multiprocessing.active_children()) == 2
    assert shm_blocks()  # elements and results are in shared memory
    del it
    gc.collect()
    assert multiprocessing.active_children() == []


def test_closed_iterator_stops_its_pool_at_once():
    it = iter(Dataset.range(100).map(sleepy_pid, num_parallel_calls=2, use_processes=True)
              .batch(2).prefetch(1))
    first = next(it)
    assert [int(v) for v in first[0]] == [0, 1]
    it.close()
    assert multiprocessing.active_children() == []


def test_shared_memory_carries_the_arrays_not_the_pipe():
    element = {"big": np.arange(250_000, dtype=np.float32), "small": np.int64(3) * np.ones(())}
    arena, attached = shm.Arena(keep=1), shm.Attachments(keep=1)
    try:
        name, layout = shm.write(element, arena)
        assert len(pickle.dumps(layout)) < 1000  # what goes through the pipe
        back = shm.read(name, layout, attached)
        np.testing.assert_array_equal(back["big"], element["big"])
        assert back["small"].shape == () and back["small"] == 3
        arena.give_back(name)
        assert shm.write(element, arena)[0] == name  # a returned block is reused
        assert shm.write(element, arena)[0] != name  # one still in use is not
    finally:
        attached.close()
        arena.close()


def test_empty_arrays_need_no_block():
    arena = shm.Arena()
    name, layout = shm.write((np.zeros((0, 3), np.float64),), arena)
    assert name is None
    (back,) = shm.read(None, layout, shm.Attachments())
    assert back.shape == (0, 3) and back.dtype == np.float64
