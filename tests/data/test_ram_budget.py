"""options.autotune.ram_budget bounds what prefetch and parallel map buffers hold; the report
shows bytes against the budget and which stage the budget held back."""

import time

import numpy as np

import tapeflow as tf

MB = 1 << 20


def big(i):
    return tf.fill([MB // 8], tf.cast(i, tf.float64))   # 1 MiB per element


def run(ram_budget, slow_consumer=0.01):
    ds = (tf.data.Dataset.range(30).map(big, num_parallel_calls=4)
          .prefetch(tf.data.AUTOTUNE))
    options = tf.data.Options()
    options.autotune.ram_budget = ram_budget
    options.experimental_optimization.map_and_batch_fusion = False
    ds = ds.with_options(options)
    it = iter(ds)
    got = []
    for x in it:
        got.append(float(x.numpy()[0]))
        time.sleep(slow_consumer)
    return got, it.autotune_report()


def test_pipeline_stays_within_the_ram_budget():
    got, report = run(3 * MB)
    assert got == [float(i) for i in range(30)]
    # each buffer may always hold one element, so two stages may pass the budget by one each
    assert report.peak_bytes <= 3 * MB + 2 * MB + 4096
    assert any("RAM budget held" in n for s in report.stages for n in s.notes)
    text = str(report)
    assert "peak" in text and "of the 3.0 MiB budget" in text


def test_process_map_stays_within_the_ram_budget():
    """Worker processes: results waiting for the consumer and results in flight count
    against the budget (at the average result size), so fewer elements are sent out."""
    options = tf.data.Options()
    options.autotune.ram_budget = 3 * MB
    ds = tf.data.Dataset.range(16).map(big, num_parallel_calls=4, use_processes=True)
    it = iter(ds.with_options(options))
    got = []
    for x in it:
        got.append(float(x.numpy()[0]))
        time.sleep(0.02)
    assert got == [float(i) for i in range(16)]
    report = it.autotune_report()
    assert report.peak_bytes <= 3 * MB + MB + 4096   # one element past it at most
    assert any("RAM budget held" in n for s in report.stages for n in s.notes)


def test_a_large_budget_lets_buffers_grow():
    _, report = run(1 << 34)
    assert report.peak_bytes > 5 * MB
    assert not any("RAM budget held" in n for s in report.stages for n in s.notes)


def test_cpu_budget_caps_autotuned_parallelism():
    options = tf.data.Options()
    options.autotune.cpu_budget = 1

    def spin(x):
        t = time.thread_time()
        while time.thread_time() - t < 0.002:
            pass
        return x

    ds = tf.data.Dataset.range(60).map(spin, num_parallel_calls=tf.data.AUTOTUNE)
    it = iter(ds.with_options(options))
    assert [int(v) for v in it] == list(range(60))
    stage = next(s for s in it.autotune_report().stages if s.name.startswith("ParallelMap"))
    assert stage.parallelism == 1 and np.isfinite(stage.cpu_share)


def test_memory_cache_counts_against_the_ram_budget():
    """A cache that would pass the budget keeps nothing (later passes recompute, and say so);
    one that fits is counted in the report's bytes and not recomputed."""
    calls = []

    def counted(i):
        calls.append(int(i))
        return big(i)

    def epochs(budget):
        calls.clear()
        options = tf.data.Options()
        options.autotune.ram_budget = budget
        ds = tf.data.Dataset.range(6).map(counted).cache().with_options(options)
        firsts, reports = [], []
        for _ in range(2):
            it = iter(ds)
            firsts.append([float(x.numpy()[0]) for x in it])
            reports.append(it.autotune_report())
        return firsts, reports, list(calls)

    firsts, reports, calls_made = epochs(3 * MB)
    assert firsts == [[float(i) for i in range(6)]] * 2
    assert calls_made == list(range(6)) * 2                    # nothing was cached
    cache = next(s for s in reports[0].stages if s.name == "Cache")
    assert any("not cached" in n for n in cache.notes)
    assert reports[0].peak_bytes <= 3 * MB

    firsts, reports, calls_made = epochs(64 * MB)
    assert firsts == [[float(i) for i in range(6)]] * 2
    assert calls_made == list(range(6))                        # the second pass read the cache
    assert 6 * MB <= reports[1].peak_bytes < 7 * MB            # the cache's bytes, reported
