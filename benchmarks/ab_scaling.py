"""Weak scaling A/B on a shared machine: the DenseNet fit step of 1 worker, of two independent
1-worker processes at once, and of 2-worker jobs from one or two source trees, taking turns.

    python benchmarks/ab_scaling.py TREE_A [TREE_B] [--rounds 20] [--turn 3] [--rt]

``bench_distribute.py --only scaling`` runs each job in a fresh process, one after the other; on
the project's 2-core VM the machine's speed drifts by 20-40% within minutes, so its rounds
measure the drift as much as the jobs. Here every job stays alive (each rank its own warm
process, bound to one core) and the jobs take turns, `--turn` steps each, the order rotating by
round: the steps of one round see the same machine, and the per-round ratios are compared.
A job that is not running blocks on a pipe (no spinning), so it takes nothing from the one
that runs. Each rank runs the unmodified ``Model.fit`` (a callback blocks before a turn's first
step); the first step of a turn (cold caches, the ranks' start skew) is not timed.

Per round: ``scaling`` = 2 x the 1-worker step / the 2-worker step (images/s ratio);
``ceiling`` = 2 x the 1-worker step / the slower of the two independent processes' median
steps (as ``bench_distribute.py``'s: what a synchronous job, paced by its slower rank, could
reach on this machine now); B/A = the 2-worker step of tree A / that of tree B (above 1: B is
faster). Each rank's step is also split into the step function's computing, its waits in
collectives (the slower rank's pace, and the all-reduce itself) and the rest of the fit loop
(the logs' metric all-reduce, callbacks). ``--ops`` times every op of the 1-worker and the
independent processes' steps: what running next to another process costs each op (those two
jobs then pay a timer per op; compare them with each other, not with the 2-worker job).

``--rt`` runs every process under ``chrt -f 20`` (root): other load cannot preempt the steps,
which emulates a quiet machine on a busy one; while the 1-worker job runs, a real-time busy
loop (in registers: no memory traffic) holds the other core, as idle as on a quiet machine
(otherwise the baseline shares the machine with whatever other load runs there). The kernel
gives real-time work at most 95% of each second of a core (then takes 50 ms from it, in the
middle of some step): after each turn the driver sleeps 15% of the turn's time, so the jobs
stay under that share.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

RANK = r"""
import json, os, sys, time
import numpy as np
import tapeflow as tf
from tapeflow.cli import _build

fifo, total, per_op = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "ops"
if len(sys.argv) > 4:
    os.sched_setaffinity(0, {int(sys.argv[4])})
