"""Distributed training: MPI all-reduce bandwidth, DenseNet weak scaling, parameter servers.

1. allreduce: the gradient path of MultiWorkerMirroredStrategy (buckets of non-blocking
   all-reduces through the CollectiveBucket ops, deadline checks included) against one raw
   mpi4py ``Allreduce`` of the same bytes, on 2 ranks; bus bandwidth = bytes * 2(n-1)/n / time.
   The two run in alternating rounds in the same processes, after one untimed warm-up of each;
   the ratios are also given over the rounds in which no rank was preempted (its thread's
   CPU time within 5% of the wall time: the waits spin), the fair ones on a shared machine.
2. scaling: images/s of a DenseNet training step (the CLI's DenseNet, MNIST-sized inputs,
   per-worker batch 64, BLAS single-threaded) on 1 worker and on 2 workers; 2 workers
   process twice the images per step. Every rank is bound to one core (``mpiexec -bind-to
   core``), the 1-worker baseline included: without binding it splits its products over both
   cores and the ratio measures that, not the scaling. The 1- and 2-worker jobs alternate, 3
   rounds each; each round's ratio is printed (paired rounds share the background load). Each
   round also runs two independent 1-worker processes at once, one pinned to each core: twice
   the slower one's images/s over one alone is what the machine itself allows a synchronous
   2-worker job (shared memory bandwidth and caches, clock, and whatever else runs on each
   core: a synchronous job goes at its slower rank's pace), so the 2-worker job's share of
   that ceiling is the efficiency of the distribution itself. On a shared machine, whose speed
   drifts between these fresh processes, ``ab_scaling.py --rt`` runs the same jobs warm,
   taking turns (and splits each rank's step into computing and waiting).
3. ps: ParameterServerStrategy steps/s with 1 and 2 workers (MLP, 1 parameter server, local
   Ray), and the recovery after a worker is killed: seconds until Ray has restarted it and
   it has rejoined, and until the next call completes.

    python benchmarks/bench_distribute.py                # all three
    python benchmarks/bench_distribute.py --only allreduce

Run on an idle machine for numbers that mean something; on a shared one, say so (the load
average is printed).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _spread(values: list) -> dict:
    """min / median / p90 of `values` (the spread every timing here is reported with)."""
    xs = sorted(values)
    return {"min": xs[0], "median": statistics.median(xs),
            "p90": xs[min(len(xs) - 1, int(round(0.9 * (len(xs) - 1))))]}


def _fmt(spread: dict, unit: str, digits: int = 1) -> str:
    return (f"min {spread['min']:.{digits}f} / median {spread['median']:.{digits}f} / "
            f"p90 {spread['p90']:.{digits}f} {unit}")


def _env() -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    env["PYTHONPATH"] = os.path.join(ROOT, "src") + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _mpiexec(n: int, *args: str, bind: bool = False) -> dict:
    flags = ["-bind-to", "core"] if bind else []
    out = subprocess.run([shutil.which("mpiexec"), *flags, "-n", str(n), sys.executable,
                          __file__, *args], env=_env(), capture_output=True, text=True,
                         timeout=900)
    if out.returncode:
        raise RuntimeError(out.stdout + out.stderr)
    return json.loads(out.stdout.strip().splitlines()[-1])


# --- 1. all-reduce bandwidth (runs on every rank) ---------------------------------------------
def allreduce_rank(total_mb: float, rounds: int) -> None:
    """The gradient path's time per call against raw ``Allreduce`` of the same bytes, paired
    rounds. The raw call gets a warm output buffer (reused, as the gradient buckets are);
    a raw call into freshly allocated memory, the baseline of the first sessions, pays page
    faults inside MPI and is printed too."""
    from mpi4py import MPI

    import tapeflow as tf
    from tapeflow.distribute import collective_ops

    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    comm = strategy.communicator
    sizes = [int(s) for s in np.random.default_rng(0).integers(1_000, 400_000, size=200)]
    rng = np.random.default_rng(comm.rank)  # same sizes on every rank, different values
    sizes = [int(s * total_mb * 2**20 / 4 / sum(sizes)) for s in sizes]
    grads = [tf.constant(rng.normal(size=s).astype(np.float32)) for s in sizes]
    flat = np.concatenate([g.numpy() for g in grads])
    nbytes = flat.nbytes
    ours, raw, fresh = [], [], []
    kept = []  # per round: did this rank keep its core through both timed calls?

    def timed(fn, into):
        t, cpu = time.perf_counter(), time.thread_time()
        fn()
        wall = time.perf_counter() - t
        into.append(wall)
        return time.thread_time() - cpu >= 0.95 * wall  # waits spin: CPU = wall unless preempted

    out = np.empty_like(flat)
    collective_ops.all_reduce_gradients(grads, comm, 4 << 20)  # warm-up (not timed): the
    MPI.COMM_WORLD.Allreduce(flat, out)  # bucket plan, and first touches of both outputs
    for _ in range(rounds):
        comm.barrier()
        ok = timed(lambda: collective_ops.all_reduce_gradients(grads, comm, 4 << 20), ours)
        comm.barrier()
        ok &= timed(lambda: MPI.COMM_WORLD.Allreduce(flat, out), raw)  # warm, as the buckets
        comm.barrier()
        new = np.empty_like(flat)
        t = time.perf_counter()
        MPI.COMM_WORLD.Allreduce(flat, new)  # into fresh memory (the first sessions' baseline)
        fresh.append(time.perf_counter() - t)
        kept.append(ok)
    kept = [all(k) for k in zip(*MPI.COMM_WORLD.allgather(kept))]
    n = comm.size
    bus = lambda s: nbytes * 2 * (n - 1) / n / s / 1e9  # noqa: E731
    if comm.rank == 0:
        clean = [r / o for o, r, k in zip(ours, raw, kept) if k]
        print(json.dumps({"bytes": nbytes, "tensors": len(grads),
                          "ours_GBps": bus(statistics.median(ours)),
                          "raw_GBps": bus(statistics.median(raw)),
                          "fresh_GBps": bus(statistics.median(fresh)),
                          "ours_ms": _spread([t * 1e3 for t in ours]),
                          "raw_ms": _spread([t * 1e3 for t in raw]),
                          "fresh_ms": _spread([t * 1e3 for t in fresh]),
                          "ratios": _spread([r / o for o, r in zip(ours, raw)]),
                          "clean_ratios": _spread(clean) if clean else None,
                          "clean_rounds": len(clean),
                          "fresh_ratios": _spread([r / o for o, r in zip(ours, fresh)])}))


# --- 2. DenseNet weak scaling (runs on every rank) --------------------------------------------
def densenet_rank(steps: int, per_worker_batch: int, core: int | None = None) -> None:
    if core is not None:  # an independent process pinned to one core (the ceiling runs)
        os.sched_setaffinity(0, {core})
    import tapeflow as tf
    from tapeflow.cli import _build

    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    n = strategy.num_replicas_in_sync
    rng = np.random.default_rng(0)
    x = rng.random((per_worker_batch * n * (steps + 2), 28, 28, 1), dtype=np.float32)
    y = rng.integers(0, 10, size=len(x))
    with strategy.scope():
        model, _ = _build("densenet")
        model.compile(tf.keras.optimizers.Adam(1e-3),
                      tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    times, cpu = [], []

    class Timer(tf.keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            self.start, self.cpu = time.perf_counter(), time.process_time()

        def on_train_batch_end(self, batch, logs=None):
            times.append(time.perf_counter() - self.start)
            cpu.append(time.process_time() - self.cpu)

    model.fit(x, y, batch_size=per_worker_batch * n, epochs=1, shuffle=False, verbose=0,
              callbacks=[Timer()])
    step_s = statistics.median(times[2:])  # after the trace
    if strategy.is_chief:
        print(json.dumps({"workers": n, "step_ms": _spread([t * 1e3 for t in times[2:]]),
                          "cpu_ms": _spread([t * 1e3 for t in cpu[2:]]),
                          "images_per_s": per_worker_batch * n / step_s}))


def _two_alone(job: tuple) -> float:
    """Two independent 1-worker processes run at once, one pinned per core: twice the slower
    one's images/s, what a synchronous 2-worker job (paced by its slower rank) could reach."""
    procs = [subprocess.Popen([sys.executable, __file__, *job, "--core", str(core)], env=_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for core in (0, 1)]
    rates = []
    for p in procs:
        out, err = p.communicate(timeout=900)
        if p.returncode:
            raise RuntimeError(out + err)
        rates.append(json.loads(out.strip().splitlines()[-1])["images_per_s"])
    return 2 * min(rates)


# --- 3. parameter servers (the coordinator process) ------------------------------------------
def _ps_job(workers: int, x: np.ndarray, y: np.ndarray, steps: int) -> dict:
    import signal

    import tapeflow as tf

    spec = tf.train.ClusterSpec({"chief": ["localhost:0"], "ps": ["localhost:1"],
                                 "worker": [f"localhost:{2 + i}" for i in range(workers)]})
    strategy = tf.distribute.experimental.ParameterServerStrategy(
        tf.distribute.cluster_resolver.SimpleClusterResolver(spec))
    coordinator = tf.distribute.experimental.coordinator.ClusterCoordinator(strategy)
    with strategy.scope():
        model = tf.keras.Sequential([tf.keras.layers.Dense(256, "relu", input_shape=(64,)),
                                     tf.keras.layers.Dense(1)])
        optimizer = tf.keras.optimizers.SGD(0.01)

    def dataset_fn(ctx):
        return tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(64)

    it = iter(coordinator.create_per_worker_dataset(
        lambda: strategy.distribute_datasets_from_function(dataset_fn)))

    @tf.function
    def step(iterator):
        def replica(xb, yb):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(model(xb) - yb))
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
            return loss

        xb, yb = next(iterator)
        return strategy.run(replica, args=(xb, yb))

    out = {}
    try:
        for _ in range(20):  # warm-up: functions sent, traced on every worker
            coordinator.schedule(step, args=(it,))
        coordinator.join()
        t = time.perf_counter()
        for _ in range(steps):
            coordinator.schedule(step, args=(it,))
        coordinator.join()
        out["steps_per_s"] = steps / (time.perf_counter() - t)
        out["staleness"] = coordinator.staleness().get("mean", 0.0)
        if workers == 2:
            victim = coordinator.worker_pids()[0]
            values = [coordinator.schedule(step, args=(it,)) for _ in range(steps)]
            while sum(v._done.is_set() for v in values) < 5:
                time.sleep(0.001)
            t = time.perf_counter()
            os.kill(victim, signal.SIGKILL)
            while coordinator.worker_restarts[0] < 1:
                time.sleep(0.01)
            out["rejoin_s"] = time.perf_counter() - t
            coordinator.join()
            out["calls_retried"] = coordinator.retried_calls
    finally:
        coordinator.shutdown()
    return out


