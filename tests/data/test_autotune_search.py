"""AUTOTUNE's parallelism follows measured throughput (autotune.ParallelismSearch): steps up are
kept only when elements/s rose, undone otherwise, and idle workers are given back. The map
functions wait without using the CPU (sleep, a lock), so the outcomes do not depend on how busy
the machine is."""

import threading
import time

import tapeflow as tf


def stage_of(it):
    return next(s for s in it.autotune_report().stages if s.name.startswith("ParallelMap"))


def run(ds, consumer_s=0.0):
    options = tf.data.Options()
    options.autotune.cpu_budget = 2
    it = iter(ds.with_options(options))
    n = 0
    for _ in it:
        n += 1
        if consumer_s:
            time.sleep(consumer_s)
    return n, stage_of(it)


def test_parallelism_grows_while_more_workers_raise_throughput():
    def wait(x):                   # I/O-like: more workers, more elements per second
        time.sleep(0.004)
        return x

    n, stage = run(tf.data.Dataset.range(500).map(wait, num_parallel_calls=tf.data.AUTOTUNE))
    assert n == 500
    assert stage.parallelism >= 4, stage.notes     # from 2: only kept steps raise it


def test_steps_that_do_not_raise_throughput_are_undone():
    lock = threading.Lock()

    def serial(x):                 # one call at a time, however many workers: no gain
        with lock:
            time.sleep(0.003)
        return x

    n, stage = run(tf.data.Dataset.range(500).map(serial, num_parallel_calls=tf.data.AUTOTUNE))
    assert n == 500
    assert stage.parallelism <= 4, stage.notes   # growing on "consumer waited" alone: 64
    assert any(note.startswith("parallelism ") for note in stage.notes), stage.notes


def test_idle_workers_are_given_back():
    def quick(x):
        time.sleep(0.0005)
        return x

    ds = tf.data.Dataset.range(60).map(quick, num_parallel_calls=tf.data.AUTOTUNE)
    n, stage = run(ds, consumer_s=0.01)      # a slow training step: the map keeps up easily
    assert n == 60
    assert stage.parallelism == 1, stage.notes
    assert any("-> 1" in note for note in stage.notes)


def test_a_fixed_parallelism_is_left_alone():
    def wait(x):
        time.sleep(0.002)
        return x

    n, stage = run(tf.data.Dataset.range(100).map(wait, num_parallel_calls=3))
    assert n == 100 and stage.parallelism == 3 and not stage.notes
