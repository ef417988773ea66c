"""Custom classes by name: ``register_keras_serializable`` and ``custom_object_scope``.

A saved config names a class (``"class_name": "Scaled"``, ``"registered_name":
"fixtures>Scaled"``); loading finds it here, in the ``custom_objects`` passed to the loader or
in an open ``custom_object_scope``. Only registered or passed classes are ever instantiated:
a file cannot name an arbitrary importable Python object.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

_GLOBAL_CUSTOM_OBJECTS: dict[str, Any] = {}
_GLOBAL_CUSTOM_NAMES: dict[Any, str] = {}


class _Scopes(threading.local):
    stack: list[dict[str, Any]]

    def __init__(self) -> None:
        self.stack = []


_scopes = _Scopes()


def register_keras_serializable(package: str = "Custom", name: str | None = None
                                ) -> Callable[[Any], Any]:
    """Decorator registering a class or function as ``package>name`` for loading."""

    def decorator(arg: Any) -> Any:
        class_name = name if name is not None else arg.__name__
        registered_name = f"{package}>{class_name}"
        if isinstance(arg, type) and not hasattr(arg, "get_config"):
            raise ValueError(f"Cannot register {arg.__name__}: a class needs get_config to be "
                             "serializable.")
        if registered_name in _GLOBAL_CUSTOM_OBJECTS:
            raise ValueError(f"{registered_name} has already been registered to "
                             f"{_GLOBAL_CUSTOM_OBJECTS[registered_name]}")
        _GLOBAL_CUSTOM_OBJECTS[registered_name] = arg
        _GLOBAL_CUSTOM_NAMES[arg] = registered_name
        return arg

    return decorator


def get_registered_name(obj: Any) -> str:
    """``package>name`` for a registered class or function, else its ``__name__``."""
    return _GLOBAL_CUSTOM_NAMES.get(obj, getattr(obj, "__name__", type(obj).__name__))


def get_registered_object(name: str, custom_objects: dict | None = None,
                          module_objects: dict | None = None) -> Any:
    """The object called `name` in the open scopes, `custom_objects`, the registry or
    `module_objects` (first match wins); None when it is in none of them."""
    for scope in reversed(_scopes.stack):
        if name in scope:
            return scope[name]
    if custom_objects and name in custom_objects:
        return custom_objects[name]
    if name in _GLOBAL_CUSTOM_OBJECTS:
        return _GLOBAL_CUSTOM_OBJECTS[name]
    if module_objects and name in module_objects:
        return module_objects[name]
    return None


def get_custom_objects() -> dict[str, Any]:
    """The global registry (a live dict, as in Keras: adding to it registers)."""
    return _GLOBAL_CUSTOM_OBJECTS


class CustomObjectScope:
    """``with custom_object_scope({"Scaled": Scaled}):`` makes the names loadable inside."""

    def __init__(self, *objects: dict | None) -> None:
        self._objects: dict[str, Any] = {}
        for mapping in objects:
            self._objects.update(mapping or {})

    def __enter__(self) -> CustomObjectScope:
        _scopes.stack.append(self._objects)
        return self

    def __exit__(self, *exc: Any) -> None:
        _scopes.stack.pop()


custom_object_scope = CustomObjectScope
