"""The executor: a graph becomes straight-line Python source, compiled once.

One line per node calls the kernel directly (attributes are pre-bound module globals, hot ops are
inlined as NumPy calls), each value is deleted after its last use, and an elementwise op whose
first input dies at that op writes into that input's buffer. The source is registered with
``linecache`` so tracebacks and debuggers show it (and released with the function);
``Executable.code`` shows it to users. Every name in it comes from one checked namespace
(``graph/names.py``) and every value (attribute, constant, kernel) is bound, never spelled.
"""

from __future__ import annotations

import itertools
import linecache
import re
import time
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from tapeflow.framework import errors
from tapeflow.framework.variable import Variable
from tapeflow.graph import interop, memory_plan, printer, schedule
from tapeflow.graph import names as names_
from tapeflow.graph.ir import CONST, Graph, Node, SymbolicTensor

_counter = itertools.count()


def _inline(node: Node, args: list[str], bind: Callable[[Any], str], graph: Graph) -> str | None:
    """The op's own inline expression (``Op.emit``: skips the kernel's Python frame), or None.
    Variable ops call their kernels while a graph defers variable initialization."""
    op = node.op
    if op.emit is None or (op.variable is not None and graph._root().defers_variable_init):
        return None
    return op.emit(node, args, bind)


def _ufunc(node: Node) -> tuple[np.ufunc, tuple] | None:
    """The single ufunc call `node` lowers to (a ufunc kernel, or the op's float lowering)."""
    k = node.op.kernel
    if isinstance(k, np.ufunc) and not node.attrs and k.nout == 1:
        return k, ()
    low = node.op.ufunc
    if low is not None and node.inputs and node.inputs[0].dtype.is_floating:
        return low
    return None


def _fresh(node: Node) -> bool:
    """Whether `node`'s outputs are new arrays the executor may overwrite once dead."""
    out = node.op.output
    return (out == "fresh" or (out == "fresh_float" and node.inputs[0].dtype.is_floating)
            or _ufunc(node) is not None)


class Executable:
    """A compiled graph: ``fn(*input_arrays) -> tuple of output arrays``, plus its source."""

    def __init__(self, fn: Callable, code: str, filename: str,
                 lines: dict[int, tuple[Node, list[str]]],
                 plan: Callable[[], memory_plan.MemoryPlan] | None = None):
        self.fn = fn
        self.code = code
        self.filename = filename
        self.lines = lines
        self._plan = plan

    def memory_plan(self) -> memory_plan.MemoryPlan:
        """Each buffer's lifetime and the predicted peak bytes (``graph/memory_plan.py``)."""
        return self._plan()

    def __call__(self, *arrays):
        try:
            return self.fn(*arrays)
        except Exception as e:
            raise self.runtime_error(e) from e

    def runtime_error(self, e: Exception) -> Exception:
        """Map an exception raised by generated code to the node and the user's line."""
        tb = e.__traceback__
        node = frame = None
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == self.filename:
                node, args = self.lines.get(tb.tb_lineno, (None, []))
                frame = tb.tb_frame
            tb = tb.tb_next
        if frame is not None and getattr(e, "_tapeflow_line", None) in self.lines:
            node, args = self.lines[e._tapeflow_line]  # raised by a node run on the worker
        if node is None:
            return e
        if isinstance(e, errors.OpError) and getattr(e, "_located", False):
            return e
        shapes = []
        for t, name in zip(node.inputs, args):
            v = frame.f_locals.get(name, frame.f_globals.get(name))
            shapes.append(f"{v.dtype}{list(v.shape)}" if isinstance(v, np.ndarray)
                          else str(t.shape))
        msg = (f"{node.op.name} (node {node.name}) failed on inputs ({', '.join(shapes)}): "
               f"{getattr(e, 'message', e)}\n  traced at {node.location}")
        if isinstance(e, NotImplementedError):
            return NotImplementedError(msg)
        cls = type(e) if isinstance(e, errors.OpError) else errors.InvalidArgumentError
        err = cls(None, node.op.name, msg)
        err._located = True
        return err


