"""Elements through `multiprocessing.shared_memory`, with no pickled arrays.

The sender copies an element's arrays into one shared block (64-byte aligned) and sends only
the block's name and a small layout (the element's nesting with each leaf's dtype, shape and
offset); the receiver copies the arrays out. Blocks are reused rather than created per
element: the side that writes owns an `Arena` of blocks it recycles once the reader is done,
and the reader keeps a few `Attachments` open, so a steady pipeline makes no system calls for
shared memory. Leaves that cannot live in raw memory (object/string arrays, sparse tensors)
travel pickled inside the layout.
"""

from __future__ import annotations

import os
import secrets
from collections import OrderedDict
from multiprocessing import shared_memory
from typing import Any

import numpy as np

from tapeflow.data import structure

_ALIGN = 64
_PAGE = 4096


class Leaf:
    """Where one array lives in the block, or the pickled leaf itself (`obj`)."""

    __slots__ = ("offset", "dtype", "shape", "obj")

    def __init__(self, offset: int = 0, dtype: str = "", shape: tuple = (), obj: Any = None):
        self.offset, self.dtype, self.shape, self.obj = offset, dtype, shape, obj

    def __getstate__(self) -> tuple:
        return self.offset, self.dtype, self.shape, self.obj

    def __setstate__(self, state: tuple) -> None:
        self.offset, self.dtype, self.shape, self.obj = state


def prefix(owner_pid: int | None = None) -> str:
    """Block names start with the consuming process's id, so leaks can be traced to it."""
    return f"tfdata-{os.getpid() if owner_pid is None else owner_pid}-"


class Arena:
    """Blocks one process created and recycles; `keep` bounds the idle ones it holds."""

    def __init__(self, keep: int = 4, owner_pid: int | None = None):
        self.keep = keep
        self._prefix = prefix(owner_pid)
        self._blocks: dict[str, shared_memory.SharedMemory] = {}
        self._idle: list[str] = []

    def take(self, nbytes: int) -> shared_memory.SharedMemory:
        """The smallest idle block of at least `nbytes`, or a new one (a page multiple)."""
        fits = [n for n in self._idle if self._blocks[n].size >= nbytes]
        if fits:
            name = min(fits, key=lambda n: self._blocks[n].size)
            self._idle.remove(name)
            return self._blocks[name]
        block = shared_memory.SharedMemory(name=self._prefix + secrets.token_hex(6),
                                           create=True, size=-(-nbytes // _PAGE) * _PAGE)
        self._blocks[block.name] = block
        return block

    def give_back(self, name: str) -> None:
        """The reader is done with block `name`: reuse it (free the smallest idle one if too
        many are idle)."""
        if name not in self._blocks or name in self._idle:
            return
        self._idle.append(name)
        if len(self._idle) > self.keep:
            smallest = min(self._idle, key=lambda n: self._blocks[n].size)
            self._idle.remove(smallest)
            _unlink(self._blocks.pop(smallest))

    def close(self) -> None:
        """Unlink every block (readers' open handles stay valid until they close them)."""
        for block in self._blocks.values():
            _unlink(block)
        self._blocks.clear()
        self._idle.clear()


class Attachments:
    """Handles to another process's blocks, kept open (up to `keep`) because blocks are reused."""

    def __init__(self, keep: int = 8):
        self.keep = keep
        self._open: OrderedDict[str, shared_memory.SharedMemory] = OrderedDict()

    def get(self, name: str) -> shared_memory.SharedMemory:
        block = self._open.pop(name, None) or shared_memory.SharedMemory(name=name)
        self._open[name] = block
        if len(self._open) > self.keep:
            self._open.popitem(last=False)[1].close()
        return block

    def close(self) -> None:
        for block in self._open.values():
            block.close()
        self._open.clear()


def _unlink(block: shared_memory.SharedMemory) -> None:
    block.close()
    try:
        block.unlink()
    except FileNotFoundError:
        pass  # the other side unlinked it first


def discard(name: str) -> None:
    """Unlink block `name` if it still exists (left behind by a process that died)."""
    try:
        block = shared_memory.SharedMemory(name=name)
    except FileNotFoundError:
        return
    _unlink(block)


def _raw(a: Any) -> bool:
    return isinstance(a, np.ndarray) and not a.dtype.hasobject


def write(element: Any, arena: Arena) -> tuple[str | None, Any]:
    """Copy `element`'s arrays into a block from `arena`; returns (block name or None, layout).
    The block stays the sender's until the reader says it is done (`Arena.give_back`)."""
    end = 0

    def place(a: Any) -> Leaf:
        nonlocal end
        if not _raw(a):
            return Leaf(obj=a)
        offset = end
        end += -(-a.nbytes // _ALIGN) * _ALIGN
        return Leaf(offset, a.dtype.str, a.shape)

    layout = structure.map_structure(place, element)
    if end == 0:
        return None, layout
    block = arena.take(end)
    for a, leaf in zip(structure.flatten(element), structure.flatten(layout)):
        if leaf.obj is None and a.nbytes:
            np.ndarray(a.shape, a.dtype, buffer=block.buf, offset=leaf.offset)[...] = a
    return block.name, layout


def read(name: str | None, layout: Any, attachments: Attachments) -> Any:
    """The element a `write` described, copied out of block `name`."""
    block = None if name is None else attachments.get(name)
    return structure.map_structure(lambda leaf: _load(block, leaf), layout)


def _load(block: shared_memory.SharedMemory | None, leaf: Leaf) -> Any:
    if leaf.obj is not None:
        return leaf.obj
    dtype = np.dtype(leaf.dtype)
    if block is None or 0 in leaf.shape:
        return np.empty(leaf.shape, dtype)
    return np.ndarray(leaf.shape, dtype, buffer=block.buf, offset=leaf.offset).copy()
