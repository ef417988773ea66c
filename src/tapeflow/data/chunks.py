"""Elements in stacked chunks: how `batch` reads sources that hold many elements in one array.

A dataset that can hand out its elements as stacked chunks (column arrays of many consecutive
elements: tensor slices, parsed CSV blocks) implements `_chunks(ctx)`, returning an iterator of
chunks or None when it cannot (e.g. a repeat of a dataset that cannot). `batch` then cuts
batches out of the chunks with a few slices and copies instead of stacking elements one by one.
The elements and their order are the same as element-by-element iteration.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from tapeflow.data import structure

CHUNK = 4096   # elements per chunk that sources aim for


def chunks_of(dataset: Any, ctx: Any) -> Iterator[Any] | None:
    """`dataset`'s elements as stacked chunks, or None when it cannot give them so."""
    fn = getattr(dataset, "_chunks", None)
    return None if fn is None else fn(ctx)


def length(chunk: Any) -> int:
    return structure.flatten(chunk)[0].shape[0]


def rows(chunk: Any, start: int, stop: int) -> Any:
    return structure.map_structure(lambda a: a[start:stop], chunk)


def elements(chunks: Iterator[Any]) -> Iterator[Any]:
    """Single elements out of stacked chunks."""
    for chunk in chunks:
        leaves = structure.flatten(chunk)
        if not structure.is_nested(chunk):
            yield from (leaves[0][i, ...] for i in range(leaves[0].shape[0]))
            continue
        for i in range(leaves[0].shape[0]):
            yield structure.pack_like(chunk, [a[i, ...] for a in leaves])


def rebatch(chunks: Iterator[Any], n: int, drop_remainder: bool) -> Iterator[Any]:
    """Batches of `n` consecutive elements (a short last one unless dropped) from chunks."""
    pieces: list = []
    have = 0
    for chunk in chunks:
        size, pos = length(chunk), 0
        while pos < size:
            take = min(n - have, size - pos)
            pieces.append(rows(chunk, pos, pos + take))
            have += take
            pos += take
            if have == n:
                yield _join(pieces)
                pieces, have = [], 0
    if have and not drop_remainder:
        yield _join(pieces)


def _join(pieces: list) -> Any:
    if len(pieces) == 1:   # a copy: a batch must not alias the source's arrays
        return structure.map_structure(np.array, pieces[0])
    columns = zip(*(structure.flatten(p) for p in pieces))
    return structure.pack_like(pieces[0], [np.concatenate(c) for c in columns])
