"""``tf.keras.mixed_precision.Policy``: which dtype a layer computes in and which its variables
are stored in.

``"mixed_float16"`` / ``"mixed_bfloat16"`` compute in the 16-bit type and keep float32 variables
(read through ``AutoCastVariable``); any float dtype name is a policy computing and storing in
that dtype. The global policy is what layers get when no ``dtype=`` is passed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from tapeflow.framework import dtypes as _dtypes

_MIXED = {"mixed_float16": "float16", "mixed_bfloat16": "bfloat16"}


class Policy:
    """A dtype policy: ``Policy("mixed_float16").compute_dtype == "float16"`` and
    ``.variable_dtype == "float32"``."""

    def __init__(self, name: str):
        if isinstance(name, _dtypes.DType):
            raise TypeError(f"'name' must be a string, not a DType. Instead, pass "
                            f"DType.name. Got: {name.name}")
        if not isinstance(name, str):
            raise TypeError(f"'name' must be a string, but got: {name!r}")
        self._name = name
        self._compute_dtype, self._variable_dtype = _parse(name)

    @property
    def name(self) -> str:
        return self._name

    @property
    def compute_dtype(self) -> str | None:
        """The dtype layers compute in (inputs are cast to it, variables read as it)."""
        return self._compute_dtype

    @property
    def variable_dtype(self) -> str | None:
        """The dtype layer variables are created in."""
        return self._variable_dtype

    def __repr__(self) -> str:
        return f'<Policy "{self._name}">'

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Policy) and other._name == self._name

    def __hash__(self) -> int:
        return hash(self._name)

    def get_config(self) -> dict[str, Any]:
        return {"name": self._name}

    @classmethod
    def from_config(cls, config: dict[str, Any], custom_objects: Any = None) -> Policy:
        return cls(**config)


def _parse(name: str) -> tuple[str | None, str | None]:
    if name in _MIXED:
        return _MIXED[name], "float32"
    if name == "_infer":  # Keras 1 behaviour: take the dtype of the first input
        return None, None
    try:
        dtype = _dtypes.as_dtype(name).name
    except TypeError:
        raise ValueError(f"Cannot convert value {name} to a mixed precision Policy. Valid "
                         f"policies include 'mixed_float16', 'mixed_bfloat16', and the name of "
                         f"any dtype such as 'float32'.") from None
    return dtype, dtype


_global: dict[str, Policy | None] = {"policy": None}


def global_policy() -> Policy:
    """The policy of layers created without ``dtype=``: the one ``set_global_policy`` set,
    else ``floatx()`` (``"float32"``)."""
    policy = _global["policy"]
    if policy is not None:
        return policy
    from tapeflow.keras import backend

    return Policy(backend.floatx())


def set_global_policy(policy: Policy | str | None) -> None:
    """Make `policy` the default of layers created from now on (None: back to floatx)."""
    if policy is not None and not isinstance(policy, Policy):
        policy = Policy(policy)
    if policy is not None:
        compute = policy.compute_dtype
        if compute is None or not _dtypes.as_dtype(compute).is_floating:
            raise ValueError(f"set_global_policy can only be used to set the global policy to "
                             f"floating-point policies, such as \"float32\" and "
                             f"\"mixed_float16\", but got policy: {policy.name}")
    _global["policy"] = policy


@contextlib.contextmanager
def policy_scope(policy: Policy | str) -> Iterator[None]:
    """`policy` as the global policy inside the block only: a program that builds one model
    in mixed precision (the CLI, a test) leaves the process's default as it found it."""
    previous = _global["policy"]
    try:
        set_global_policy(policy)
        yield
    finally:
        _global["policy"] = previous


def is_mixed(policy: Policy) -> bool:
    return policy.compute_dtype != policy.variable_dtype


def get(value: Any) -> Policy:
    """A layer's ``dtype=`` argument as a Policy: None (the global policy), a name, a DType, a
    Policy or its serialized dict."""
    if value is None:
        return global_policy()
    if isinstance(value, Policy):
        return value
    if isinstance(value, dict):
        return deserialize(value)
    if isinstance(value, _dtypes.DType):
        return Policy(value.name)
    if not isinstance(value, str):
        value = _dtypes.as_dtype(value).name
    return Policy(value)


def serialize(policy: Policy) -> str | dict[str, Any]:
    """What a layer config stores under ``"dtype"``: the plain dtype name for a non-mixed policy,
    Keras's ``{'module', 'class_name', 'config', 'registered_name'}`` dict for a mixed one."""
    if not is_mixed(policy) and policy.name == policy.compute_dtype:
        return policy.name
    return {"module": "keras.mixed_precision", "class_name": "Policy",
            "config": policy.get_config(), "registered_name": None}


def deserialize(config: dict[str, Any]) -> Policy:
    if config.get("class_name") not in ("Policy", "DTypePolicy"):
        raise ValueError(f"Unknown dtype policy config: {config!r}")
    return Policy.from_config(config.get("config", {}))
