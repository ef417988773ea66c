"""Two-thread list scheduling: which nodes of a compiled graph run on the inter-op worker, and
in what order each thread meets its nodes.

Why: a training step is not one chain. The backward pass has weight gradients hanging off the
activation-gradient chain, and a reversible network (RevNet) rebuilds the next block's inputs
while the current block's gradients are taken. On two cores, running such independent kernels
one per thread, each on one core, beats running them one after another with every kernel split
over both cores: a split pays a hand-over and shares the caches (a 3x3 convolution at
32x32x16, batch 32: 4.2 core-ms on one thread, 5.7 core-ms split in two).

The schedule comes from a static estimate of each node's cost (``estimate``: the op's FLOPs
for convolutions and products, bytes moved for everything else) by insertion-based list scheduling
(HEFT, Topcuoglu et al. 2002): nodes in order of their upward rank (the costliest path from the
node to the end), each placed where it finishes first, on the calling thread or, if it is a pure
kernel (an op marked ``worker`` or a ufunc, no control inputs) estimated at ``MIN_WORKER_S`` or
more, on the worker. A value crossing threads costs ``HANDOFF`` seconds. A long chain with nothing
beside it (a forward pass) stays on the calling thread, whose kernels then split over both idle
cores as before. Lighter nodes never move: an MLP step's Adam updates on the worker made the
step 2x slower (hand-over and GIL waits dwarf 50 us kernels).

Memory: the plan's own order frees each value soon after it is made. A node may start only once
every node ``WINDOW_S`` seconds of estimated work before it in that order is done, so the
schedule runs neither far ahead of it (a RevNet's recompute chain racing through all blocks
while the gradients follow: peak memory grew with depth, 35 -> 64 -> 96 MB at depth 2/6/10)
nor far behind it (a queue of weight gradients holding their inputs).

Ordering of effects: variable reads and writes keep their order per variable (a read after the
write before it, a write after the reads and the write before it); other stateful nodes
(optimizer updates, prints, random draws, control flow) keep their order with respect to all
stateful nodes. Only the calling thread runs stateful nodes.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
from collections.abc import Callable

from tapeflow.graph.ir import Node

FLOPS_PER_S = 25e9  # a 3x3 convolution's direct FLOPs per second on one core (Winograd'd)
BYTES_PER_S = 6e9  # memory-bound passes, bytes read and written per second on one core
NODE_S = 3e-6  # Python overhead of one generated line
HANDOFF = 30e-6  # a value produced on one thread and read on the other (wake-up, GIL)
MIN_WORKER_S = 300e-6  # lighter nodes stay on the caller: hand-over and GIL waits cost more
WINDOW_S = 80e-3  # how far (estimated seconds of work) a node may move from its plan position


def estimate(node: Node) -> float:
    """Seconds one thread spends on `node`: its FLOPs (``Op.flops``) or its bytes, whichever
    costs more."""
    moved = 0
    for t in list(node.inputs) + list(node.outputs):
        n = t.shape.num_elements()
        if n is not None:
            moved += n * t.dtype.size
    flops = node.op.flops(node) if node.op.flops is not None else 0.0
    return NODE_S + max(flops / FLOPS_PER_S, moved / BYTES_PER_S)


def _effect_deps(plan: list[Node]) -> dict[int, list[int]]:
    """Index -> indices it must follow, for the ordering of effects described above."""
    deps: dict[int, list[int]] = {}
    last_global: int | None = None
    since_global: list[int] = []  # stateful nodes after the last global one
    writes: dict[int, int] = {}  # variable id -> its last write
    reads: dict[int, list[int]] = {}  # variable id -> reads since that write
    for i, node in enumerate(plan):
        if not node.op.stateful:
            continue
        before = [] if last_global is None else [last_global]
        var = node.attrs.get("var") if node.op.variable is not None else None
        if var is None:  # global: after every stateful node before it
            deps[i] = before + since_global
            last_global, since_global = i, []
            writes, reads = {}, {}
            continue
        key = id(var)
        if key in writes:
            before.append(writes[key])
        if node.op.variable == "read":
            reads.setdefault(key, []).append(i)
        else:
            before += reads.pop(key, [])
            writes[key] = i
        deps[i] = before
        since_global.append(i)
    return deps


def _window(costs: list[float]) -> list[int]:
    """For each node, the last plan index whose estimated work ends WINDOW_S or more before the
    node's begins (-1: none): it may start only once that node and all before it are done."""
    ends = list(itertools.accumulate(costs))
    behind, b = [], -1
    for i, c in enumerate(costs):
        while b + 1 < i and ends[i] - c - ends[b + 1] >= WINDOW_S:
            b += 1
        behind.append(b)
    return behind


