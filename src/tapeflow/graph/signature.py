"""Call signatures of traced functions: cache keys, input_signature checks, retrace reasons.

A key has one token per argument leaf: tensors by (shape, dtype), Python scalars by value (TF's
rule: ``add(2, 3)`` and ``add(4, 3)`` trace twice), variables and other objects by identity.
Each token carries the argument path ("x", "state[1]") so a retrace can say what changed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework import errors
from tapeflow.framework.composite import CompositeTensor, TypeSpec
from tapeflow.framework.shapes import TensorShape
from tapeflow.framework.tensor import Tensor
from tapeflow.framework.tensor_spec import TensorSpec
from tapeflow.framework.variable import Variable


class Signature:
    """The flattened view of one call: key tokens, their paths, and the tensor leaves."""

    __slots__ = ("tokens", "paths", "tensors", "key")

    def __init__(self, tokens: list, paths: list[str], tensors: list):
        self.tokens = tokens
        self.paths = paths
        self.tensors = tensors
        self.key = tuple(tokens)


def is_tensor_leaf(x: Any) -> bool:
    return isinstance(x, (Tensor, np.ndarray, TensorSpec))


def tensor_token(x: Any) -> tuple:
    if isinstance(x, np.ndarray):
        return ("T", x.shape, _dtypes.from_numpy(x.dtype))
    return ("T", x.shape.as_tuple(), _dtypes.as_dtype(x.dtype))


def signature_of(named_args: list[tuple[str, Any]]) -> Signature:
    """Walk (name, value) pairs into a Signature."""
    tokens: list = []
    paths: list[str] = []
    tensors: list = []

    def walk(x: Any, path: str) -> None:
        if isinstance(x, (CompositeTensor, TypeSpec)) and not isinstance(x, TensorSpec):
            spec = x if isinstance(x, TypeSpec) else x._type_spec
            tokens.append(("C", spec._key()))
            paths.append(path)
            parts = spec._component_specs() if x is spec else spec._to_components(x)
            for i, part in enumerate(parts):
                walk(part, f"{path}.{i}")
        elif is_tensor_leaf(x):
            tokens.append(tensor_token(x))
            paths.append(path)
            tensors.append(x)
        elif isinstance(x, Variable):
            tokens.append(("V", id(x)))
            paths.append(path)
        elif isinstance(x, Mapping):
            tokens.append(("{", type(x), tuple(sorted(x))))
            paths.append(path)
            for k in sorted(x):
                walk(x[k], f"{path}[{k!r}]")
        elif isinstance(x, (list, tuple)):
            tokens.append(("(", type(x), len(x)))
            paths.append(path)
            for i, e in enumerate(x):
                walk(e, f"{path}[{i}]")
        else:
            try:
                hash(x)
                tokens.append(("P", type(x), x))
            except TypeError:
                tokens.append(("O", id(x)))
            paths.append(path)

    for name, value in named_args:
        walk(value, name)
    return Signature(tokens, paths, tensors)


def relax(a: tuple, b: tuple) -> tuple | None:
    """The key matching both `a` and `b` with differing tensor dims as None (or None)."""
    if len(a) != len(b):
        return None
    out = []
    for ta, tb in zip(a, b):
        if ta[0] == "T" and tb[0] == "T" and ta[2] is tb[2]:
            shape = TensorShape(ta[1]).most_specific_common_supertype([TensorShape(tb[1])])
            out.append(("T", shape.as_tuple(), ta[2]))
        elif ta != tb:
            return None
        else:
            out.append(ta)
    return tuple(out)


def matches(pattern: tuple, key: tuple) -> bool:
    """True when `key` is an instance of `pattern` (tensor shapes compatible, rest equal)."""
    if len(pattern) != len(key):
        return False
    for tp, tk in zip(pattern, key):
        if tp[0] == "T" and tk[0] == "T":
            if tp[2] is not tk[2] or not TensorShape(tp[1]).is_compatible_with(
                    TensorShape(tk[1])):
                return False
        elif tp != tk:
            return False
    return True


def _describe(token: tuple) -> str:
    kind = token[0]
    if kind == "T":
        shape = "<unknown>" if token[1] is None else list(token[1])
        return f"{token[2].name} tensor of shape {shape}"
    if kind == "P":
        return f"Python {token[1].__name__} {token[2]!r}"
    if kind == "V":
        return "a different tf.Variable"
    if kind == "O":
        return f"object id {token[1]}"
    if kind == "C":  # a composite: its spec's key, (spec type, what else it keys on)
        head = token[1][0]
        return f"{getattr(head, '__name__', head)} {token[1][1:]!r}"
    return f"{token[1].__name__} of {token[2] if kind == '(' else len(token[2])} items"


def explain(old: Signature, new: Signature) -> list[tuple[str, str]]:
    """[(argument path, 'old -> new')] for the leaves that differ between two calls."""
    if len(old.tokens) != len(new.tokens):
        return [("<arguments>", f"structure changed ({len(old.tokens)} -> {len(new.tokens)} "
                                f"leaves)")]
    diffs = []
    for path, a, b in zip(new.paths, old.tokens, new.tokens):
        if a != b:
            if a[0] == "T" and b[0] == "T" and a[2] is b[2]:
                what = f"shape {_shape(a[1])} -> {_shape(b[1])}"
            elif a[0] == "T" and b[0] == "T":
                what = f"dtype {a[2].name} -> {b[2].name}"
            elif a[0] == "P" and b[0] == "P":
                what = f"Python value {a[2]!r} -> {b[2]!r} (Python values are traced by value)"
            else:
                what = f"{_describe(a)} -> {_describe(b)}"
            diffs.append((path, what))
    return diffs


def _shape(dims: tuple | None) -> str:
    return "<unknown>" if dims is None else str(list(dims)).replace("None", "?")


def check_against_specs(values: list, specs: list, names: list[str], fn_name: str) -> list:
    """input_signature: convert each value to a tensor matching its spec, or raise naming it."""
    from tapeflow.framework.constant import convert_to_tensor

    out = []
    for value, spec, name in zip(values, specs, names):
        try:
            t = value if isinstance(value, Tensor) else convert_to_tensor(value, spec.dtype)
        except (TypeError, ValueError) as e:
            raise TypeError(f"{fn_name}: argument '{name}' cannot be converted to {spec}: {e}"
                            f"\n{errors.user_line()}") from e
        if t.dtype is not spec.dtype:
            raise TypeError(f"{fn_name}: argument '{name}' has dtype {t.dtype.name} but the "
                            f"input_signature requires {spec.dtype.name} ({spec})"
                            f"\n{errors.user_line()}")
        if not spec.shape.is_compatible_with(t.shape):
            raise TypeError(f"{fn_name}: argument '{name}' has shape {_shape(t.shape.as_tuple())}"
                             f" which is incompatible with the input_signature shape "
                             f"{_shape(spec.shape.as_tuple())} ({spec})"
                             f"\n{errors.user_line()}")
        out.append(t)
    return out
