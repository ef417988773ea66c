"""Where a core sits idle in the W4 DenseNet training step: a per-thread timeline of one step.

    chrt -f 20 python benchmarks/timeline_w4.py [--steps 7] [--own-threads] [--top 25]

Runs the W4 step (``profile_w4.w4_step``, every core) and records, per thread, with
``time.perf_counter``: every line the calling thread runs in the generated code (a line tracer
on that code only), every node the inter-op worker runs (``interop._run``), every kernel slice
(``parallel.split``'s work, on whichever thread ran it), every split, and every wait (a
``Pending.get`` whose value is not ready, a helper's ``finish``). Over each step it counts the
threads doing work at each instant (the caller unless it waits, the worker inside a node unless
it waits, a helper inside a slice) and charges the time where fewer than two work (one core
idle) to what the caller was doing then: the op of its current line, and whether it was outside
any split (serial code or an unsplit kernel), inside a split that ran on one thread, running
its own slice after the helper finished, or waiting for the helper's slice, the worker's node.

``--own-threads`` makes the kernels' idle-core test count this process's threads only, as
``ab_w4.py`` does (run it under ``chrt -f 20`` on a loaded machine to emulate a quiet one).
The line tracer costs about a microsecond a line (~540 lines a step), so steps read slightly
longer than ``bench_graph.py``'s.
"""

from __future__ import annotations

import argparse
import bisect
import collections
import itertools
import statistics
import sys
import threading
import time

sys.path.insert(0, "benchmarks")

from ab_w4 import count_own_threads  # noqa: E402

from tapeflow.graph import interop  # noqa: E402
from tapeflow.kernels import parallel  # noqa: E402

clock = time.perf_counter
events: list[tuple] = []  # (kind, start, end, thread ident, label)




def instrument(lines: dict) -> None:
    """Record worker nodes, splits, slices and waits into ``events``."""
    run, get, split = interop._run, interop.Pending.get, parallel.split
    finish = parallel._Helper.finish

    def timed_run(line, fn, args, kwargs):
        t0 = clock()
        try:
            return run(line, fn, args, kwargs)
        finally:
            events.append(("node", t0, clock(), threading.get_ident(), lines[line][0].op.name))

    def timed_get(self):
        if self.future.done():
            return get(self)
        t0 = clock()
        try:
            return get(self)
        finally:
            events.append(("wait", t0, clock(), threading.get_ident(), "worker"))

    def timed_finish(self):
        t0 = clock()
        try:
            return finish(self)
        finally:
            events.append(("wait", t0, clock(), threading.get_ident(), "slice"))

    splits = itertools.count()

    def timed_split(n, nbytes, work, slices=None):
        which = next(splits)

        def timed_work(lo, hi):
            t0 = clock()
            try:
                return work(lo, hi)
            finally:
                events.append(("slice", t0, clock(), threading.get_ident(), which))

        t0 = clock()
        try:
            return split(n, nbytes, timed_work, slices)
        finally:
            events.append(("split", t0, clock(), threading.get_ident(), which))

    interop._run, interop.Pending.get = timed_run, timed_get
    parallel.split, parallel._Helper.finish = timed_split, timed_finish


def line_tracer(filename: str, marks: list):
    """A sys.settrace function recording (time, line) for each line of the generated code."""
    def local(frame, event, arg):
        if event == "line":
            marks.append((clock(), frame.f_lineno))
        return local

    def global_(frame, event, arg):
        return local if frame.f_code.co_filename == filename else None

    return global_


def subtract(spans: list, holes: list) -> list:
    """Intervals of `spans` outside every interval of `holes` (both lists of (start, end))."""
    out = []
    holes = sorted(holes)
    for a, b in spans:
        cur = a
        for h0, h1 in holes:
            if h1 <= cur or h0 >= b:
                continue
            if h0 > cur:
                out.append((cur, h0))
            cur = max(cur, h1)
        if cur < b:
            out.append((cur, b))
    return out


