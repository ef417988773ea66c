"""Background threads: parallel map/interleave order, overlap, errors, shutdown, autotune."""

import gc
import threading
import time
import traceback

import numpy as np
import pytest

from tapeflow.data import AUTOTUNE, Dataset
from tapeflow.framework import dtypes
from tapeflow.framework.context import state as context_state


def pipeline_threads():
    return [t for t in threading.enumerate() if t.name.startswith("tf.data:")]


@pytest.fixture(autouse=True)
def no_thread_left_behind():
    yield
    gc.collect()
    assert pipeline_threads() == []


def slow_identity(x):
    time.sleep(0.002 * (int(x) % 3))  # later elements sometimes finish first
    return x


def test_parallel_map_keeps_order():
    ds = Dataset.range(40).map(slow_identity, num_parallel_calls=4)
    assert list(ds.as_numpy_iterator()) == list(range(40))


def test_parallel_map_nondeterministic_yields_same_set():
    ds = Dataset.range(40).map(slow_identity, num_parallel_calls=4, deterministic=False)
    assert sorted(ds.as_numpy_iterator()) == list(range(40))


def test_parallel_map_runs_concurrently():
    """Calls overlap: several are running at once (counted, so a loaded machine cannot make
    the test fail by being slow)."""
    running, most, lock = [0], [0], threading.Lock()

    def sleepy(x):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.02)
        with lock:
            running[0] -= 1
        return x

    assert sorted(int(x) for x in Dataset.range(8).map(sleepy, num_parallel_calls=8)) == \
        list(range(8))
    assert most[0] >= 2


def test_prefetch_overlaps_producer_and_consumer():
    """The producer makes the next element while the consumer works on the current one."""
    log = []

    def gen():
        for i in range(5):
            time.sleep(0.03)
            log.append(("made", i))
            yield i

    ds = Dataset.from_generator(gen, output_types=dtypes.int64).prefetch(1)
    for x in ds:
        log.append(("start", int(x)))
        time.sleep(0.06)   # twice the producer's time, so with overlap i+1 is made well before
        log.append(("done", int(x)))
    # without overlap, element i+1 would only be made after the consumer is done with i
    assert any(log.index(("made", i + 1)) < log.index(("done", i)) for i in range(4))


def test_map_error_surfaces_with_user_traceback():
    def parse(x):
        if int(x) == 3:
            raise ValueError("bad record 3")
        return x
    for parallel in (None, 2):
        ds = Dataset.range(6).map(parse, num_parallel_calls=parallel).prefetch(2)
        got = []
        with pytest.raises(ValueError, match="bad record 3") as info:
            for x in ds:
                got.append(int(x))
        assert got == [0, 1, 2]
        frames = [f.name for f in traceback.extract_tb(info.value.__traceback__)]
        assert "parse" in frames


def test_generator_error_surfaces_through_interleave():
    def gen():
        yield 1
        raise KeyError("file gone")
    ds = Dataset.range(2).interleave(
        lambda _: Dataset.from_generator(gen, output_types=dtypes.int64), cycle_length=2,
        num_parallel_calls=2)
    with pytest.raises(KeyError, match="file gone"):
        list(ds)


def test_abandoned_iterators_stop_their_threads():
    infinite = (Dataset.range(10).repeat().map(lambda x: x + 1, num_parallel_calls=3)
                .interleave(lambda x: Dataset.from_tensors(x).repeat(3), cycle_length=2,
                            num_parallel_calls=2)
                .prefetch(4))
    it = iter(infinite)
    next(it)
    assert len(pipeline_threads()) >= 5
    del it
    gc.collect()
    assert pipeline_threads() == []
    for _x in infinite:  # break out of a for loop: same thing
        break
    del _x


def test_explicit_close_joins_threads():
    it = iter(Dataset.range(100).prefetch(2))
    next(it)
    it.close()
    assert pipeline_threads() == []


def test_parallel_interleave_reads_datasets_concurrently():
    running, most, lock = [0], [0], threading.Lock()

    def slow_file(i):
        def gen():
            with lock:
                running[0] += 1
                most[0] = max(most[0], running[0])
            time.sleep(0.03)
            with lock:
                running[0] -= 1
            yield i
        return Dataset.from_generator(gen, output_types=dtypes.int64)
    out = list(Dataset.range(4).interleave(slow_file, cycle_length=4,
                                           num_parallel_calls=4).as_numpy_iterator())
    assert out == [0, 1, 2, 3]
    assert most[0] >= 2   # files were read at the same time


def test_seed_offset_is_per_element_and_thread_independent():
    def record(x):
        return np.int64(context_state.seed_offset)
    seq = list(Dataset.range(10).map(record).as_numpy_iterator())
    assert len(set(seq)) == 10
    ds = Dataset.range(10).map(record, num_parallel_calls=4)
    first, second = list(ds.as_numpy_iterator()), list(ds.as_numpy_iterator())
    assert len(set(first)) == 10 and first != second  # a new epoch gets new seeds
    assert context_state.seed_offset is None


def test_autotune_report_explains_choices():
    def work(x):
        time.sleep(0.003)
        return x
    ds = Dataset.range(30).map(work, num_parallel_calls=AUTOTUNE).prefetch(AUTOTUNE)
    for _ in ds:
        time.sleep(0.001)
    report = ds.autotune_report()
    names = [s.name for s in report.stages]
    assert names == ["Prefetch", "ParallelMap(test_autotune_report_explains_choices.<locals>.work)"]
    pmap = report.stages[1]
    assert pmap.parallelism_autotuned and pmap.parallelism >= 2
    assert pmap.cpu_share < 0.5  # sleeping work is recognised as not CPU-bound
    text = str(report)
    assert "bottleneck:" in text and "ParallelMap" in text and "parallelism" in text


def test_autotune_report_names_consumer_when_pipeline_keeps_up():
    ds = Dataset.range(40).prefetch(AUTOTUNE)   # enough steps that starting up is a small share
    for _ in ds:
        time.sleep(0.01)  # a slow training step: the buffer is always full when asked
    assert "consumer" in ds.autotune_report().bottleneck


def test_random_ops_in_map_are_per_element_deterministic():
    from tapeflow.ops import random_ops

    def noisy(x):
        return random_ops.uniform([])
    try:
        random_ops.set_seed(3)
        seq = list(Dataset.range(12).map(noisy).as_numpy_iterator())
        random_ops.set_seed(3)
        par = list(Dataset.range(12).map(noisy, num_parallel_calls=4).as_numpy_iterator())
        random_ops.set_seed(3)
        shuffled = list(Dataset.range(12).shuffle(12).as_numpy_iterator())
        random_ops.set_seed(3)
        assert list(Dataset.range(12).shuffle(12).as_numpy_iterator()) == shuffled
    finally:
        random_ops.set_seed(None)
    assert seq == par and len(set(seq)) == 12
