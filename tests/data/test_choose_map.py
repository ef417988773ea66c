"""`map(..., use_processes=AUTOTUNE)`: threads or processes, chosen by measured throughput.
A map that spends its time in Python bytecode goes to processes (threads take turns on the
GIL); one that releases the GIL (sleeping, like I/O) stays on threads. Order, values, random
seeds and errors are those of the plain parallel map whichever is chosen."""

import ctypes
import os

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.data import AUTOTUNE, Dataset
from tapeflow.framework import errors

needs_two_cores = pytest.mark.skipif((os.cpu_count() or 1) < 2,
                                     reason="processes beat threads only with 2+ cores")


def python_heavy(x):
    """~5 ms of bytecode per call: holds the GIL throughout."""
    total = 0
    for i in range(60_000):
        total += i * i % 7
    return x + total


def holds_the_gil(x):
    """Waits 5 ms inside a C call made *with* the GIL held (ctypes.PyDLL keeps it): to threads
    this is what Python-dominated work is (one call at a time), but it needs no CPU, so the
    measurement does not depend on how busy the machine is."""
    ctypes.PyDLL(None).usleep(5000)
    return x + 1


def releases_the_gil(x):
    """The same 5 ms wait with the GIL released (ctypes.CDLL releases it), as I/O and NumPy
    do: threads run these calls side by side."""
    ctypes.CDLL(None).usleep(5000)
    return x * 2


def noisy(x):
    return tf.cast(x, tf.float32) + tf.random.uniform([])


def fails_at_50(x):
    if int(x) == 50:
        raise ValueError("element 50 is bad")
    return x


def choice(ds) -> str:
    stage = ds.autotune_report().stages[0]
    return stage.name.rsplit("-> ", 1)[1] + " | " + "; ".join(stage.notes)


def test_gil_holding_map_moves_to_processes():
    ds = Dataset.range(200).map(holds_the_gil, num_parallel_calls=4, use_processes=AUTOTUNE)
    assert [int(x) for x in ds] == list(range(1, 201))
    assert choice(ds).startswith("processes | processes: processes/threads x")


def test_gil_releasing_map_stays_on_threads():
    ds = Dataset.range(200).map(releases_the_gil, num_parallel_calls=4, use_processes=AUTOTUNE)
    assert [int(x) for x in ds] == list(range(0, 400, 2))
    assert choice(ds).startswith("threads | threads: processes/threads x")


@pytest.mark.slow
@needs_two_cores
def test_python_heavy_map_moves_to_processes():
    """Real bytecode: processes win when the machine gives this program more than one core
    (on a 2-core machine shared with other busy programs they may not, and threads stay)."""
    ds = Dataset.range(200).map(python_heavy, num_parallel_calls=4, use_processes=AUTOTUNE)
    assert [int(x) for x in ds] == [python_heavy(0) + i for i in range(200)]
    assert choice(ds).startswith("processes | processes: processes/threads x")


def test_unpicklable_function_stays_on_threads():
    ds = Dataset.range(20).map(lambda x: x + 1, num_parallel_calls=2, use_processes=AUTOTUNE)
    assert [int(x) for x in ds] == list(range(1, 21))
    assert "cannot be pickled" in choice(ds)


def test_seeds_and_order_match_the_thread_map_across_the_switch():
    tf.random.set_seed(3)
    try:
        want = [float(x) for x in Dataset.range(120).map(noisy, num_parallel_calls=2)]
        tf.random.set_seed(3)
        got = [float(x) for x in Dataset.range(120).map(noisy, num_parallel_calls=2,
                                                         use_processes=AUTOTUNE)]
    finally:
        tf.random.set_seed(None)
    np.testing.assert_array_equal(got, want)
    assert len(set(got)) == 120


def test_error_in_a_trial_round_comes_after_the_elements_before_it():
    it = iter(Dataset.range(100).map(fails_at_50, num_parallel_calls=2,
                                     use_processes=AUTOTUNE))
    got = []
    with pytest.raises((ValueError, errors.UnknownError), match="element 50 is bad"):
        for x in it:
            got.append(int(x))
    assert got == list(range(50))