def analyse(start: float, end: float, step_events: list, marks: list, lines: dict,
            main: int) -> tuple[dict, float]:
    """Idle core-seconds per (caller's op, state) over one step, the step's length, idle
    core-seconds per generated line and the worker's nodes seen during each line."""
    by = collections.defaultdict(list)
    for kind, t0, t1, tid, label in step_events:
        by[kind].append((t0, t1, tid, label))
    waits_main = [(a, b) for a, b, t, _ in by["wait"] if t == main]
    busy: dict[int, list] = {main: subtract([(start, end)], waits_main)}
    for tid in {t for _, _, t, _ in by["node"] + by["slice"]} - {main}:
        own_waits = [(a, b) for a, b, t, _ in by["wait"] if t == tid]
        spans = sorted((a, b) for a, b, t, _ in by["node"] + by["slice"] if t == tid)
        merged: list = []
        for a, b in spans:  # a worker's slices lie inside its nodes or between them
            if merged and a <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(b, merged[-1][1]))
            else:
                merged.append((a, b))
        busy[tid] = subtract(merged, own_waits)
    edges = sorted({start, end, *(x for spans in busy.values() for s in spans for x in s)})
    edges = [e for e in edges if start <= e <= end]
    mark_t = [t for t, _ in marks]
    main_splits = [(a, b, label) for a, b, t, label in by["split"] if t == main]
    main_slices = [(a, b) for a, b, t, _ in by["slice"] if t == main]
    main_waits = sorted((a, b, label) for a, b, t, label in by["wait"] if t == main)
    helper_slices = sorted((a, b, label) for a, b, t, label in by["slice"] if t != main)
    worker_nodes = sorted((a, b, label) for a, b, t, label in by["node"])
    idle: dict = collections.Counter()
    per_line: dict = collections.Counter()
    worker_ops: dict = collections.defaultdict(set)

    def inside(spans, t):
        return next((s for s in spans if s[0] <= t < s[1]), None)

    for a, b in zip(edges, edges[1:]):
        mid = (a + b) / 2
        working = sum(1 for spans in busy.values() if inside(spans, mid))
        if working >= 2:
            continue
        i = bisect.bisect_right(mark_t, mid) - 1
        op = lines[marks[i][1]][0].op.name if i >= 0 and marks[i][1] in lines else "(python)"
        w = inside(main_waits, mid)
        node = inside(worker_nodes, mid)
        if w is not None and w[2] == "worker":
            state = f"waits for worker's {node[2] if node else '?'}"
        elif w is not None:
            state = "waits for the helper's slice"
        elif inside(main_splits, mid) is None:
            state = "serial" + (" (worker idle)" if node is None else "")
        elif inside(main_slices, mid) is None:
            state = "in split, between slices"
        else:
            sp = inside(main_splits, mid)
            mine = [s for s in helper_slices if s[2] == sp[2]]
            if not mine:
                state = "split on one thread"
            elif any(s[1] <= mid for s in mine):
                state = "own slice, helper done"
            else:
                state = "own slice, helper not started"
        idle[(op, state)] += (2 - working) * (b - a)
        line = marks[i][1] if i >= 0 else 0
        per_line[(line, state)] += (2 - working) * (b - a)
        worker_ops[(line, state)].add(node[2] if node else "-")
    return idle, end - start, per_line, worker_ops


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=7)
    parser.add_argument("--own-threads", action="store_true")
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    if args.own_threads:
        count_own_threads()
    from profile_w4 import w4_step

    step, inputs = w4_step()
    step(*inputs)
    exe = step.get_concrete_function(*inputs)._exe
    instrument(exe.lines)
    step(*inputs)
    main_thread = threading.get_ident()
    results, joined = [], []
    for _ in range(args.steps):
        marks: list = []
        events.clear()
        sys.settrace(line_tracer(exe.filename, marks))
        t0 = clock()
        step(*inputs)
        t1 = clock()
        sys.settrace(None)
        results.append(analyse(t0, t1, list(events), marks, exe.lines, main_thread))
        worker = {e[3] for e in events if e[0] == "node"}
        nodes = [e for e in events if e[0] == "node"]
        joined.append(sum(e[2] - e[1] for e in events if e[0] == "slice" and e[3] in worker
                          and not any(n[1] <= e[1] < n[2] for n in nodes)))
    lengths = [r[1] for r in results]
    totals = [sum(r[0].values()) for r in results]
    print(f"step {statistics.median(lengths) * 1e3:.1f} ms (median of {args.steps}; "
          f"{min(lengths) * 1e3:.1f}-{max(lengths) * 1e3:.1f}), one core idle "
          f"{statistics.median(totals) * 1e3:.1f} core-ms")
    print(f"  the worker ran {statistics.median(joined) * 1e3:.2f} ms of the caller's slices "
          "between its nodes")
    keys = {k for r in results for k in r[0]}
    rows = sorted(((statistics.median(r[0].get(k, 0.0) for r in results), k) for k in keys),
                  reverse=True)
    by_state: dict = collections.Counter()
    for ms, (_, state) in rows:
        by_state[state.split("'s ")[0]] += ms
    for state, ms in by_state.most_common():
        print(f"  {ms * 1e3:6.2f} ms  {state}")
    print("idle core-ms (median per step) | caller's op | state")
    for ms, (op, state) in rows[:args.top]:
        print(f"  {ms * 1e3:6.2f} | {op} | {state}")
    print("idle core-ms per line of the generated code (median) | line | op | state | "
          "worker's nodes")
    line_rows = sorted(((statistics.median(r[2].get(k, 0.0) for r in results), k)
                        for k in {k for r in results for k in r[2]}), reverse=True)
    for ms, (line, state) in line_rows[:args.top]:
        op = exe.lines[line][0].op.name if line in exe.lines else "(python)"
        seen = sorted(set().union(*(r[3].get((line, state), set()) for r in results)))
        print(f"  {ms * 1e3:6.2f} | {line} | {op} | {state} | {', '.join(seen)}")


if __name__ == "__main__":
    main()
