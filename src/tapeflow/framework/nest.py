"""``tf.nest``: flatten and rebuild nested structures of lists, tuples, namedtuples and dicts.

Dicts flatten in sorted-key order, as in TensorFlow, so structures round-trip deterministically.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from tapeflow.framework import composite as _composite


def _is_namedtuple(x: Any) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def is_nested(x: Any) -> bool:
    return isinstance(x, (list, tuple, Mapping))


def _children(x: Any) -> list:
    if isinstance(x, Mapping):
        return [x[k] for k in sorted(x)]
    return list(x)


def flatten(structure: Any, expand_composites: bool = False) -> list:
    """All leaves of `structure`, depth first (composites as their component tensors when
    `expand_composites`)."""
    if not is_nested(structure):
        return _composite.components(structure) if expand_composites else [structure]
    out: list = []
    stack = [structure]
    # iterative walk keeps deep structures from hitting the recursion limit
    while stack:
        item = stack.pop()
        if is_nested(item):
            stack.extend(reversed(_children(item)))
        elif expand_composites:
            out.extend(_composite.components(item))
        else:
            out.append(item)
    return out


def _rebuild(template: Any, children: list) -> Any:
    if isinstance(template, Mapping):
        keys = sorted(template)
        mapping = dict(zip(keys, children))
        try:
            return type(template)((k, mapping[k]) for k in template)
        except TypeError:
            return {k: mapping[k] for k in template}
    if _is_namedtuple(template):
        return type(template)(*children)
    if isinstance(template, tuple):
        return tuple(children)
    return list(children)


def pack_sequence_as(structure: Any, flat_sequence: Any, expand_composites: bool = False) -> Any:
    """Rebuild `structure` with the leaves taken in order from `flat_sequence`."""
    flat = list(flat_sequence)
    pos = 0

    def build(s):
        nonlocal pos
        if not is_nested(s):
            if expand_composites:
                v, pos = _composite.rebuild(s, flat, pos)
                return v
            v = flat[pos]
            pos += 1
            return v
        return _rebuild(s, [build(c) for c in _children(s)])

    result = build(structure)
    if pos != len(flat):
        raise ValueError(f"Structure had {pos} leaves but flat_sequence had {len(flat)} items")
    return result


def map_structure(func: Callable, *structures: Any, **kwargs: Any) -> Any:
    """Apply `func` leafwise across structures of the same shape."""
    if not structures:
        raise ValueError("map_structure needs at least one structure")
    for s in structures[1:]:
        assert_same_structure(structures[0], s)
    flats = [flatten(s) for s in structures]
    return pack_sequence_as(structures[0], [func(*leaves) for leaves in zip(*flats)])


def assert_same_structure(a: Any, b: Any, check_types: bool = True,
                          expand_composites: bool = False) -> None:
    """Raise ValueError if `a` and `b` do not nest the same way."""
    if is_nested(a) != is_nested(b):
        raise ValueError(f"The two structures don't have the same nested structure: {a!r} vs {b!r}")
    if not is_nested(a):
        return
    if isinstance(a, Mapping) != isinstance(b, Mapping):
        raise ValueError(f"The two structures don't have the same nested structure: {a!r} vs {b!r}")
    ca, cb = _children(a), _children(b)
    if len(ca) != len(cb) or (isinstance(a, Mapping) and sorted(a) != sorted(b)):
        raise ValueError(f"The two structures don't have the same number of elements: "
                         f"{a!r} vs {b!r}")
    for x, y in zip(ca, cb):
        assert_same_structure(x, y, check_types)
