"""tf.data benchmarks: seed 004's ArtificialDataset pipelines, iterator start-up, MNIST throughput.

Run: python benchmarks/bench_data.py   (prints seconds next to the ideal overlapped bounds)
     python benchmarks/bench_data.py --processes   (only threads vs processes for a Python map)
     python benchmarks/bench_data.py --traced      (only eager vs tf.function map functions)
     python benchmarks/bench_data.py --handoff     (only parallel map's per-element overhead)
     python benchmarks/bench_data.py --service     (only tf.data service: 1 vs 2 data workers)
"""

from __future__ import annotations

import os
import statistics
import sys
import threading
import time

import numpy as np

import tapeflow as tf
import tapeflow.data as tfdata
from tapeflow.datasets import load_mnist_5k
from tapeflow.framework import dtypes

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import spread, spread_text  # noqa: E402

AUTOTUNE = tfdata.experimental.AUTOTUNE


class ArtificialDataset(tfdata.Dataset):
    """Seed 004, verbatim: 0.03 s to open, 0.015 s per sample."""

    def _generator(num_samples):
        # Opening the file
        time.sleep(0.03)

        for sample_idx in range(num_samples):
            # Reading data (line, record) from the file
            time.sleep(0.015)

            yield (sample_idx,)

    def __new__(cls, num_samples=3):
        return tfdata.Dataset.from_generator(
            cls._generator,
            output_types=dtypes.int64,
            output_shapes=(1,),
            args=(num_samples,)
        )


def benchmark(dataset, num_epochs=2) -> float:
    """Seed 004's training loop: 0.01 s per step."""
    start_time = time.perf_counter()
    for _epoch_num in range(num_epochs):
        for _sample in dataset:
            # Performing a training step
            time.sleep(0.01)
    return time.perf_counter() - start_time


def _s(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds:.3f}s"


def median_of(fn, repeats: int = 5) -> float:
    fn()  # warm-up
    return statistics.median(fn() for _ in range(repeats))


def python_work(x):
    """A pure-Python map function (~5 ms of bytecode per element): the GIL serializes threads."""
    total = 0
    for i in range(70_000):
        total += i * i % 7
    return x + total


def identity(x):
    return x


def threads_vs_processes(n: int = 64) -> None:
    """Seconds per epoch of a Python-heavy map: sequential, 2 threads, 2 processes (the epoch
    includes starting the iterator's process pool; its cost is shown separately)."""
    start = time.perf_counter()
    python_work(0)
    per_call = time.perf_counter() - start

    seq_cores: list[float] = []   # CPU seconds per wall second: the sequential runs
    proc_cores: list[float] = []  # and the worker processes (their CPU time, from autotune)

    def epoch(**map_kwargs) -> float:
        ds = tfdata.Dataset.range(n).map(python_work, **map_kwargs)
        start, cpu = time.perf_counter(), time.process_time()
        for _ in ds:
            pass
        wall = time.perf_counter() - start
        if not map_kwargs:
            seq_cores.append((time.process_time() - cpu) / wall)
        if map_kwargs.get("use_processes"):
            proc_cores.append(ds.autotune_report().stages[0].cpu_s / wall)
        return wall

    def pool_start() -> float:
        start = time.perf_counter()
        for _ in tfdata.Dataset.range(2).map(identity, num_parallel_calls=2, use_processes=True):
            pass
        return time.perf_counter() - start

    modes = ({}, {"num_parallel_calls": 2}, {"num_parallel_calls": 2, "use_processes": True})
    times: list[list[float]] = [[], [], []]
    for _ in range(6):  # the modes take turns, so a change in machine load hits all of them
        for kwargs, runs in zip(modes, times):
            runs.append(epoch(**kwargs))
    seq, thr, proc = (statistics.median(runs[1:]) for runs in times)  # first run: warm-up
    print(f"\npure-Python map, {n} elements x {per_call * 1e3:.1f} ms, per epoch (median of 5):")
    print(f"  sequential map           {seq:.3f}s")
    print(f"  2 threads                {thr:.3f}s   speed-up x{seq / thr:.2f}")
    print(f"  2 processes (shm)        {proc:.3f}s   speed-up x{seq / proc:.2f}   "
          f"processes vs threads x{thr / proc:.2f}")
    print(f"  process pool start-up + 2 trivial elements: {median_of(pool_start) * 1e3:.1f} ms")
    print(f"  cores this program got: sequential {statistics.median(seq_cores):.2f}, 2 processes "
          f"{statistics.median(proc_cores):.2f} (load average {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} cores; processes win only when the scheduler gives more than one)")


