"""``export``: declare an object's public TF names next to its definition.

``@export("add", "math.add")`` makes it ``tapeflow.add`` and ``tapeflow.math.add``; namespaces
that are not real subpackages (``math``, ``nn``, ``linalg``, ``random`` ...) are created on demand.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from collections.abc import Callable
from typing import Any

ROOT = "tapeflow"

# public namespaces that are framework modules (``tf.dtypes`` is framework/dtypes.py): names
# exported into them must land on that module, not on a stand-in the package later replaces
_MODULE_NAMESPACES = {"tapeflow.dtypes": "tapeflow.framework.dtypes",
                      "tapeflow.errors": "tapeflow.framework.errors",
                      "tapeflow.nest": "tapeflow.framework.nest"}


def _namespace(path: list[str]) -> Any:
    obj = sys.modules[ROOT]
    full = ROOT
    for part in path:
        full = f"{full}.{part}"
        child = getattr(obj, part, None)
        if child is None:
            child = sys.modules.get(full)
            if child is None and full in _MODULE_NAMESPACES:
                child = importlib.import_module(_MODULE_NAMESPACES[full])
            if (child is None and hasattr(obj, "__path__")
                    and importlib.util.find_spec(full) is not None):
                child = importlib.import_module(full)  # a real subpackage (compat, keras...)
            if child is None:
                child = types.ModuleType(full)
                sys.modules[full] = child
            setattr(obj, part, child)
        obj = child
    return obj


def export(*names: str) -> Callable[[Any], Any]:
    """Decorator registering `obj` under each dotted public name."""

    def register(obj: Any) -> Any:
        for name in names:
            *path, leaf = name.split(".")
            setattr(_namespace(path), leaf, obj)
        return obj

    return register


def export_value(name: str, value: Any) -> None:
    """Register a non-decoratable value (a constant, a dtype) under a public name."""
    export(name)(value)
