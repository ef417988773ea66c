"""The default optimization pipeline, with a report of what each pass changed."""

from __future__ import annotations

from collections.abc import Callable

from tapeflow.graph.ir import Graph
from tapeflow.graph.passes import (
    cse,
    dce,
    fold,
    fuse,
    grow_concat,
    pool_first,
    prologue,
    reuse_statistics,
    share_tiles,
    simplify,
)
from tapeflow.graph.verify import verify

PASSES: list[tuple[str, Callable[[Graph], tuple[Graph, str]]]] = [
    ("fold", fold.run), ("simplify", simplify.run), ("pool_first", pool_first.run),
    ("cse", cse.run), ("dce", dce.run),
    ("fuse", fuse.run), ("share_tiles", share_tiles.run), ("prologue", prologue.run),
    ("reuse_statistics", reuse_statistics.run), ("grow_concat", grow_concat.run),
]


def optimize(graph: Graph, check: bool = False) -> tuple[Graph, list[str]]:
    """Run every pass in order; with `check`, verify the graph's invariants after each."""
    reports = []
    for _, run in PASSES:
        graph, report = run(graph)
        if check:
            verify(graph)
        reports.append(report)
    return graph, reports
