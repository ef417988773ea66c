"""Deferred restoration: checkpoint values that wait for variables not created yet.

``restore`` into a Keras model whose layers are not built yet cannot assign the weights; it
registers them here under (owner object, weight name). When the layer's ``add_weight`` (or an
optimizer's ``add_slot``) creates the variable, it calls ``restore_on_create`` and the value is
assigned right away, the same value a built model would have received.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tapeflow.framework import errors
from tapeflow.framework.context import eager_scope

_lock = threading.Lock()


@dataclass
class PendingSlot:
    optimizer: Any
    slot_name: str
    value: np.ndarray
    key: str


@dataclass
class Pending:
    """One value waiting for its variable."""

    owner_ref: Any          # weakref (or a callable returning the owner) to avoid id reuse
    value: np.ndarray
    key: str                # the checkpoint key, for error messages and load statuses
    status_ref: Any         # weakref to the load status to tell when the value is consumed
    slots: list[PendingSlot] = field(default_factory=list)


_pending: dict[tuple[int, Any], Pending] = {}


def _ref(owner: Any) -> Any:
    try:
        return weakref.ref(owner)
    except TypeError:
        return lambda: owner


def defer(owner: Any, name: Any, value: np.ndarray, key: str, status: Any) -> Pending:
    """Hold `value` for the variable `name` that `owner` will create later."""
    entry = Pending(_ref(owner), value, key, _ref(status))
    with _lock:
        for k in [k for k, p in _pending.items() if p.owner_ref() is None]:
            del _pending[k]
        _pending[(id(owner), name)] = entry
    return entry


def restore_on_create(owner: Any, name: Any, variable: Any) -> bool:
    """Called right after `owner` creates `variable` named `name`; assigns a pending value.

    Keras ``Layer.add_weight(name, ...)`` calls it with the layer and the weight name; the
    optimizer calls it for slots. Returns True when a checkpoint value was applied.
    """
    if not _pending:
        return False
    with _lock:
        entry = _pending.get((id(owner), name))
        if entry is None or entry.owner_ref() is not owner:
            return False
        del _pending[(id(owner), name)]
    value = entry.value
    shape = tuple(variable.shape.as_tuple())
    if value.shape != shape or value.dtype != variable.dtype._np:
        raise errors.InvalidArgumentError(
            None, "restore",
            f"Checkpoint value {entry.key!r} has shape {list(value.shape)} and dtype "
            f"{value.dtype}, but the variable {variable.name} created for it has shape "
            f"{list(shape)} and dtype {variable.dtype.name}\n{errors.user_line()}")
    with eager_scope():
        variable.assign(value)
    status = entry.status_ref()
    if status is not None:
        status._consumed(entry.key)
    for slot in entry.slots:
        defer_slot(slot.optimizer, variable, slot.slot_name, slot.value, slot.key, status)
    return True


def defer_slot(optimizer: Any, variable: Any, slot_name: str, value: np.ndarray, key: str,
               status: Any) -> None:
    """Hold `value` for `optimizer`'s slot of `variable`; a ShardedVariable's slots are
    per shard, so each shard waits for its rows."""
    if getattr(variable, "_is_sharded_variable", False):
        for shard, rows in variable._split_rows(value):
            defer(optimizer, (shard._unique_id, slot_name), rows, key, status)
    else:
        defer(optimizer, (variable._unique_id, slot_name), value, key, status)