class _Timeline:
    """One thread's busy intervals, sorted, for insertion-based placement."""

    def __init__(self) -> None:
        self.starts: list[float] = []
        self.ends: list[float] = []

    def earliest(self, ready: float, cost: float) -> float:
        """The first start >= `ready` with `cost` seconds free from there."""
        k = bisect.bisect_right(self.ends, ready)
        start = ready
        while k < len(self.starts):
            if start + cost <= self.starts[k]:
                return start
            start = max(start, self.ends[k])
            k += 1
        return start

    def insert(self, start: float, end: float) -> None:
        k = bisect.bisect_right(self.starts, start)
        self.starts.insert(k, start)
        self.ends.insert(k, end)


def two_threads(plan: list[Node], producers: list[list[int]],
                on_worker_ok: Callable[[Node], bool],
                cost: Callable[[Node], float] | None = None) -> list[tuple[Node, bool]]:
    """The nodes of `plan` (a topological order) as (node, runs on the worker), in the order
    the calling thread meets them: its own nodes in start order, each worker node where it is
    handed over (as soon as its inputs from the calling thread exist, in the worker's order).

    `producers[i]`: indices of the plan nodes whose outputs node i reads (aliases resolved)."""
    n = len(plan)
    deps = [list(p) for p in producers]
    index = {id(node): i for i, node in enumerate(plan)}
    for i, node in enumerate(plan):
        deps[i] += [index[id(c)] for c in node.control_inputs if id(c) in index]
    for i, extra in _effect_deps(plan).items():
        deps[i] += extra
    deps = [sorted(set(ds)) for ds in deps]
    costs = [max((cost or estimate)(node), 1e-7) for node in plan]
    succs: list[list[int]] = [[] for _ in range(n)]
    for i, ds in enumerate(deps):
        for d in ds:
            succs[d].append(i)
    rank = [0.0] * n
    for i in range(n - 1, -1, -1):
        rank[i] = costs[i] + max((rank[s] for s in succs[i]), default=0.0)
    ok = [c >= MIN_WORKER_S and on_worker_ok(node) and not node.op.stateful
          and not node.control_inputs for node, c in zip(plan, costs)]
    behind = _window(costs)
    lines = (_Timeline(), _Timeline())
    start, finish, thread = [0.0] * n, [0.0] * n, [0] * n
    unmet = [len(ds) for ds in deps]
    placed = [False] * n
    done_upto, done_finish = -1, [0.0]  # all of 0..done_upto placed; max finish of 0..k
    ready: list[tuple[float, int]] = []  # (-rank, i): inputs placed and window reached
    held: list[tuple[int, int]] = []  # (behind, i): inputs placed, window not yet

    def offer(i: int) -> None:
        if behind[i] <= done_upto:
            heapq.heappush(ready, (-rank[i], i))
        else:
            heapq.heappush(held, (behind[i], i))

    for i in range(n):
        if not unmet[i]:
            offer(i)
    while ready:  # highest rank first, among nodes whose inputs and window are placed
        _, i = heapq.heappop(ready)
        earliest = done_finish[behind[i] + 1]  # the window: all nodes up to behind[i] done
        best = None
        for t in (0, 1) if ok[i] else (0,):
            at = max([earliest] + [finish[d] + (HANDOFF if thread[d] != t else 0.0)
                                   for d in deps[i]])
            s = lines[t].earliest(at, costs[i])
            if best is None or s < best[0]:
                best = (s, t)
        start[i], thread[i] = best
        finish[i] = best[0] + costs[i]
        lines[best[1]].insert(start[i], finish[i])
        placed[i] = True
        while done_upto + 1 < n and placed[done_upto + 1]:
            done_upto += 1
            done_finish.append(max(done_finish[-1], finish[done_upto]))
        for s in succs[i]:
            unmet[s] -= 1
            if not unmet[s]:
                offer(s)
        while held and held[0][0] <= done_upto:
            heapq.heappush(ready, (-rank[held[0][1]], heapq.heappop(held)[1]))
    return _emission_order(plan, deps, start, thread)


def _emission_order(plan: list[Node], deps: list[list[int]], start: list[float],
                    thread: list[int]) -> list[tuple[Node, bool]]:
    by_start = sorted(range(len(plan)), key=lambda i: (start[i], i))
    main = [i for i in by_start if thread[i] == 0]
    worker = [i for i in by_start if thread[i] == 1]
    emitted: set[int] = set()
    order: list[tuple[Node, bool]] = []
    w = 0

    def hand_over() -> None:
        nonlocal w
        while w < len(worker) and all(d in emitted for d in deps[worker[w]]):
            emitted.add(worker[w])
            order.append((plan[worker[w]], True))
            w += 1

    for i in main:
        hand_over()
        emitted.add(i)
        order.append((plan[i], False))
    hand_over()
    if w < len(worker):  # cannot happen for a schedule that respects `deps`
        raise AssertionError("two_threads: a worker node's inputs were never produced")
    return order
