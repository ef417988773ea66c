"""One compiled loop for a cluster of elementwise ops (``tf.function(jit_compile=True)``).

A cluster (``graph/passes/jit_cluster.py``) is a tree of elementwise ops with one output and no
value between them read elsewhere. NumPy would run it as one pass and one new array per op;
here it becomes one numba loop that reads each input once, keeps the intermediate values in
registers and writes the output once. Inputs are the output's shape ("full"), its last
dimension broadcast over the rows ("row", a bias), or one element ("scalar").

Each step is a NumPy ufunc (numba compiles it per element) or a ``scalar_math`` function, with
optional constant operands, in the cluster's float dtype. The generated source is written to a
cache directory (``TAPEFLOW_JIT_CACHE``, else ``~/.cache/tapeflow/jit``) under a name made from
its hash, and numba keeps the machine code beside it (``cache=True``): another process that
builds the same cluster loads it instead of compiling again. Without numba the same steps run
as NumPy calls.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from tapeflow.kernels import _jit, scalar_math

KINDS = ("full", "row", "scalar")


@dataclass(frozen=True)
class Program:
    """What a cluster computes. `steps` are (fn, refs, constants): ref i < len(kinds) is input
    i, otherwise the value of step i - len(kinds); the last step is the output."""

    dtype: str
    shape: tuple
    kinds: tuple
    steps: tuple

    def __repr__(self) -> str:  # shown by the printed graph
        names = ", ".join(_fn_name(fn) for fn, _, _ in self.steps)
        return f"<{len(self.steps)} ops: {names}>"


def supported(fn: Callable) -> bool:
    """Whether a compiled loop can call `fn` per element."""
    if isinstance(fn, np.ufunc):
        return fn.nout == 1 and getattr(np, fn.__name__, None) is fn and fn in _numba_ufuncs()
    return getattr(scalar_math, getattr(fn, "__name__", ""), None) is fn


def _fn_name(fn: Callable) -> str:
    return fn.__name__ if isinstance(fn, np.ufunc) else getattr(fn, "__name__", "?")


_ufuncs: list = []


def _numba_ufuncs() -> frozenset:
    if not _ufuncs:
        try:
            from numba.np import ufunc_db

            _ufuncs.append(frozenset(ufunc_db.get_ufuncs()))
        except ImportError:
            _ufuncs.append(frozenset())
    return _ufuncs[0]


def source(program: Program) -> str:
    """The numba source of `program`'s loop: only identifiers made here, NumPy/scalar_math
    function names checked against those modules, and float constants."""
    n = len(program.kinds)
    params = ", ".join(["out"] + [f"x{i}" for i in range(n)])
    body = [f"def cluster({params}):", "    rows, cols = out.shape"]
    body += [f"    s{i} = x{i}[0]" for i, k in enumerate(program.kinds) if k == "scalar"]
    body += ["    for r in range(rows):", "        for c in range(cols):"]
    read = {"full": "x{i}[r, c]", "row": "x{i}[c]", "scalar": "s{i}"}

    def value(ref: int) -> str:
        return read[program.kinds[ref]].format(i=ref) if ref < n else f"v{ref - n}"

    for j, (fn, refs, consts) in enumerate(program.steps):
        if not supported(fn):
            raise ValueError(f"jit cluster: no per-element form for {fn!r}")
        module = "np" if isinstance(fn, np.ufunc) else "sm"
        args = [value(r) for r in refs] + [f"dt({float(c)!r})" for c in consts]
        body.append(f"            v{j} = {module}.{fn.__name__}({', '.join(args)})")
    body.append(f"            out[r, c] = v{len(program.steps) - 1}")
    header = ["import numpy as np", "from numba import njit",
              "from tapeflow.kernels import scalar_math as sm", "",
              f"dt = np.{np.dtype(program.dtype).name}", "", "",
              '@njit(cache=True, nogil=True, error_model="numpy")']
    return "\n".join(header + body) + "\n"


_compiled: dict[str, Callable] = {}
_lock = threading.Lock()


def cache_dir() -> str:
    root = os.environ.get("TAPEFLOW_JIT_CACHE")
    if not root:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"),
                                                                 ".cache")
        root = os.path.join(base, "tapeflow", "jit")
    return root


def compiled(program: Program) -> Callable | None:
    """The loop for `program` (compiled once per process, loaded from disk when cached), or
    None without numba."""
    if _jit._numba is None:
        return None
    text = source(program)
    key = hashlib.sha256(text.encode()).hexdigest()[:24]
    fn = _compiled.get(key)
    if fn is None:
        with _lock:
            fn = _compiled.get(key) or _load(text, key)
            _compiled[key] = fn
    return fn


def _load(text: str, key: str) -> Callable:
    folder = cache_dir()
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"cluster_{key}.py")
    if not os.path.exists(path):  # written once, atomically: numba's cache keys on its stamp
        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    name = f"tapeflow_jit_{key}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module.cluster


def run(program: Program, *arrays: np.ndarray) -> np.ndarray:
    """Evaluate `program` on its input arrays: one compiled pass, or NumPy without numba."""
    prepared = program.__dict__.get("_prepared")
    if prepared is None:  # once per program: the loop and the 2-D view of the shape
        shape = program.shape
        cols = shape[-1] if shape else 1
        rows = int(np.prod(shape[:-1], dtype=np.int64)) if shape else 1
        prepared = (compiled(program), (rows, cols), np.dtype(program.dtype),
                    tuple(k == "full" for k in program.kinds))
        object.__setattr__(program, "_prepared", prepared)
    loop, dims, dtype, full = prepared
    if loop is None:
        return _numpy(program, arrays, dtype)
    out = np.empty(program.shape, dtype)
    loop(out.reshape(dims), *[a.reshape(dims) if f else a.reshape(-1)
                              for a, f in zip(arrays, full)])
    return out


def _numpy(program: Program, arrays: tuple, dtype: np.dtype) -> np.ndarray:
    values = list(arrays)
    for fn, refs, consts in program.steps:
        args = [values[r] for r in refs] + [dtype.type(c) for c in consts]
        values.append(np.asarray(fn(*args), dtype=dtype))
    return np.broadcast_to(values[-1], program.shape).astype(dtype, copy=True)
