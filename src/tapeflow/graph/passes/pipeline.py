"""The default optimization pipeline, with a report of what each pass changed."""

from __future__ import annotations

from collections.abc import Callable

from tapeflow.framework import errors
from tapeflow.graph.ir import Graph
from tapeflow.graph.passes import (
    bias_grad_sums,
    conv_into_concat,
    cse,
    dce,
    fold,
    fuse,
    group_updates,
    grow_concat,
    jit_cluster,
    pool_first,
    prologue,
    reuse_statistics,
    share_tiles,
    simplify,
    table_first,
)
from tapeflow.graph.verify import verify

PASSES: list[tuple[str, Callable[[Graph], tuple[Graph, str]]]] = [
    ("fold", fold.run), ("simplify", simplify.run), ("pool_first", pool_first.run),
    ("table_first", table_first.run), ("group_updates", group_updates.run),
    ("cse", cse.run), ("dce", dce.run),
    ("fuse", fuse.run), ("share_tiles", share_tiles.run), ("prologue", prologue.run),
    ("reuse_statistics", reuse_statistics.run), ("grow_concat", grow_concat.run),
    ("conv_into_concat", conv_into_concat.run), ("bias_grad_sums", bias_grad_sums.run),
]


# Verify the graph's invariants before the passes and after each one (the test suite turns this
# on for every graph it optimizes: tests/conftest.py)
VERIFY_EACH_PASS = False


# jit_compile=True: elementwise trees become compiled loops, after the other passes
JIT_PASSES: list[tuple[str, Callable[[Graph], tuple[Graph, str]]]] = [
    ("jit_cluster", jit_cluster.run)]


def optimize(graph: Graph, check: bool | None = None, jit: bool = False
             ) -> tuple[Graph, list[str]]:
    """Run every pass in order (and the jit passes with `jit`); with `check` (default
    ``VERIFY_EACH_PASS``), verify the graph's invariants before the first pass and after each,
    naming the pass that broke them."""
    check = VERIFY_EACH_PASS if check is None else check
    if check:
        verify(graph)
    reports = []
    for name, run in PASSES + (JIT_PASSES if jit else []):
        graph, report = run(graph)
        if check:
            try:
                verify(graph)
            except errors.InternalError as e:
                raise errors.InternalError(None, name, f"after pass {name}: {e.message}") from e
        reports.append(report)
    return graph, reports
