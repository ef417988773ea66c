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

    Depth-first in attribute order, each object once (modules reached twice count once).
    """
    seen = set() if seen is None else seen
    found: list = []

    def visit(value: Any) -> None:
        if id(value) in seen:
            return
        if predicate(value):
            seen.add(id(value))
            found.append(value)
            if not isinstance(value, Module):
                return
        if isinstance(value, Module):
            seen.add(id(value))
            for key, child in vars(value).items():
                if not key.startswith("_tf_"):
                    visit(child)
        elif isinstance(value, (list, tuple)):
            for child in value:
                visit(child)
        elif isinstance(value, dict):
            for key in sorted(value, key=str):
                visit(value[key])

    for key, child in vars(obj).items():
        if not key.startswith("_tf_"):
            visit(child)
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