def normalize(image, label):
    """A typical small-op map function (MNIST preprocessing)."""
    image = (tf.cast(image, tf.float32) / 255.0 - 0.5) * 2.0
    return tf.reshape(image, [-1]), tf.one_hot(tf.cast(label, tf.int32), 10)


def eager_vs_traced() -> None:
    """Why map functions run eagerly unless the user passes a tf.function: the speed a traced
    function would bring, measured (random ops in a traced function lose per-element seeds)."""
    (x, y), _ = load_mnist_5k()
    source = tfdata.Dataset.from_tensor_slices((x, y))
    traced = tf.function(normalize)
    print(f"\nsmall-op map over {len(x)} MNIST images, seconds per epoch (median of 3):")
    for label, kwargs in (("sequential", {}), ("2 threads", {"num_parallel_calls": 2})):
        eager = median_of(lambda k=kwargs: _epoch(source.map(normalize, **k)), 3)
        graph = median_of(lambda k=kwargs: _epoch(source.map(traced, **k)), 3)
        print(f"  {label:<11} eager {eager:.3f}s   tf.function {graph:.3f}s   "
              f"traced speed-up x{eager / graph:.2f}")
    gil_floor()


def plain_threads(fn, args: list, n_threads: int) -> float:
    """Seconds to call `fn` on every element of `args` from `n_threads` plain threads (no
    tf.data): the floor the GIL sets for a thread-parallel map of the same function."""
    parts = [args[i::n_threads] for i in range(n_threads)]

    def work(part: list) -> None:
        for a in part:
            fn(*a)
    threads = [threading.Thread(target=work, args=(part,)) for part in parts]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - start


def gil_floor() -> None:
    """The same MNIST normalize on 1 vs 2 plain threads: how much the GIL alone costs."""
    (x, y), _ = load_mnist_5k()
    args = [(tf.constant(a), tf.constant(b)) for a, b in zip(x, y)]
    one = median_of(lambda: plain_threads(normalize, args, 1), 3)
    two = median_of(lambda: plain_threads(normalize, args, 2), 3)
    print(f"  no tf.data, plain threads: 1 thread {one:.3f}s   2 threads {two:.3f}s   "
          f"(2 threads / 1 = x{two / one:.2f}: the GIL's share, not the map's)")


def handoff_cost(n: int = 20_000) -> None:
    """Per-element cost of a trivial map, sequential vs on worker threads (the hand-off)."""
    print(f"\nDataset.range({n}).map(lambda x: x + 1), microseconds per element (median of 5):")
    base = None
    for label, kwargs in (("sequential", {}), ("2 threads", {"num_parallel_calls": 2}),
                          ("AUTOTUNE", {"num_parallel_calls": AUTOTUNE})):
        ds = tfdata.Dataset.range(n).map(lambda x: x + 1, **kwargs)
        cpu: list[float] = []

        def run(ds=ds, cpu=cpu) -> float:
            start, c0 = time.perf_counter(), time.process_time()
            for _ in ds:
                pass
            cpu.append(time.process_time() - c0)
            return time.perf_counter() - start
        wall = median_of(run) / n * 1e6
        cpu_us = statistics.median(cpu[1:]) / n * 1e6
        base = base or wall
        print(f"  {label:<11} wall {wall:6.1f} us   CPU {cpu_us:6.1f} us   "
              f"vs sequential x{wall / base:.2f}")


def python_ms(x):
    """~2 ms of pure-Python work per element (a data-service worker runs it in its process)."""
    total = 0
    for i in range(25_000):
        total += i * i % 7
    return x + total


