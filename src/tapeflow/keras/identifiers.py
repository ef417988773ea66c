"""Keras's ways to name a weight regularizer or constraint in a layer's arguments: a name
("l2", "max_norm"), a ``{"class_name", "config"}`` dict, an instance or any callable."""

from __future__ import annotations

from typing import Any


class Registry:
    """The classes of one kind by name, with Keras's ``get``/``serialize``/``deserialize``."""

    def __init__(self, kind: str, by_name: dict[str, type]):
        self.kind, self.by_name = kind, by_name

    def _lookup(self, name: str) -> type:
        if name not in self.by_name:
            raise ValueError(f"Unknown {self.kind}: {name!r}. Known: {sorted(self.by_name)}")
        return self.by_name[name]

    def serialize(self, instance: Any) -> dict:
        return {"class_name": type(instance).__name__, "config": instance.get_config()}

    def deserialize(self, config: dict) -> Any:
        return self._lookup(config["class_name"]).from_config(config.get("config", {}))

    def get(self, identifier: Any) -> Any:
        """An instance from a name, a config dict, an instance or a callable (None stays None)."""
        if identifier is None or callable(identifier):
            return identifier
        if isinstance(identifier, str):
            return self._lookup(identifier)()
        if isinstance(identifier, dict):
            return self.deserialize(identifier)
        raise ValueError(f"Could not interpret {self.kind} identifier: {identifier!r}")
