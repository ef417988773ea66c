"""``tf.Module``: a named container that finds the variables and sub-modules in its attributes."""

from __future__ import annotations

import re
from typing import Any

from tapeflow.framework.context import name_scope as _name_scope
from tapeflow.framework.variable import Variable

_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")


def camel_to_snake(name: str) -> str:
    return _CAMEL.sub("_", name).lower()


def walk_attributes(obj: Any, predicate, seen: set | None = None) -> list:
    """Objects matching `predicate` reachable through attributes, lists, tuples and dicts.

    TensorFlow's order (``tf.Module._flatten``): a module's own attributes sorted by name, each
    flattened (dict keys sorted), then the sub-modules found there, in that order, recursively.
    Each object counts once.
    """
    seen = set() if seen is None else seen
    found: list = []
    submodules: list = []

    def visit(value: Any) -> None:
        if id(value) in seen:
            return
        if isinstance(value, Module):
            seen.add(id(value))
            if predicate(value):
                found.append(value)
            submodules.append(value)
        elif predicate(value):
            seen.add(id(value))
            found.append(value)
        elif isinstance(value, (list, tuple)):
            for child in value:
                visit(child)
        elif getattr(value, "_is_sharded_variable", False):  # its shards, as in TF
            for child in value.variables:
                visit(child)
        elif isinstance(value, dict):
            for key in sorted(value, key=str):
                visit(value[key])

    attrs = vars(obj)
    for key in sorted(attrs):
        if not key.startswith("_tf_"):
            visit(attrs[key])
    for module in submodules:
        found.extend(walk_attributes(module, predicate, seen))
    return found


class Module:
    """Base class for objects that own variables (``tf.Module``)."""

    def __init__(self, name: str | None = None):
        self._tf_name = name or camel_to_snake(type(self).__name__)

    @property
    def name(self) -> str:
        return self._tf_name

    @property
    def name_scope(self):
        return _name_scope(self._tf_name)

    @property
    def variables(self) -> tuple:
        return tuple(walk_attributes(self, lambda v: isinstance(v, Variable)))

    @property
    def trainable_variables(self) -> tuple:
        return tuple(v for v in self.variables if v.trainable)

    @property
    def non_trainable_variables(self) -> tuple:
        return tuple(v for v in self.variables if not v.trainable)

    @property
    def submodules(self) -> tuple:
        return tuple(m for m in walk_attributes(self, lambda v: isinstance(v, Module)))