def data_service(n: int = 600, rounds: int = 5) -> None:
    """Elements per second of a Python-heavy pipeline: in this process, and on the tf.data
    service (Ray actors on this machine) with 1 and with 2 data workers, rounds alternating."""
    service = tfdata.experimental.service
    servers = []

    def dispatcher_with(workers: int) -> str:
        d = service.DispatchServer()
        servers.append(d)
        for _ in range(workers):
            servers.append(service.WorkerServer(
                service.WorkerConfig(dispatcher_address=d.target.split("://")[1])))
        return d.target

    options = tfdata.Options()
    options.experimental_optimization.map_and_batch_fusion = False   # one call per element
    ds = tfdata.Dataset.range(n).map(python_ms).batch(8).with_options(options)
    cases = {"in this process (map, sequential)": ds,
             "service, 1 data worker": ds.apply(service.distribute(
                 "distributed_epoch", dispatcher_with(1))),
             "service, 2 data workers": ds.apply(service.distribute(
                 "distributed_epoch", dispatcher_with(2)))}
    rates: dict[str, list[float]] = {k: [] for k in cases}
    for r in range(rounds + 1):
        for name, case in cases.items():
            seconds = _epoch(case)
            if r:   # the first round warms up (worker imports, first job)
                rates[name].append(n / seconds)
    print(f"\ntf.data service, Python map of ~2 ms x {n} elements, batch(8), distributed_epoch "
          f"(median of {rounds} alternating rounds; load average {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} cores):")
    base = statistics.median(rates["service, 1 data worker"])
    for name, values in rates.items():
        rate = statistics.median(values)
        lo, _, hi = spread(values)
        print(f"  {name:<36}{rate:>9,.0f} elements/s (min {lo:,.0f}, p90 {hi:,.0f})   "
              f"x{rate / base:.2f} of 1 worker")
    for s in reversed(servers):
        s.stop()


def _epoch(ds) -> float:
    start = time.perf_counter()
    for _ in ds:
        pass
    return time.perf_counter() - start


def main() -> None:
    if "--processes" in sys.argv:
        threads_vs_processes()
        return
    if "--traced" in sys.argv:
        eager_vs_traced()
        return
    if "--handoff" in sys.argv:
        handoff_cost()
        return
    if "--service" in sys.argv:
        data_service()
        return
    cases = [
        ("naive (no overlap: sum)", lambda: ArtificialDataset(), 0.210, 0.2747, None),
        ("prefetch", lambda: ArtificialDataset().prefetch(AUTOTUNE), 0.170, 0.2035, 0.230),
        ("sequential interleave", lambda: tfdata.Dataset.range(5).interleave(ArtificialDataset),
         None, 0.9094, None),
        ("parallel interleave", lambda: tfdata.Dataset.range(5).interleave(
            ArtificialDataset, num_parallel_calls=AUTOTUNE), 0.390, 0.7139, 0.592),
    ]
    print(f"{'pipeline':<24}{'tapeflow':>10}{'ideal':>9}{'ratio':>8}{'seed TF':>9}{'TF here':>9}"
          f"   tapeflow min/median/p90 s")
    for name, make, ideal, seed_tf, tf_here in cases:
        runs = [benchmark(make()) for _ in range(5)]
        t = statistics.median(runs)
        ratio = f"{t / ideal:.2f}" if ideal else "-"
        print(f"{name:<24}{t:>9.3f}s{_s(ideal):>9}{ratio:>8}{_s(seed_tf):>9}{_s(tf_here):>9}"
              f"   {spread_text(runs, digits=3)}")

    empty = tfdata.Dataset.from_generator(lambda: iter(()), output_types=dtypes.int64)
    n = 2000

    def startup() -> float:
        start = time.perf_counter()
        for _ in range(n):
            for _x in empty:
                pass
        return (time.perf_counter() - start) / n
    runs = [startup() for _ in range(5)]
    print(f"iterator start-up (empty from_generator epoch): {statistics.median(runs) * 1e3:.3f} ms "
          f"(min/median/p90 {spread_text(runs, 1e3, 3)} ms; target < 2 ms; TF ~25 ms)")

    prefetched = tfdata.Dataset.range(0).prefetch(AUTOTUNE)

    def startup_prefetch() -> float:
        start = time.perf_counter()
        for _ in range(200):
            for _x in prefetched:
                pass
        return (time.perf_counter() - start) / 200
    print(f"iterator start-up with a prefetch thread: {median_of(startup_prefetch) * 1e3:.3f} ms")

    (x, y), _ = load_mnist_5k()
    ds = (tfdata.Dataset.from_tensor_slices((x, y)).shuffle(4000, seed=0).batch(64)
          .prefetch(AUTOTUNE))

    def epoch() -> float:
        start = time.perf_counter()
        count = sum(int(b[0].shape[0]) for b in ds)
        return count / (time.perf_counter() - start)
    print(f"MNIST 5k from_tensor_slices.shuffle.batch(64).prefetch: "
          f"{median_of(epoch):,.0f} images/s")
    par = tfdata.Dataset.range(64).map(lambda i: np.sqrt(np.arange(200_000.0)).sum() + float(i),
                                       num_parallel_calls=AUTOTUNE)
    for _ in par:
        pass
    print("\nautotune report of a parallel map (NumPy work):")
    print(par.autotune_report())
    threads_vs_processes()
    eager_vs_traced()
    handoff_cost()


if __name__ == "__main__":
    main()
