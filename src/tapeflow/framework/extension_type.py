"""``tf.experimental.ExtensionType``: user-defined composite tensors.

A subclass declares typed fields with annotations; ``tf.Tensor`` (or tensor-like) fields become
component tensors and the rest (ints, strings, tuples ...) static metadata. The generated
``__init__`` converts tensor fields and calls ``__validate__``; values are immutable. The type's
spec (``ExtensionTypeSpec``) flattens a value into its component tensors, so extension types
pass through ``tf.function`` (as arguments and results, with retracing keyed on the metadata),
``tf.nest`` (``expand_composites=True``), ``tf.data`` and ``dispatch_for_api``.
"""

from __future__ import annotations

import typing
from typing import Any

from tapeflow._api import export
from tapeflow.framework.composite import CompositeTensor, TypeSpec
from tapeflow.framework.constant import convert_to_tensor
from tapeflow.framework.tensor import Tensor
from tapeflow.framework.tensor_spec import TensorSpec


def _is_tensor_annotation(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, Tensor)


def _fields(cls: type) -> dict:
    out: dict = {}
    for klass in reversed(cls.__mro__):
        for name, annotation in vars(klass).get("__annotations__", {}).items():
            if not name.startswith("_"):
                out[name] = annotation
    return out


def _resolve(cls: type, fields: dict) -> dict:
    try:
        hints = typing.get_type_hints(cls)
    except Exception:  # noqa: BLE001 - unresolvable string annotations stay as written
        hints = {}
    return {name: hints.get(name, ann) for name, ann in fields.items()}


def _spec_key(spec: Any) -> tuple:
    """A component's part of the cache key (its shape goes in the component's own token)."""
    return spec._key() if isinstance(spec, TypeSpec) else (type(spec), spec.dtype)


@export("experimental.ExtensionTypeSpec")
class ExtensionTypeSpec(TypeSpec):
    """An extension type's spec: its class, static field values and component specs."""

    def __init__(self, value_type: type, static: tuple, parts: tuple):
        self.value_type = value_type
        self._static = static  # ((field name, value), ...) of the non-tensor fields
        self._parts = parts    # ((field name, TensorSpec or TypeSpec), ...)

    def _key(self) -> tuple:
        return (ExtensionTypeSpec, self.value_type, self._static,
                tuple((n, _spec_key(s)) for n, s in self._parts))

    def _component_specs(self) -> list:
        return [s for _, s in self._parts]

    def _to_components(self, value: Any) -> list:
        return [getattr(value, n) for n, _ in self._parts]

    def _from_components(self, components: list) -> Any:
        obj = object.__new__(self.value_type)
        for name, v in self._static:
            object.__setattr__(obj, name, v)
        for (name, _), v in zip(self._parts, components):
            object.__setattr__(obj, name, v)
        return obj

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, ExtensionTypeSpec) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash((self.value_type, self._static))

    def __repr__(self) -> str:
        return f"{self.value_type.__name__}.Spec(static={dict(self._static)})"


@export("experimental.ExtensionType")
class ExtensionType(CompositeTensor):
    """Base class of user-defined composite tensors (see the module docstring)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "__init__" not in cls.__dict__:
            cls.__init__ = _make_init(cls)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable: cannot assign {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable: cannot delete {name!r}")

    @property
    def _type_spec(self) -> ExtensionTypeSpec:
        static, parts = [], []
        for name in _fields(type(self)):
            value = getattr(self, name)
            if isinstance(value, CompositeTensor):
                parts.append((name, value._type_spec))
            elif isinstance(value, Tensor):
                parts.append((name, TensorSpec(value.shape, value.dtype)))
            else:
                static.append((name, _hashable(value)))
        return ExtensionTypeSpec(type(self), tuple(static), tuple(parts))

    def __repr__(self) -> str:
        inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in _fields(type(self)))
        return f"{type(self).__name__}({inner})"

    def __eq__(self, other: Any) -> Any:
        if type(other) is not type(self):
            return False
        return all(_same(getattr(self, n), getattr(other, n)) for n in _fields(type(self)))

    __hash__ = None


def _same(a: Any, b: Any) -> bool:
    import numpy as np

    if isinstance(a, Tensor) or isinstance(b, Tensor):
        return bool(np.array_equal(np.asarray(a), np.asarray(b)))
    return a == b


def _hashable(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _hashable(v)) for k, v in value.items()))
    return value


def _make_init(cls: type):
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:  # noqa: N807
        fields = _resolve(type(self), _fields(type(self)))
        names = list(fields)
        if len(args) > len(names):
            raise TypeError(f"{type(self).__name__} takes {len(names)} fields, got "
                            f"{len(args)} positional arguments")
        values = dict(zip(names, args))
        for k, v in kwargs.items():
            if k not in fields:
                raise TypeError(f"{type(self).__name__} has no field {k!r}")
            values[k] = v
        for name in names:
            if name not in values:
                if hasattr(type(self), name):
                    values[name] = getattr(type(self), name)
                else:
                    raise TypeError(f"{type(self).__name__} missing field {name!r}")
            value = values[name]
            if _is_tensor_annotation(fields[name]) and not isinstance(
                    value, (Tensor, CompositeTensor)):
                value = convert_to_tensor(value)
            object.__setattr__(self, name, value)
        validate = getattr(self, "__validate__", None)
        if validate is not None:
            validate()

    return __init__


@export("experimental.BatchableExtensionType")
class BatchableExtensionType(ExtensionType):
    """An ExtensionType whose values can be batched (here: the same as ExtensionType)."""

