"""Elements through `multiprocessing.shared_memory`: one block per element, no pickled arrays.

The sender copies an element's arrays into one shared block (64-byte aligned) and sends only
its name and a small layout (the element's nesting with each leaf's dtype, shape and offset).
The receiver copies the arrays out and closes its handle; the block is then unlinked by
whichever side owns it. Leaves that cannot live in raw memory (object/string arrays, sparse
tensors) travel pickled inside the layout.
"""

from __future__ import annotations

from multiprocessing import shared_memory
from typing import Any

import numpy as np

from tapeflow.data import structure

_ALIGN = 64


class Leaf:
    """Where one array lives in the block, or the pickled leaf itself (`obj`)."""

    __slots__ = ("offset", "dtype", "shape", "obj")

    def __init__(self, offset: int = 0, dtype: str = "", shape: tuple = (), obj: Any = None):
        self.offset, self.dtype, self.shape, self.obj = offset, dtype, shape, obj

    def __getstate__(self) -> tuple:
        return self.offset, self.dtype, self.shape, self.obj

    def __setstate__(self, state: tuple) -> None:
        self.offset, self.dtype, self.shape, self.obj = state


def _raw(a: Any) -> bool:
    return isinstance(a, np.ndarray) and not a.dtype.hasobject


def write(element: Any) -> tuple[shared_memory.SharedMemory | None, Any]:
    """Copy `element`'s arrays into a new block; returns (block or None, layout)."""
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
    block = shared_memory.SharedMemory(create=True, size=end)
    for a, leaf in zip(structure.flatten(element), structure.flatten(layout)):
        if leaf.obj is None and a.nbytes:
            np.ndarray(a.shape, a.dtype, buffer=block.buf, offset=leaf.offset)[...] = a
    return block, layout


def read(name: str | None, layout: Any, unlink: bool = False) -> Any:
    """The element a `write` described, copied out of block `name`; `unlink` frees the block
    (the receiver of a result owns it; an input block is freed by its sender)."""
    if name is None:
        return structure.map_structure(_load_inline, layout)
    block = shared_memory.SharedMemory(name=name)
    try:
        return structure.map_structure(lambda leaf: _load(block, leaf), layout)
    finally:
        block.close()
        if unlink:
            block.unlink()


def _load_inline(leaf: Leaf) -> Any:
    if leaf.obj is not None:
        return leaf.obj
    return np.empty(leaf.shape, np.dtype(leaf.dtype))


def _load(block: shared_memory.SharedMemory, leaf: Leaf) -> Any:
    if leaf.obj is not None:
        return leaf.obj
    dtype = np.dtype(leaf.dtype)
    if 0 in leaf.shape:
        return np.empty(leaf.shape, dtype)
    return np.ndarray(leaf.shape, dtype, buffer=block.buf, offset=leaf.offset).copy()


def discard(name: str | None) -> None:
    """Unlink block `name` (a result the consumer will never read)."""
    if name is None:
        return
    try:
        block = shared_memory.SharedMemory(name=name)
    except FileNotFoundError:
        return
    block.close()
    block.unlink()


def release(block: shared_memory.SharedMemory | None) -> None:
    """Close and unlink a block this process created."""
    if block is not None:
        block.close()
        block.unlink()
