"""Import direction of every module: each layer imports only from the layers below it
(DESIGN.md: framework -> ops -> graph -> the libraries above), counting imports deferred into
function bodies too. What a lower layer needs from a higher one is installed from above
(``ops/operators.py``, ``ops/state_ops.py``, ``ops/array_ops.py``, ``ops/jacobian_ops.py``,
``framework/backprop.install``)."""

from __future__ import annotations

import ast
import pathlib

import tapeflow

ROOT = pathlib.Path(tapeflow.__file__).parent
LAYERS = {"_api": 0, "framework": 0, "kernels": 0, "ops": 1, "graph": 2}  # everything else: 3

# Known upward imports still to remove (module -> packages above it that it imports): none are
# left. The test fails when one is added (and when one listed here is gone).
KNOWN: dict[str, set[str]] = {}


def _layer(module: str) -> int:
    parts = module.split(".")
    return LAYERS.get(parts[1], 3) if len(parts) > 1 else 3


def _module_name(path: pathlib.Path) -> str:
    name = ".".join(("tapeflow", *path.relative_to(ROOT).with_suffix("").parts))
    return name.removesuffix(".__init__")


def _imported(tree: ast.AST) -> set[str]:
    """Every tapeflow package imported anywhere in the module (deferred imports included)."""
    found = set()
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = ([f"tapeflow.{a.name}" for a in node.names] if node.module == "tapeflow"
                     else [node.module])
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        found.update(".".join(n.split(".")[:2]) for n in names if n.startswith("tapeflow."))
    return found


def upward_imports() -> dict[str, set[str]]:
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        module = _module_name(path)
        level = _layer(module)
        if level >= 3:
            continue
        up = {m for m in _imported(ast.parse(path.read_text())) if _layer(m) > level}
        if up:
            out[module] = up
    return out


def test_every_module_imports_downward_only():
    assert upward_imports() == KNOWN


def test_the_check_sees_deferred_imports():
    tree = ast.parse("def f():\n    from tapeflow.graph import ir\n    import tapeflow.keras\n")
    assert _imported(tree) == {"tapeflow.graph", "tapeflow.keras"}
    assert _layer("tapeflow.framework.tape") < _layer("tapeflow.ops.math_ops") < _layer(
        "tapeflow.graph.ir") < _layer("tapeflow.keras.layers")
