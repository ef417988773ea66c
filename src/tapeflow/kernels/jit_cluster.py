"""One compiled loop for a cluster of elementwise ops (``tf.function(jit_compile=True)``).

A cluster (``graph/passes/jit_cluster.py``) is a tree of elementwise ops with one output and no
value between them read elsewhere. NumPy would run it as one pass and one new array per op;
here it becomes one numba loop that reads each input once, keeps the intermediate values in
registers and writes the output once. Inputs are the output's shape ("full"), its last
dimension broadcast over the rows ("row", a bias), or one element ("scalar").

Each step is a NumPy ufunc (numba compiles it per element) or a ``scalar_math`` function, with
optional constant operands, in the cluster's float dtype. A cluster may also write
out values computed on the way (``extra``: Adam's new moments, which variables are assigned,
beside the update that reads them), or end in a reduction (a
sum or mean over every axis or over the last one): the loop then adds each last value into a
float64 accumulator (per row, or one for all) and writes only the sums, so the summed
elementwise result is never stored either. The generated source is written to a
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


REDUCTIONS = ("sum", "mean")
OVER = ("all", "last")


@dataclass(frozen=True)
class Program:
    """What a cluster computes. `steps` are (fn, refs, constants): ref i < len(kinds) is input
    i, otherwise the value of step i - len(kinds); the last step is the output, or with
    `reduce` ("sum" or "mean") what is reduced over `over` ("all" axes or the "last") into an
    array of `out_shape` (`shape` is then the reduced input's)."""

    dtype: str
    shape: tuple
    kinds: tuple
    steps: tuple
    reduce: str | None = None
    over: str = "all"
    out_shape: tuple | None = None
    extra: tuple = ()  # refs of further values written out (a multi-output cluster), in order

    def __post_init__(self) -> None:
        if self.reduce is not None and (self.reduce not in REDUCTIONS or self.over not in OVER
                                        or self.out_shape is None or self.extra):
            raise ValueError(f"jit cluster: bad reduction {self.reduce!r} over {self.over!r} "
                             f"to {self.out_shape!r}")
        n = len(self.kinds)
        if any(not n <= r < n + len(self.steps) - 1 for r in self.extra):
            raise ValueError(f"jit cluster: extra outputs {self.extra!r} must be steps before "
                             "the last")

    @property
    def result_shape(self) -> tuple:
        return self.shape if self.reduce is None else self.out_shape

    def __repr__(self) -> str:  # shown by the printed graph
        names = [_fn_name(fn) for fn, _, _ in self.steps]
        if self.reduce is not None:
            names.append(f"{self.reduce}({self.over})")
        return f"<{len(names)} ops: {', '.join(names)}>"


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
    reduce = program.reduce
    if reduce is None:
        params = ", ".join(["out"] + [f"out{j}" for j in range(len(program.extra))]
                           + [f"x{i}" for i in range(n)])
        body = [f"def cluster({params}):", "    rows, cols = out.shape"]
    else:  # out is the flat result: one value, or one per row
        params = ", ".join(["out", "rows", "cols"] + [f"x{i}" for i in range(n)])
        body = [f"def cluster({params}):"]
    body += [f"    s{i} = x{i}[0]" for i, k in enumerate(program.kinds) if k == "scalar"]
    if reduce is not None and program.over == "all":
        body.append("    acc = 0.0")
    body.append("    for r in range(rows):")
    if reduce is not None and program.over == "last":
        body.append("        acc = 0.0")
    body.append("        for c in range(cols):")
    read = {"full": "x{i}[r, c]", "row": "x{i}[c]", "scalar": "s{i}"}

    def value(ref: int) -> str:
        return read[program.kinds[ref]].format(i=ref) if ref < n else f"v{ref - n}"

    for j, (fn, refs, consts) in enumerate(program.steps):
        if not supported(fn):
            raise ValueError(f"jit cluster: no per-element form for {fn!r}")
        module = "np" if isinstance(fn, np.ufunc) else "sm"
        args = [value(r) for r in refs] + [f"dt({float(c)!r})" for c in consts]
        body.append(f"            v{j} = {module}.{fn.__name__}({', '.join(args)})")
    last = f"v{len(program.steps) - 1}" if program.steps else value(0)
    if reduce is None:
        body += [f"            out{j}[r, c] = {value(ref)}" for j, ref in enumerate(program.extra)]
        body.append(f"            out[r, c] = {last}")
    else:
        body.append(f"            acc += {last}")
        count = "cols" if program.over == "last" else "rows * cols"
        total = f"acc / ({count})" if reduce == "mean" else "acc"
        if program.over == "last":
            body.append(f"        out[r] = {total}")
        else:
            body.append(f"    out[0] = {total}")
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
    out = np.empty(program.result_shape, dtype)
    flat = [a.reshape(dims) if f else a.reshape(-1) for a, f in zip(arrays, full)]
    if program.reduce is not None:
        loop(out.reshape(-1), dims[0], dims[1], *flat)
        return out
    if not program.extra:
        loop(out.reshape(dims), *flat)
        return out
    extra = [np.empty(program.shape, dtype) for _ in program.extra]
    loop(out.reshape(dims), *[e.reshape(dims) for e in extra], *flat)
    return (out, *extra)


def _numpy(program: Program, arrays: tuple, dtype: np.dtype) -> np.ndarray:
    values = list(arrays)
    for fn, refs, consts in program.steps:
        args = [values[r] for r in refs] + [dtype.type(c) for c in consts]
        values.append(np.asarray(fn(*args), dtype=dtype))
    full = np.broadcast_to(values[-1], program.shape)
    if program.reduce is None:
        if program.extra:
            return tuple(np.broadcast_to(values[r], program.shape).astype(dtype, copy=True)
                         for r in (len(values) - 1, *program.extra))
        return full.astype(dtype, copy=True)
    axes = tuple(range(full.ndim)) if program.over == "all" else (full.ndim - 1,)
    reduce = np.sum if program.reduce == "sum" else np.mean
    return reduce(full, axis=axes, dtype=np.float64).astype(dtype).reshape(program.out_shape)