def _keywords(attrs: dict, bind: Callable[..., str]) -> list[str]:
    """Attributes as call arguments: ``name=<bound value>`` where the name is a plain
    identifier, and any other names in one bound dict passed as ``**<bound dict>``."""
    plain = [f"{k}={bind(v, k)}" for k, v in attrs.items() if names_.is_keyword_argument(k)]
    other = {k: v for k, v in attrs.items() if not names_.is_keyword_argument(k)}
    return plain + ([f"**{bind(other, 'attrs')}"] if other else [])


def _hint(value: Any) -> str:
    """A readable name for a bound value: a function's or variable's own name, else "c"."""
    if isinstance(value, Variable):
        return value.name.split(":")[0]
    name = getattr(value, "__name__", None)
    return name.lstrip("_") if isinstance(name, str) and name.strip("_") else "c"


def kernel_name(op_name: str) -> str:
    """An op's name as a Python-style name for its kernel: "Conv2DBackpropFilter" ->
    "conv2d_backprop_filter", "AddV2" -> "add_v2"."""
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", re.sub(r"(\d)D", r"\1d", op_name))
    return words.strip("_").lower() or "kernel"


def compile_graph(graph: Graph, outputs: list | None = None, inputs: list | None = None,
                  keep_stateful: bool = True, name: str | None = None,
                  run_nodes: list | None = None, profile: dict | None = None,
                  clock: Callable[[], float] = time.perf_counter) -> Executable:
    """Generate and compile the straight-line function computing `outputs` from `inputs`.

    `inputs` default to the graph's placeholders (any tensor may be fed, as in TF1 sessions).
    With `keep_stateful`, stateful nodes run even when no output depends on them (tf.function
    semantics); without, only the ancestors of `outputs` (and `run_nodes`, fetched ops) run
    (Session.run semantics). With a `profile` dict, each node's line adds its time by `clock`
    (wall time unless told) and call count to ``profile[node]``.
    """
    outputs = list(graph.outputs if outputs is None else outputs)
    inputs = list(graph.inputs if inputs is None else inputs)
    fed = {id(t) for t in inputs}
    needed = _needed_nodes(graph, outputs, fed, keep_stateful, run_nodes or [])

    env: dict[str, Any] = {}
    bound: dict[int, str] = {}
    printed = printer.value_names(graph)  # the printed graph's names: x, t0, t1, ...
    ns = names_.Namespace(reserved=("_clock", "_t0", "_t1", *printed.values()))
    fn_name = ns.fresh(name or graph.name)

    def bind(value: Any, hint: str | None = None) -> str:
        key = id(value)
        if key not in bound:
            bound[key] = ns.fresh(hint or _hint(value), prefix="c")
            env[bound[key]] = value
        return bound[key]

    names: dict[int, str] = {}
    params = []
    for t in inputs:
        names[id(t)] = printed[id(t)]
        params.append(names[id(t)])
    locals_: set[str] = set()
    plan = []  # (node, output names or None for alias/const)
    for node in graph.nodes:
        if id(node) not in needed:
            continue
        if node.op is CONST:  # a global under its printed name
            names[id(node.outputs[0])] = printed[id(node.outputs[0])]
            env[printed[id(node.outputs[0])]] = node.attrs["value"]
            continue
        if node.op.output == "input":
            names[id(node.outputs[0])] = names[id(node.inputs[0])]
            continue
        outs = []
        for t in node.outputs:
            names[id(t)] = printed[id(t)]
            outs.append(printed[id(t)])
            locals_.add(printed[id(t)])
        plan.append(node)

    concurrent = profile is None and interop.enabled() and len(plan) > 1
    if concurrent:
        order = schedule.two_threads(plan, _producers(plan, names), _worker_ok(plan))
    else:
        order = [(node, False) for node in plan]
    last_use: dict[str, int] = {}
    use_count: dict[str, int] = {}
    for step, (node, _) in enumerate(order):
        for t in node.inputs:
            last_use[names[id(t)]] = step
            use_count[names[id(t)]] = use_count.get(names[id(t)], 0) + 1
    final = {names[id(t)] for t in outputs if isinstance(t, SymbolicTensor)}
    fresh: set[str] = set()
    pending: dict[str, tuple[Node, list[str]]] = {}  # outputs of nodes run on the worker

    def wait(names_: list[str]) -> None:
        for a in names_:
            src.append(f"    {a} = {a}.get()")
            lines[len(src)] = pending.pop(a)

    src = [f"def {fn_name}({', '.join(params)}):"]
    if profile is not None:
        env["_clock"] = clock
        src.append("    _t0 = _clock()")
    lines: dict[int, tuple[Node, list[str]]] = {}
    steps: list[memory_plan.Step] = []  # what each line allocates and frees, for the plan
    for step, (node, on_worker) in enumerate(order):
        args = [names[id(t)] for t in node.inputs]
        outs = [names[id(t)] for t in node.outputs]
        used_outs = [o for o in outs if o in last_use or o in final]
        if on_worker:  # worker nodes resolve their pending inputs there
            into = _reusable(node, args, last_use, final, fresh, step, use_count)
            line = _worker_line(node, args, outs, used_outs, bind, len(src) + 1, into)
            into = into if _ufunc(node) is not None else None
            pending.update((o, (node, args)) for o in used_outs)
        else:
            # only readers wait: a stateful node cannot disturb a pending kernel's inputs,
            # since variable writes replace a variable's buffer and never write into the old one
            wait([a for a in dict.fromkeys(args) if a in pending])
            line, into = _caller_line(node, args, outs, used_outs, bind, graph, step, last_use,
                                      final, fresh, use_count)
        if _fresh(node):
            fresh.update(outs)
        src.append(f"    {line}")
        lines[len(src)] = (node, args)
        if profile is not None:
            slot = bind(profile.setdefault(node, [0.0, 0]))
            src.append(f"    _t1 = _clock(); {slot}[0] += _t1 - _t0; {slot}[1] += 1; _t0 = _t1")
        dead = sorted({a for a in args if last_use.get(a) == step and a in locals_
                       and a not in final})
        steps.append(memory_plan.Step(node, args, outs, into, dead,
                                      _ufunc(node) is not None and node.op.emit is None))
        if dead:
            src.append(f"    del {', '.join(dead)}")
            for a in dead:  # read by worker nodes only: their readers are waited for instead
                pending.pop(a, None)
    wait(list(pending))
    rets = [names[id(t)] if isinstance(t, SymbolicTensor) else bind(t, "out") for t in outputs]
    src.append(f"    return ({', '.join(rets)}{',' if len(rets) == 1 else ''})")
    code = "\n".join(src) + "\n"
    filename = f"<tapeflow-graph {graph.name} #{next(_counter)}>"
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    env.setdefault("__name__", "tapeflow.graph.generated")  # a module name warning filters see
    exec(compile(code, filename, "exec"), env)  # noqa: S102 - our own generated source
    fn = env[fn_name]
    weakref.finalize(fn, linecache.cache.pop, filename, None)  # the source lives as long as fn
    return Executable(fn, code, filename, lines,
                      lambda: memory_plan.MemoryPlan(steps, params, final, graph.name))


