"""Identifiers for generated source, issued from one checked namespace.

Generated code (the executor, the output packer) never splices user text into source: values
(attributes, dict keys, constants, functions) are bound as globals under names issued here, and
text that becomes a name (a function's name, a printed graph's value names) passes
``identifier``: ASCII letters, digits and underscores only, never a keyword, a soft keyword, a
builtin or a private/dunder name. So a function named ``"return"``, ``"None"`` or ``"x²"``
compiles, and no key or attribute can change what the source means.
"""

from __future__ import annotations

import builtins
import keyword


def identifier(hint: str, prefix: str = "f") -> str:
    """A safe Python identifier resembling `hint` (not necessarily unique)."""
    out = "".join(c if c.isascii() and (c.isalnum() or c == "_") else "_" for c in str(hint))
    if not out or out[0].isdigit() or out[0] == "_":
        out = f"{prefix}_{out.lstrip('_')}" if out.strip("_") else prefix
    if keyword.iskeyword(out) or keyword.issoftkeyword(out) or hasattr(builtins, out):
        out += "_"
    if not out.isidentifier():  # cannot happen: ASCII word characters, not starting with a digit
        raise AssertionError(f"not an identifier: {out!r}")
    return out


def is_keyword_argument(name: object) -> bool:
    """Whether `name` may appear as ``name=`` in a generated call."""
    return (type(name) is str and name.isidentifier() and name.isascii()
            and not keyword.iskeyword(name))


class Namespace:
    """Unique safe identifiers for one piece of generated source."""

    def __init__(self, reserved: tuple[str, ...] = ()):
        self.taken: set[str] = set(reserved)

    def fresh(self, hint: str, prefix: str = "f") -> str:
        """`identifier(hint)`, with a numeric suffix if that name is taken."""
        base = name = identifier(hint, prefix)
        k = 0
        while name in self.taken:
            k += 1
            name = f"{base}_{k}"
        self.taken.add(name)
        return name