def parameter_servers(steps: int) -> dict:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4096, 64)).astype(np.float32)
    y = (x @ rng.normal(size=(64, 1))).astype(np.float32)
    return {workers: _ps_job(workers, x, y, steps) for workers in (1, 2)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", choices=["allreduce", "scaling", "ps"], default=None)
    parser.add_argument("--rank-job", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--core", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--mb", type=float, default=32.0, help="all-reduce MB (default 32)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--ar-rounds", type=int, default=25,
                        help="all-reduce: paired rounds (default 25)")
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--no-bind", action="store_true",
                        help="scaling: let the OS place the ranks (no -bind-to core)")
    args = parser.parse_args()
    if args.rank_job == "allreduce":
        return allreduce_rank(args.mb, args.ar_rounds)
    if args.rank_job == "densenet":
        return densenet_rank(args.steps, 64, args.core)
    print(f"load average: {os.getloadavg()} on {os.cpu_count()} cores")
    if args.only in (None, "allreduce"):
        r = _mpiexec(2, "--rank-job", "allreduce", "--mb", str(args.mb), "--ar-rounds",
                     str(args.ar_rounds))
        print(f"all-reduce of {r['bytes'] / 2**20:.0f} MB in {r['tensors']} tensors on 2 "
              f"ranks: gradient path {r['ours_GBps']:.2f} GB/s bus "
              f"({_fmt(r['ours_ms'], 'ms')}), raw mpi4py Allreduce {r['raw_GBps']:.2f} GB/s "
              f"({_fmt(r['raw_ms'], 'ms')}): {r['ours_GBps'] / r['raw_GBps']:.2f}x "
              f"(paired rounds: {_fmt(r['ratios'], 'x', 2)}); raw into fresh memory "
              f"{r['fresh_GBps']:.2f} GB/s ({_fmt(r['fresh_ms'], 'ms')}): "
              f"{r['ours_GBps'] / r['fresh_GBps']:.2f}x (paired: "
              f"{_fmt(r['fresh_ratios'], 'x', 2)})")
        if r["clean_ratios"]:  # on a shared machine, the rounds that no other process disturbed
            print(f"  rounds in which no rank was preempted ({r['clean_rounds']} of "
                  f"{args.ar_rounds}): {_fmt(r['clean_ratios'], 'x', 2)}")
    if args.only in (None, "scaling"):
        one, two, ceilings = [], [], []
        job = ("--rank-job", "densenet", "--steps", str(args.steps))
        for _ in range(args.rounds):  # alternate, so background load hits both alike
            one.append(_mpiexec(1, *job, bind=not args.no_bind))
            two.append(_mpiexec(2, *job, bind=not args.no_bind))
            ceilings.append(_two_alone(job) / one[-1]["images_per_s"])
            print(f"  round: 1 worker {one[-1]['images_per_s']:.0f} img/s (step "
                  f"{_fmt(one[-1]['step_ms'], 'ms')}), 2 workers "
                  f"{two[-1]['images_per_s']:.0f} img/s (step {_fmt(two[-1]['step_ms'], 'ms')})"
                  f": {two[-1]['images_per_s'] / one[-1]['images_per_s']:.2f}x; two independent "
                  f"processes at once: {ceilings[-1]:.2f}x; CPU time per step (the chief's, "
                  f"waits included) 1 worker {one[-1]['cpu_ms']['median']:.1f} ms, 2 workers "
                  f"{two[-1]['cpu_ms']['median']:.1f} ms", flush=True)
        ips1 = statistics.median(r["images_per_s"] for r in one)
        ips2 = statistics.median(r["images_per_s"] for r in two)
        ratios = [b["images_per_s"] / a["images_per_s"] for a, b in zip(one, two)]
        placement = "unbound" if args.no_bind else "one core per rank"
        print(f"DenseNet weak scaling, per-worker batch 64 ({placement}): "
              f"1 worker {ips1:.0f} img/s, 2 workers {ips2:.0f} img/s: {ips2 / ips1:.2f}x "
              f"(paired ratios {_fmt(_spread(ratios), 'x', 2)}); the machine's ceiling (two "
              f"independent 1-worker processes at once) {_fmt(_spread(ceilings), 'x', 2)}: the "
              f"2-worker job reaches {statistics.median(ratios) / statistics.median(ceilings):.0%}"
              f" of it; load average after: {os.getloadavg()}")
    if args.only in (None, "ps"):
        r = parameter_servers(args.steps * 20)
        print(f"parameter servers (1 ps, MLP 64-256-1, batch 64): "
              f"{r[1]['steps_per_s']:.0f} steps/s with 1 worker, "
              f"{r[2]['steps_per_s']:.0f} with 2 (staleness mean {r[2]['staleness']:.2f}); "
              f"worker killed: rejoined after {r[2]['rejoin_s']:.1f} s, "
              f"{r[2]['calls_retried']} call(s) retried elsewhere")


if __name__ == "__main__":
    main()