def _caller_line(node: Node, args: list[str], outs: list[str], used_outs: list[str],
                 bind: Callable[[Any], str], graph: Graph, step: int, last_use: dict,
                 final: set, fresh: set, use_count: dict) -> tuple[str, str | None]:
    """The line running `node` on the calling thread: an in-place variable update, an inlined
    NumPy expression, a ufunc (into a dying input's buffer if it can), or the kernel call; and
    the input whose buffer the output takes over (None: a new buffer or a view)."""
    expr = into_name = None
    into = node.op.emit_into
    if (into is not None
            and not (node.op.variable is not None and graph._root().defers_variable_init)
            and _reusable(node, args, last_use, final, fresh, step, use_count) == args[0]):
        expr = into(node, args, bind)
        into_name = args[0] if expr is not None else None
    expr = expr or _inline(node, args, bind, graph)
    uf = _ufunc(node) if expr is None else None
    if uf is not None:
        target = _reusable(node, args, last_use, final, fresh, step, use_count)
        out_kw = f", out={target}" if target else ""
        into_name = target
        extra = "".join(f", {bind(c)}" for c in uf[1])
        expr = f"{bind(uf[0])}({', '.join(args)}{extra}{out_kw})"
    if expr is None:
        kernel = bind(node.op.kernel, kernel_name(node.op.name))
        expr = f"{kernel}({', '.join(args + _keywords(node.attrs, bind))})"
    return _assignment(node, outs, used_outs, expr), into_name