strategy = tf.distribute.MultiWorkerMirroredStrategy()
n, rank = strategy.num_replicas_in_sync, strategy.communicator.rank
rng = np.random.default_rng(0)
x = rng.random((64 * n * total, 28, 28, 1), dtype=np.float32)
y = rng.integers(0, 10, size=len(x))
with strategy.scope():
    model, _ = _build("densenet")
    model.compile(tf.keras.optimizers.Adam(1e-3),
                  tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
waited = [0.0]  # seconds this rank spent in collectives' waits (the slower rank's pace)
wait = type(strategy.communicator)._wait


def timed_wait(*args, **kwargs):
    start = time.perf_counter()
    try:
        return wait(*args, **kwargs)
    finally:
        waited[0] += time.perf_counter() - start


type(strategy.communicator)._wait = timed_wait
stepped = [0.0, 0.0]  # seconds in the step function (the traced train step), and waiting in it
from tapeflow.keras.engine import training  # noqa: E402
run_step = training._run_step


def timed_step(*args, **kwargs):
    start, before = time.perf_counter(), waited[0]
    try:
        return run_step(*args, **kwargs)
    finally:
        stepped[0] += time.perf_counter() - start
        stepped[1] += waited[0] - before


training._run_step = timed_step
profile, before = {}, {}  # with --ops: seconds per node of the traced step (instrumented)
control = open(f"{fifo}.{rank}", "r")
report = open(f"{fifo}.{rank}.out", "w")


class Turns(tf.keras.callbacks.Callback):
    left, times, instrumented = 0, [], False

    def on_train_batch_begin(self, batch, logs=None):
        if self.left == 0:
            line = control.readline().split()
            if not line:
                self.model.stop_training = True
                self.left = -1
                return
            self.left, self.times = int(line[0]), []
            traced = getattr(self.model._train_fn, "_concretes", None)
            if per_op and traced and not self.instrumented:  # from the turn after the trace
                traced[0].instrument(profile)
                self.instrumented = True
            before.update({node: s[0] for node, s in profile.items()})
        self.start, waited[0], stepped[:] = time.perf_counter(), 0.0, [0.0, 0.0]

    def on_train_batch_end(self, batch, logs=None):
        if self.left < 0:
            return
        self.times.append(f"{time.perf_counter() - self.start}:{stepped[0]}:{stepped[1]}")
        self.left -= 1
        if self.left == 0:
            ops = {}
            for node, s in profile.items():
                ops[node.op.name] = ops.get(node.op.name, 0.0) + s[0] - before.get(node, 0.0)
            print(*self.times, json.dumps(ops).replace(" ", ""), file=report, flush=True)


model.fit(x, y, batch_size=64 * n, epochs=1, shuffle=False, verbose=0, callbacks=[Turns()])
"""

HOLD = r"""
import os, select, sys
fd, spin = os.open(sys.argv[1], os.O_RDONLY), False
while True:
    if spin and not select.select([fd], [], [], 0)[0]:
        for _ in range(2000):  # a busy loop in registers: no memory traffic
            pass
        continue
    line = os.read(fd, 2)
    if not line:
        break
    spin = line == b"1\n"
"""


class Job:
    """A warm fit job of `ranks` processes (one MPI job, or independent processes pinned to
    cores 0..ranks-1) that runs `turn` steps when told."""

    def __init__(self, name: str, tree: str, ranks: int, mpi: bool, total: int, rt: bool,
                 tmp: str, ops: bool = False):
        self.name, self.ranks = name, ranks
        self.ops: list[list[dict]] = []  # per turn, per rank: seconds per op (with --ops)
        self.fifo = os.path.join(tmp, name)
        for r in range(ranks):
            os.mkfifo(f"{self.fifo}.{r}")
            os.mkfifo(f"{self.fifo}.{r}.out")
        env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
                   PYTHONPATH=os.path.join(os.path.abspath(tree), "src"))
        rt_cmd = ["chrt", "-f", "20"] if rt else []
        if mpi:
            cmds = [rt_cmd + [shutil.which("mpiexec"), "-bind-to", "core", "-n", str(ranks),
                              sys.executable, "-c", RANK, self.fifo, str(total),
                              "ops" if ops else "-"]]
        else:  # independent processes: each is rank 0 of its own one-worker job
            cmds = [rt_cmd + [sys.executable, "-c", RANK.replace("{rank}", str(r)),
                              self.fifo, str(total), "ops" if ops else "-", str(r)]
                    for r in range(ranks)]
        self.procs = [subprocess.Popen(c, env=env, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL) for c in cmds]
        self.controls = [open(f"{self.fifo}.{r}", "w") for r in range(ranks)]
        self.reports = [open(f"{self.fifo}.{r}.out") for r in range(ranks)]

    def run(self, steps: int) -> list[list[tuple[float, ...]]]:
        """Per rank, (time, time in the step function, time waiting in collectives in it) of
        `steps` steps (seconds)."""
        for c in self.controls:
            c.write(f"{steps}\n")
            c.flush()
        times, ops = [], []
        for r, report in enumerate(self.reports):
            fields = report.readline().split()
            if not fields:
                raise RuntimeError(f"{self.name}: rank {r} ended")
            times.append([tuple(map(float, t.split(":"))) for t in fields[:-1]])
            ops.append(json.loads(fields[-1]))
        self.ops.append(ops)
        return times

    def close(self) -> None:
        for c in self.controls + self.reports:
            c.close()
        for p in self.procs:
            p.wait(timeout=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="+")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--turn", type=int, default=3, help="steps per turn (first untimed)")
    parser.add_argument("--rt", action="store_true", help="chrt -f 20 (root)")
    parser.add_argument("--ops", action="store_true",
                        help="per op: what running next to another process costs each op")
    args = parser.parse_args()
    total = 4 + args.rounds * args.turn
    with tempfile.TemporaryDirectory() as tmp:
        jobs = [Job("one", args.trees[0], 1, False, total, args.rt, tmp, args.ops),
                Job("pair", args.trees[0], 2, False, total, args.rt, tmp, args.ops)]
        jobs += [Job(f"two{i}", t, 2, True, total, args.rt, tmp)
                 for i, t in enumerate(args.trees[:2])]
        hold = None
        if args.rt:  # the other core while one worker runs: as idle as a quiet machine's
            os.mkfifo(os.path.join(tmp, "hold"))
            spinner = subprocess.Popen(["chrt", "-f", "20", "taskset", "-c", "1",
                                        sys.executable, "-c", HOLD, os.path.join(tmp, "hold")])
            hold = open(os.path.join(tmp, "hold"), "w")
        for job in jobs:  # warm-up: the trace and the first steps
            job.run(2)
        steps: dict[str, list[float]] = {j.name: [] for j in jobs}
        parts: dict[str, list[list[tuple]]] = {j.name: [[], []] for j in jobs}
        for r in range(args.rounds):
            order = jobs[r % len(jobs):] + jobs[:r % len(jobs)]
            for job in order:
                start = time.perf_counter()
                if hold and job.name == "one":
                    hold.write("1\n")
                    hold.flush()
                per_rank = [ts[1:] for ts in job.run(args.turn)]
                if hold and job.name == "one":
                    hold.write("0\n")
                    hold.flush()
                if args.rt:  # stay under the kernel's real-time share (95% of each second)
                    time.sleep(0.15 * (time.perf_counter() - start))
                if job.name == "pair":  # the slower one's pace, as bench_distribute's ceiling
                    steps["pair"].append(max(statistics.median(t[0] for t in ts)
                                             for ts in per_rank))
                else:  # a synchronous job's step is its chief's
                    steps[job.name].append(statistics.median(t[0] for t in per_rank[0]))
                for rank, ts in enumerate(per_rank):  # (computing, waiting, the rest)
                    parts[job.name][rank].append(tuple(statistics.median(x) for x in zip(
                        *[(fn - wait, wait, t - fn) for t, fn, wait in ts])))
        for job in jobs:
            job.close()
        if hold:
            hold.close()
            spinner.wait(timeout=60)
    report(args, steps, parts)
    if args.ops:
        report_ops(jobs[0].ops[1:], jobs[1].ops[1:], args.turn)


def report(args: argparse.Namespace, steps: dict, parts: dict) -> None:
    """Step medians, each rank's split of its step, and the per-round ratios."""
    one = steps["one"]
    print(f"load average {os.getloadavg()[0]:.1f}; {args.rounds} rounds of {args.turn} steps"
          f"{' (chrt -f 20)' if args.rt else ''}; step medians: " + ", ".join(
              f"{k} {statistics.median(v) * 1e3:.1f} ms" for k, v in steps.items()))

    def show(label: str, ratios: list[float]) -> str:
        q1, med, q3 = statistics.quantiles(ratios) if len(ratios) > 1 else (ratios * 3)
        return f"{label} {med:.3f} (IQR {q1:.3f}-{q3:.3f})"

    def split(name: str, rank: int) -> str:
        computing, waiting, rest = (statistics.median(x) * 1e3 for x in zip(*parts[name][rank]))
        return f"{computing:.1f} + {waiting:.2f} + {rest:.2f}"

    print("per rank, step function's computing + its waits in collectives + the rest of the "
          f"fit loop (logs, callbacks), ms: one {split('one', 0)}; pair {split('pair', 0)} and "
          f"{split('pair', 1)}")
    for i, tree in enumerate(args.trees[:2]):
        print(f"  {tree}: 2 workers {split(f'two{i}', 0)} and {split(f'two{i}', 1)}")
    rows = [show("ceiling", [2 * a / b for a, b in zip(one, steps["pair"])])]
    for i, tree in enumerate(args.trees[:2]):
        rows.append(show(f"scaling {tree}", [2 * a / b for a, b in zip(one, steps[f"two{i}"])]))
    if len(args.trees) > 1:
        rows.append(show("B/A", [a / b for a, b in zip(steps["two0"], steps["two1"])]))
    print("per round: " + "; ".join(rows))


def report_ops(one: list, pair: list, turn: int) -> None:
    """Per op of the traced step (instrumented, so every op pays a timer), ms a step (over
    every step of a turn) alone and in the slower of the two independent processes, and the
    median per-round ratio; the ops that lose the most time to the neighbour first."""
    rows = []
    for op in one[0][0]:
        alone = [t[0].get(op, 0.0) / turn * 1e3 for t in one]
        beside = [max(r.get(op, 0.0) for r in t) / turn * 1e3 for t in pair]
        a, b = statistics.median(alone), statistics.median(beside)
        ratio = statistics.median(y / x for x, y in zip(alone, beside) if x > 0) if a else 0.0
        rows.append((b - a, op, a, b, ratio))
    print("per op, ms a step: alone / beside another process (ratio, per-round median):")
    for extra, op, a, b, ratio in sorted(rows, reverse=True)[:16]:
        print(f"  {op:32} {a:7.2f} / {b:7.2f} ({ratio:.2f}x, {extra:+.2f} ms)")
    print(f"  all ops {sum(r[2] for r in rows):.2f} / {sum(r[3] for r in rows):.2f} ms")


if __name__ == "__main__":
    main()
