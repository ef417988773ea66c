"""Parallel map with cheap functions: workers hand elements over in chunks; semantics unchanged."""

import gc
import threading
import time

import numpy as np
import pytest

from tapeflow.data import AUTOTUNE, Dataset
from tapeflow.data.autotune import StageStats, Tuner
from tapeflow.data.mapping import _CHUNK_TARGET_S, _MAX_CHUNK, _MapRun
from tapeflow.framework import dtypes
from tapeflow.framework.context import state as context_state
from tapeflow.ops import random_ops

N = 3000  # enough elements for the chunk size to grow past one


@pytest.fixture(autouse=True)
def no_thread_left_behind():
    yield
    gc.collect()
    assert [t for t in threading.enumerate() if t.name.startswith("tf.data:")] == []


def test_cheap_map_keeps_order():
    ds = Dataset.range(N).map(lambda x: x + 1, num_parallel_calls=2)
    assert list(ds.as_numpy_iterator()) == list(range(1, N + 1))


@pytest.mark.parametrize(("call_s", "read_s", "expected"), [
    (None, 0.0, 1), (0.1, 0.0, 1), (_CHUNK_TARGET_S / 2, 0.0, 2), (1e-6, 0.0, _MAX_CHUNK),
    (1e-6, 0.015, 1), (_CHUNK_TARGET_S / 4, _CHUNK_TARGET_S / 4, 2)])
def test_chunk_size_follows_measured_read_and_call_cost(call_s, read_s, expected):
    stats = StageStats("ParallelMap(f)")
    run = _MapRun(iter(()), lambda x: x, stats, stage=1, epoch=1, tuner=Tuner())
    if call_s is not None:
        stats.elements = run.index = 100
        stats.record_call(100 * call_s, 100 * call_s)
        run.read_s = 100 * read_s
    assert run._chunk_size() == expected


def test_slow_input_is_streamed_not_chunked():
    """Each element reaches the consumer soon after it is read, not after several more are
    read into a chunk (judged by the order of events, not by timing)."""
    log = []

    def gen():
        for i in range(8):
            time.sleep(0.01)
            log.append(("read", i))
            yield i
    ds = Dataset.from_generator(gen, output_types=dtypes.int64).map(
        lambda x: x + 1, num_parallel_calls=2)
    got = []
    for x in ds:
        got.append(int(x))
        log.append(("got", int(x) - 1))
    assert got == list(range(1, 9))
    early = sum(log.index(("got", i)) < log.index(("read", i + 2)) for i in range(6))
    assert early >= 3   # chunked reading would deliver none before the chunk was read


@pytest.mark.parametrize("parallel", [2, AUTOTUNE])
def test_cheap_map_nondeterministic_yields_every_element_once(parallel):
    ds = Dataset.range(N).map(lambda x: x * 2, num_parallel_calls=parallel, deterministic=False)
    assert sorted(ds.as_numpy_iterator()) == list(range(0, 2 * N, 2))


def test_error_inside_a_chunk_keeps_earlier_elements():
    def parse(x):
        if int(x) == 2500:
            raise ValueError("bad record 2500")
        return x
    got = []
    with pytest.raises(ValueError, match="bad record 2500"):
        for x in Dataset.range(N).map(parse, num_parallel_calls=2):
            got.append(int(x))
    assert got == list(range(2500))


def test_input_error_after_many_elements_surfaces_in_order():
    def gen():
        yield from range(2000)
        raise KeyError("file truncated")
    source = Dataset.from_generator(gen, output_types=dtypes.int64)
    got = []
    with pytest.raises(KeyError, match="file truncated"):
        for x in source.map(lambda x: x, num_parallel_calls=2):
            got.append(int(x))
    assert got == list(range(2000))


def test_per_element_seeds_match_sequential_map():
    def noisy(x):
        return random_ops.uniform([], dtype=dtypes.float64)
    try:
        random_ops.set_seed(5)
        seq = list(Dataset.range(N).map(noisy).as_numpy_iterator())
        random_ops.set_seed(5)
        par = list(Dataset.range(N).map(noisy, num_parallel_calls=2).as_numpy_iterator())
    finally:
        random_ops.set_seed(None)
    np.testing.assert_array_equal(seq, par)
    assert len(set(seq)) == N
    assert context_state.seed_offset is None


def test_abandoning_a_cheap_map_midway_stops_workers():
    it = iter(Dataset.range(10**9).map(lambda x: x + 1, num_parallel_calls=2))
    assert [int(next(it)) for _ in range(N)] == list(range(1, N + 1))
    del it
