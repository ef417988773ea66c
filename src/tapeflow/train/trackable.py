"""What a checkpoint holds: the variables reachable from a root object, named by path.

Any object works: its children are its attributes (public ones first, then private), the items
of its lists, tuples and dicts, or whatever its ``_checkpoint_dependencies()`` hook returns as
(name, child) pairs. The walk is breadth-first, so each variable gets its shortest path
(``model/dense/kernel`` rather than ``model/dense/_own_weights/0``). Optimizer slots are named
after the variable they belong to: ``<var path>/.OPTIMIZER_SLOT/<optimizer path>/<slot>``.
"""

from __future__ import annotations

import types
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tapeflow.framework.tensor import Tensor
from tapeflow.framework.variable import Variable

SLOT_MARKER = "/.OPTIMIZER_SLOT/"
_OPAQUE = (type, types.ModuleType, types.FunctionType, types.MethodType,
           types.BuiltinFunctionType, property, str, bytes, int, float, complex, bool,
           np.ndarray, np.generic, Tensor)
# tapeflow's own objects are walked only where they hold model state
_WALKED_PACKAGES = ("tapeflow.keras", "tapeflow.train", "tapeflow.models",
                    "tapeflow.framework.module")


@dataclass
class ObjectGraph:
    """Paths of the variables, slots and container objects under a root."""

    variables: dict[str, Variable] = field(default_factory=dict)
    objects: dict[str, Any] = field(default_factory=dict)
    slots: dict[str, tuple[Any, Variable, str, Variable]] = field(default_factory=dict)

    def all_variables(self) -> dict[str, Variable]:
        """Every checkpointed variable (slots included) by key."""
        out = dict(self.variables)
        out.update({k: s[3] for k, s in self.slots.items()})
        return out


def _escape(name: str) -> str:
    return name.replace("%", "%25").replace("/", "%2F")


def _join(path: str, name: Any) -> str:
    name = _escape(str(name))
    return f"{path}/{name}" if path else name


def _walkable(obj: Any) -> bool:
    if obj is None or isinstance(obj, _OPAQUE):
        return False
    if isinstance(obj, (list, tuple, dict)) or hasattr(obj, "_checkpoint_dependencies"):
        return True
    module = type(obj).__module__ or ""
    if module == "builtins":
        return False
    if module.startswith("tapeflow.") and not module.startswith(_WALKED_PACKAGES):
        return False
    return hasattr(obj, "__dict__")


def children(obj: Any) -> list[tuple[str, Any]]:
    """The named children of `obj` that may hold variables."""
    hook = getattr(obj, "_checkpoint_dependencies", None)
    if hook is not None and callable(hook) and not isinstance(obj, type):
        deps = hook()
        return list(deps.items() if isinstance(deps, dict) else deps)
    if isinstance(obj, (list, tuple)):
        return list(enumerate(obj))
    if isinstance(obj, dict):
        return [(k, v) for k, v in obj.items() if isinstance(k, (str, int))]
    attrs = vars(obj)
    public = [(k, v) for k, v in attrs.items() if not k.startswith("_")]
    private = [(k, v) for k, v in attrs.items() if k.startswith("_") and not k.startswith("__")]
    return public + private


def walk(root: Any, exclude: Callable[[Any], bool] | None = None) -> ObjectGraph:
    """Breadth-first walk from `root`; `exclude(obj)` prunes objects (e.g. optimizers)."""
    graph = ObjectGraph()
    seen: set[int] = {id(root)}
    var_paths: dict[int, str] = {}
    optimizers: list[tuple[str, Any]] = []
    shard_of: dict[int, tuple[Any, int]] = {}  # shard -> (its ShardedVariable, index)
    queue: deque[tuple[str, Any]] = deque([("", root)])
    while queue:
        path, obj = queue.popleft()
        graph.objects[path] = obj
        if hasattr(obj, "_checkpoint_slots"):
            optimizers.append((path, obj))
        for name, child in children(obj):
            if id(child) in seen:
                continue
            sharded = getattr(child, "_is_sharded_variable", False)
            if isinstance(child, Variable) or sharded:
                seen.add(id(child))
                key = _join(path, name)
                graph.variables[key] = child  # a ShardedVariable is saved whole
                var_paths[id(child)] = key
                for j, shard in enumerate(child.variables if sharded else ()):
                    seen.add(id(shard))
                    shard_of[id(shard)] = (child, j)
            elif _walkable(child) and not (exclude is not None and exclude(child)):
                seen.add(id(child))
                queue.append((_join(path, name), child))
    for opt_path, opt in optimizers:
        sharded_slots: dict[tuple[int, str], dict[int, Variable]] = {}
        for var, slot_name, slot in opt._checkpoint_slots():
            if id(var) in shard_of:  # a shard's slot: saved whole with its siblings'
                owner, j = shard_of[id(var)]
                sharded_slots.setdefault((id(owner), slot_name), {})[j] = slot
                var, slot = owner, None
            var_path = var_paths.get(id(var))
            if var_path is not None and slot is not None:
                key = f"{var_path}{SLOT_MARKER}{opt_path}/{_escape(slot_name)}"
                graph.slots[key] = (opt, var, slot_name, slot)
        owners = {id(o): o for o, _ in shard_of.values()}
        for (owner_id, slot_name), parts in sharded_slots.items():
            owner = owners[owner_id]
            if len(parts) == len(owner.variables):
                key = f"{var_paths[owner_id]}{SLOT_MARKER}{opt_path}/{_escape(slot_name)}"
                whole = type(owner)([parts[j] for j in range(len(parts))],
                                    name=f"{owner.name}/{slot_name}")
                graph.slots[key] = (opt, owner, slot_name, whole)
    return graph


def split_slot_key(key: str) -> tuple[str, str, str]:
    """(variable path, optimizer path, slot name) of a slot key."""
    var_path, rest = key.split(SLOT_MARKER, 1)
    opt_path, slot_name = rest.rsplit("/", 1) if "/" in rest else ("", rest)
    return var_path, opt_path, slot_name.replace("%2F", "/").replace("%25", "%")


def split_key(key: str) -> tuple[str, str]:
    """(parent path, unescaped leaf name) of a variable key."""
    parent, _, leaf = key.rpartition("/")
    return parent, leaf.replace("%2F", "/").replace("%25", "%")