def _worker_line(node: Node, args: list[str], outs: list[str], used_outs: list[str],
                 bind: Callable[[Any], str], line: int, target: str | None) -> str:
    """The line handing `node` to the worker (``interop.launch``): its outputs become
    ``Pending`` values, waited for where the calling thread first reads them."""
    uf = _ufunc(node)
    if uf is not None:
        fn, extra = uf[0], [bind(c) for c in uf[1]]
        kw = f", out={target}" if target else ""
    else:
        fn, extra = node.op.kernel, []
        kw = "".join(f", {k}" for k in _keywords(node.attrs, bind))
    spec = bind((line, fn, len(outs) if node.op.multi_output else None), "job")
    expr = f"{bind(interop.launch)}({', '.join([spec] + args + extra)}{kw})"
    return _assignment(node, outs, used_outs, expr)


def _assignment(node: Node, outs: list[str], used_outs: list[str], expr: str) -> str:
    if not used_outs:
        return expr
    if node.op.multi_output:
        return f"{', '.join(o if o in used_outs else '_' for o in outs)}, = {expr}"
    return f"{outs[0]} = {expr}"


def _producers(plan: list[Node], names: dict) -> list[list[int]]:
    """For each plan node, the indices of the plan nodes whose outputs it reads (an alias
    shares its input's name, so it resolves to the real producer)."""
    made = {}
    for i, node in enumerate(plan):
        for t in node.outputs:
            made[names[id(t)]] = i
    return [[made[names[id(t)]] for t in node.inputs if names.get(id(t)) in made]
            for node in plan]


def _worker_ok(plan: list[Node]) -> Callable[[Node], bool]:
    """Nodes the worker may run: ops marked ``worker`` and float ufuncs that no node waits for
    by a control edge alone (``two_threads`` itself keeps stateful nodes,
    random draws included, on the caller)."""
    controlling = {id(c) for node in plan for c in node.control_inputs}

    def ok(node: Node) -> bool:
        if id(node) in controlling:
            return False
        if node.op.worker:
            return True
        uf = _ufunc(node)
        return uf is not None and all(t.dtype.is_floating for t in node.outputs)

    return ok


def _reusable(node: Node, args: list[str], last_use: dict, final: set, fresh: set,
              step: int, use_count: dict) -> str | None:
    """An input buffer the ufunc may overwrite: a fresh array (never a view, input, constant
    or variable value) whose only consumer is this node, with the output's static spec."""
    out = node.outputs[0]
    if not out.shape.is_fully_defined() or out.shape.rank == 0:
        return None
    for t, a in zip(node.inputs, args):
        if (a in fresh and last_use.get(a) == step and a not in final
                and use_count.get(a) == 1 and args.count(a) == 1
                and t.shape == out.shape and t.dtype is out.dtype):
            return a
    return None


def _needed_nodes(graph: Graph, outputs: list, fed: set, keep_stateful: bool,
                  run_nodes: list) -> set[int]:
    needed: set[int] = set()
    stack = [t.node for t in outputs if isinstance(t, SymbolicTensor) and id(t) not in fed]
    stack += run_nodes
    if keep_stateful:
        from tapeflow.graph.passes.dce import has_effect

        stack += [n for n in graph.nodes if has_effect(n)]
    while stack:
        node = stack.pop()
        if id(node) in needed:
            continue
        if node.outputs and all(id(t) in fed for t in node.outputs):
            continue
        needed.add(id(node))
        stack.extend(t.node for t in node.inputs if id(t) not in fed)
        stack.extend(node.control_inputs)
    return needed


def executable(graph: Graph) -> Executable:
    """The cached compiled form of a sub-graph (branches and loop bodies)."""
    exe = graph.__dict__.get("_executable")
    if exe is None:
        exe = compile_graph(graph)
        graph._executable = exe
    return exe

