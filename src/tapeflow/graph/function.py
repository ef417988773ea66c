"""``tf.function``: trace a Python function into a graph once per input signature, then run the
compiled graph.

A `Function` holds the Python function and a cache of `ConcreteFunction`s (one traced, optimized
and compiled graph each). Called while another graph is being built, it inlines (its ops join
that graph). Called eagerly under a GradientTape, a concrete function is one op on the tape whose
gradient is a backward graph derived from the forward graph (see ``gradients.py``).
"""

from __future__ import annotations

import functools
import inspect
import json
import time
import types
import warnings
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from tapeflow._api import export
from tapeflow.framework import composite, config, errors, nest
from tapeflow.framework.composite import CompositeTensor
from tapeflow.framework.context import graph_scope
from tapeflow.framework.context import state as _state
from tapeflow.framework.dispatch import _read_grad
from tapeflow.framework.tensor import EagerTensor, Tensor, wrap
from tapeflow.framework.tensor_spec import TensorSpec
from tapeflow.framework.threads import single_threaded_blas
from tapeflow.framework.variable import Variable
from tapeflow.graph import names as names_
from tapeflow.graph import signature as sig
from tapeflow.graph.codegen import compile_graph
from tapeflow.graph.ir import Graph, SymbolicTensor
from tapeflow.graph.passes.pipeline import optimize
from tapeflow.ops import debug_ops

RETRACE_WARNING_THRESHOLD = 5
_config = {"run_eagerly": False}


class FuncGraph(Graph):
    """The graph of one trace: variables are created eagerly (lifted), on the first trace only."""

    defers_variable_init = False

    def __init__(self, name: str, allows_variable_creation: bool = True):
        super().__init__(name)
        self.allows_variable_creation = allows_variable_creation
        self.created_variables: list[Variable] = []
        self.building_function = True

    def on_variable_created(self, var: Variable) -> None:
        self.created_variables.append(var)


# called with (concrete function, the tensors of the call that traced it) after every new trace:
# tf.summary.trace_on records the graphs traced while it is on
trace_observers: list[Callable[[Any, list], None]] = []

# traced functions without a jit_compile of their own: tf.config.optimizer.set_jit recompiles
# their graphs (nothing is checked per call, and nothing is retraced)
_follows_set_jit: Any = weakref.WeakSet()


def _on_set_jit(enabled: bool) -> None:
    for fn in list(_follows_set_jit):
        for concrete in fn._concretes:
            concrete._compile(enabled)


config.jit_changed_hooks.append(_on_set_jit)


class ConcreteFunction:
    """One traced graph, optimized and compiled; callable with tensors matching its inputs."""

    def __init__(self, graph: Graph, structured_outputs: Any, name: str,
                 optimized: bool = True, input_paths: list[str] | None = None,
                 jit_compile: bool = False):
        self.traced_graph = graph
        self._optimized = optimized
        self.name = name
        self.structured_outputs = structured_outputs
        self._compile(jit_compile)
        self.input_paths = input_paths or [t.node.attrs["name"] for t in graph.inputs]
        self._single = isinstance(structured_outputs, int)
        self._pack = _make_packer(structured_outputs)

    def _compile(self, jit_compile: bool) -> None:
        """Optimize (with or without jit clusters) and generate the code that runs the graph."""
        if self._optimized:
            self.graph, self._reports = optimize(self.traced_graph, jit=jit_compile)
        else:
            self.graph, self._reports = self.traced_graph, []
        self._exe = compile_graph(self.graph, name=self.name)
        self._fn = self._exe.fn
        self._grad = None
        self._variables = None

    # --- introspection ------------------------------------------------------------------
    @property
    def code(self) -> str:
        """The generated Python source that runs this function."""
        return self._exe.code

    @property
    def inputs(self) -> list[SymbolicTensor]:
        return list(self.graph.inputs)

    @property
    def outputs(self) -> list:
        return list(self.graph.outputs)

    @property
    def variables(self) -> list[Variable]:
        if self._variables is None:
            self._variables = self.graph.variables()
        return list(self._variables)

    @property
    def trainable_variables(self) -> list[Variable]:
        return [v for v in self.variables if v.trainable]

    @property
    def structured_input_signature(self) -> list[TensorSpec]:
        return [TensorSpec(t.shape, t.dtype, p) for t, p in zip(self.graph.inputs,
                                                                self.input_paths)]

    def memory_plan(self):
        """The static memory plan: each buffer's lifetime and the predicted peak bytes of one
        call, before it runs (``print(concrete.memory_plan())``)."""
        return self._exe.memory_plan()

    def flops(self, optimized: bool = False) -> float:
        """Arithmetic of one call (multiply-adds x 2, from the ops' ``flops`` facts: matrix
        products and convolutions) in the traced graph, or in the optimized one."""
        graph = self.graph if optimized else self.traced_graph
        return float(sum(n.op.flops(n) for n in graph.nodes if n.op.flops is not None))

    def optimization_report(self) -> str:
        """What each optimizer pass changed, one line per pass."""
        before, after = len(self.traced_graph.nodes), len(self.graph.nodes)
        return "\n".join(self._reports + [f"nodes: {before} traced -> {after} optimized"])

    def profile(self, *args: Any, runs: int = 10, trace_path: str | None = None,
                clock: Callable[[], float] = time.perf_counter) -> str:
        """Per-node wall time over `runs` calls, slowest first (a Chrome trace if asked).

        Uses a separately compiled, instrumented copy of the executable; the timings include
        each line's Python overhead, which is what the compiled function pays too. `clock`:
        ``time.thread_time`` counts this thread's CPU time instead of wall time (steadier on a
        shared machine; kernels then should not hand slices to other threads, see
        ``tf.config.threading``).
        """
        from tapeflow.graph.printer import format_node

        stats = self._profiled(args, runs, trace_path, clock)
        total = sum(s[0] for s in stats.values()) or 1.0
        rows = sorted(stats.items(), key=lambda kv: -kv[1][0])
        lines = [f"{'us/call':>10} {'share':>6}  node"]
        lines += [f"{s[0] / runs * 1e6:>10.1f} {s[0] / total:>6.1%}  {format_node(node)}"
                  for node, s in rows]
        lines.append(f"{total / runs * 1e6:>10.1f}  total per call ({runs} runs)")
        return "\n".join(lines)

    def profile_stats(self, *args: Any, runs: int = 10,
                      clock: Callable[[], float] = time.perf_counter) -> dict:
        """``profile``'s numbers as data: {node: (seconds over all `runs` calls, calls)}."""
        return {node: (s[0], s[1]) for node, s in self._profiled(args, runs, None, clock).items()}

    def _profiled(self, args: tuple, runs: int, trace_path: str | None,
                  clock: Callable[[], float]) -> dict:
        flat = [x for x in nest.flatten((list(args), {})) if sig.is_tensor_leaf(x)]
        arrays = [_to_array(x) for x in flat]
        stats: dict = {}
        exe = compile_graph(self.graph, name=self.name, profile=stats, clock=clock)
        events, start = [], clock()
        for _ in range(runs):
            before = {node: s[0] for node, s in stats.items()}
            t0 = clock()
            exe(*arrays)
            if trace_path is not None:
                _trace_events(events, stats, before, (t0 - start) * 1e6)
        if trace_path is not None:
            with open(trace_path, "w") as f:
                json.dump({"traceEvents": events}, f)
        return stats

    def instrument(self, profile: dict | None, calls: list | None = None) -> None:
        """Run later calls on an instrumented copy that adds each node's wall time and call
        count to ``profile[node]`` and appends ``(start, input shapes)`` of each call to
        `calls` (None: back to the plain compiled code). tf.profiler and Keras's
        `profile_batch` time the real steps this way."""
        if profile is None:
            self._fn = self._exe.fn
            return
        fn = compile_graph(self.graph, name=self.name, profile=profile).fn

        def timed(*arrays: Any) -> Any:
            if calls is not None:
                calls.append((time.perf_counter(), [np.shape(a) for a in arrays]))
            return fn(*arrays)

        self._fn = timed

    def pretty_printed_signature(self) -> str:
        args = ", ".join(f"{p}: {s.dtype.name}{_shape_text(s.shape)}"
                         for p, s in zip(self.input_paths, self.structured_input_signature))
        return f"{self.name}({args})"

    def __repr__(self) -> str:
        return f"<ConcreteFunction {self.pretty_printed_signature()}>"

    # --- calling ------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any):
        flat = [x for x in nest.flatten((list(args), kwargs), expand_composites=True)
                if sig.is_tensor_leaf(x)]
        if len(flat) != len(self.graph.inputs):
            raise TypeError(f"{self.name}: expected {len(self.graph.inputs)} tensor arguments, "
                            f"got {len(flat)}")
        specs = [TensorSpec(t.shape, t.dtype) for t in self.graph.inputs]
        tensors = sig.check_against_specs(flat, specs, self.input_paths, self.name)
        return self.call_flat(tensors)

    @single_threaded_blas  # the thread policy (framework.threads)
    def call_flat(self, tensors: list) -> Any:
        """Run on a flat list of tensors (eager), or inline into the graph being traced."""
        if _state.graph is not None:
            from tapeflow.graph.gradients import replay

            mapping = replay(self.graph, tensors)
            outs = [mapping[id(t)] if isinstance(t, SymbolicTensor) else t
                    for t in self.graph.outputs]
            return self._pack_tensors(outs)
        arrays = [t._value if type(t) is EagerTensor else _to_array(t) for t in tensors]
        if _state.tapes and self._watched_by_a_tape(tensors):
            return self._call_recorded(tensors, arrays)
        try:
            outs = self._fn(*arrays)
        except Exception as e:
            raise self._exe.runtime_error(e) from e
        return self._pack(outs)

    def _pack_tensors(self, outs: list) -> Any:
        def leaf(x):
            if isinstance(x, _CompositeLeaf):
                return x.build(outs)
            return outs[x] if isinstance(x, int) and not isinstance(x, bool) else x.value

        if self._single:
            return outs[self.structured_outputs]
        return nest.map_structure(leaf, self.structured_outputs)

    def _watched_by_a_tape(self, tensors: list) -> bool:
        """Whether some active tape watches an input or a variable this function reads."""
        for tape in _state.tapes:
            watched = tape._watched
            if any(id(t) in watched for t in tensors):
                return True
            for v in self.variables:
                if id(v) in watched or (tape._watch_accessed and v.trainable):
                    return True
        return False

    def _call_recorded(self, tensors: list, arrays: list) -> Any:
        """Run under active tapes: one tape entry whose gradient is the backward graph."""
        from tapeflow.graph.gradients import FunctionGradient

        if self._grad is None:
            self._grad = FunctionGradient(self.graph, self.name)
        grad = self._grad
        variables = grad.variables
        var_arrays = [v._value for v in variables]
        res = grad.forward(*arrays)
        n = len(self.graph.outputs)
        outs, saved = res[:n], res[n:]
        out_tensors = [wrap(o if type(o) is np.ndarray else np.asarray(o)) for o in outs]
        in_tensors = [t if type(t) is EagerTensor else wrap(a) for t, a in zip(tensors, arrays)]
        in_tensors += [wrap(a) for a in var_arrays]
        diff = grad.diff_outputs
        multi = len(out_tensors) != 1

        def backward(g, _outs, *inputs):
            gs = list(g) if multi else [g]
            gs = [gs[i] for i in diff]
            if _state.tapes:  # the backward pass is being recorded: stay differentiable
                res = grad.joint_function().call_flat(list(inputs) + gs)
                res = list(res) if isinstance(res, (list, tuple)) else [res]
                full: list = [None] * grad.n_inputs
                for p, r in zip(grad.grad_positions, res):
                    full[p] = r
                return tuple(full)
            in_arrays = [x._value for x in inputs]
            g_arrays = [x._value if type(x) is EagerTensor else _to_array(x) for x in gs]
            return tuple(None if r is None else wrap(np.asarray(r))
                         for r in grad.grads_from_saved(in_arrays, saved, g_arrays))

        recorded_inputs = list(tensors) + variables
        out = tuple(out_tensors) if multi else out_tensors[0]
        for tape in _state.tapes:
            for v, t in zip(variables, in_tensors[len(tensors):]):
                tape._record(_read_grad, {}, (v,), (t,), t, False)
            tape._record(backward, {}, recorded_inputs, in_tensors, out, multi)
        return self._pack_tensors(out_tensors)


class _CompositeLeaf:
    """A composite result (ragged, sparse): rebuilt from the outputs at `indices`."""

    __slots__ = ("template", "indices")

    def __init__(self, template: Any, indices: list[int]):
        self.template = template
        self.indices = indices

    def build(self, outs: Any, wrap_output: Callable | None = None) -> Any:
        parts = [outs[i] if wrap_output is None else wrap_output(outs[i]) for i in self.indices]
        return composite.rebuild(self.template, parts)[0]


class _PyLeaf:
    """A non-tensor value returned by a traced function (returned as is on every call)."""

    __slots__ = ("value",)

    def __init__(self, value: Any):
        self.value = value


def _trace_events(events: list, stats: dict, before: dict, offset_us: float) -> None:
    """Append one run's nodes as Chrome trace 'complete' events, laid end to end."""
    t = offset_us
    for node, s in stats.items():
        dur = (s[0] - before.get(node, 0.0)) * 1e6
        events.append({"name": node.op.name, "ph": "X", "ts": t, "dur": dur, "pid": 0,
                       "tid": 0, "args": {"node": node.name, "traced_at": node.location}})
        t += dur


def _wrap_output(o: Any, _new=object.__new__, _nd=np.ndarray, _et=EagerTensor) -> EagerTensor:
    t = _new(_et)
    t._value = o if type(o) is _nd else np.asarray(o)
    return t


def _make_packer(structure: Any):
    """Compile `outputs tuple -> user structure of EagerTensors` into one expression.

    Keys, Python leaves and generic structures are bound as values under issued names (never
    spelled in the source: an IntEnum or a str subclass with its own ``__repr__`` is a key
    like any other)."""
    ns = names_.Namespace(reserved=("o",))
    env: dict[str, Any] = {}

    def bind(value: Any) -> str:
        name = ns.fresh(f"c{len(env)}")
        env[name] = value
        return name

    wrap = bind(_wrap_output)

    def build(s: Any) -> str:
        if isinstance(s, int) and not isinstance(s, bool):
            return f"{wrap}(o[{int(s)}])"
        if isinstance(s, _PyLeaf):
            return bind(s.value)
        if type(s) is dict:
            return "{" + ", ".join(f"{bind(k)}: {build(v)}" for k, v in s.items()) + "}"
        if type(s) is tuple:
            inner = ", ".join(build(e) for e in s)
            return f"({inner}{',' if len(s) == 1 else ''})"
        if type(s) is list:
            return "[" + ", ".join(build(e) for e in s) + "]"
        return f"{bind(_generic_packer(s))}(o)"

    src = f"lambda o: {build(structure)}"
    return eval(src, env)  # noqa: S307 - source built above from issued names and ints


def _generic_packer(structure: Any) -> Callable[[tuple], Any]:
    def pack(outs: tuple) -> Any:
        return nest.map_structure(lambda x: _leaf_value(x, outs), structure)

    return pack


def _leaf_value(x: Any, outs: tuple) -> Any:
    if isinstance(x, int) and not isinstance(x, bool):
        return _wrap_output(outs[x])
    if isinstance(x, _CompositeLeaf):
        return x.build(outs, _wrap_output)
    return x.value if isinstance(x, _PyLeaf) else x


def _to_array(t: Any) -> np.ndarray:
    if isinstance(t, np.ndarray):
        return t
    if isinstance(t, Variable):
        return t._value
    if isinstance(t, Tensor):
        return t._value
    from tapeflow.framework.constant import convert_to_tensor

    return convert_to_tensor(t)._value


def _shape_text(shape) -> str:
    dims = shape.as_tuple()
    return "[?]" if dims is None else "[" + ",".join("?" if d is None else str(d)
                                                      for d in dims) + "]"


def _ident(path: str) -> str:
    out = "".join(c if c.isalnum() or c == "_" else "_" for c in path).strip("_")
    while "__" in out:
        out = out.replace("__", "_")
    return out or "arg"


class Function:
    """A Python function traced into graphs per input signature (``tf.function``)."""

    def __init__(self, python_function: Callable, name: str | None = None,
                 input_signature: Any = None, autograph: bool = True,
                 reduce_retracing: bool = False, jit_compile: Any = None):
        self._python_function = python_function
        self._name = name or getattr(python_function, "__name__", type(python_function).__name__)
        self._input_signature = None if input_signature is None else list(input_signature)
        self._autograph = autograph
        self._reduce_retracing = reduce_retracing
        self._jit_compile = jit_compile  # None: follow tf.config.optimizer.set_jit when called
        self._cache: dict = {}
        self._fast: dict = {}
        self._relaxed: list = []
        self._concretes: list[ConcreteFunction] = []
        self._traced_fn: Callable | None = None
        self._last_sig: sig.Signature | None = None
        self._last_pattern: tuple | None = None
        self._retraces: list[str] = []
        self._streak: list = []
        self._warned = False
        self._bound: Any = weakref.WeakKeyDictionary()
        try:
            self._params = list(inspect.signature(python_function).parameters.values())
        except (TypeError, ValueError):
            self._params = []
        functools.update_wrapper(self, python_function, updated=())

    # --- TF API -------------------------------------------------------------------------
    @property
    def python_function(self) -> Callable:
        return self._python_function

    @property
    def input_signature(self):
        return self._input_signature

    def experimental_get_tracing_count(self) -> int:
        return len(self._concretes)

    def get_concrete_function(self, *args: Any, **kwargs: Any) -> ConcreteFunction:
        """The concrete function for these arguments (TensorSpecs allowed), tracing if needed."""
        if self._input_signature is not None and not args and not kwargs:
            args = tuple(self._input_signature)
        if self._input_signature is not None:
            return self._signature_concrete()
        named = self._bind(args, kwargs)
        s = sig.signature_of(named)
        return self._lookup(s, named, record=False)

    def explain_retrace(self) -> str:
        """Why each retrace happened: which argument changed, and how."""
        n = len(self._concretes)
        if not self._retraces:
            return f"{self._name}: traced {n} time(s); no retraces."
        lines = [f"{self._name}: traced {n} times; retraces:"] + self._retraces
        return "\n".join(lines)

    def pretty_printed_concrete_signatures(self) -> str:
        return "\n".join(c.pretty_printed_signature() for c in self._concretes)

    def flops(self, optimized: bool = False) -> float:
        """Arithmetic of one call (multiply-adds x 2, from the ops' ``flops`` facts: matrix
        products and convolutions) in the traced graph, or in the optimized one."""
        graph = self.graph if optimized else self.traced_graph
        return float(sum(n.op.flops(n) for n in graph.nodes if n.op.flops is not None))

    def optimization_report(self) -> str:
        if not self._concretes:
            return f"{self._name}: not traced yet"
        return self._concretes[-1].optimization_report()

    # --- calling ------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any):
        if _state.graph is not None or _config["run_eagerly"]:
            fn = self._traceable() if _state.graph is not None else self._python_function
            return fn(*args, **kwargs)
        key = self._fast_key(args) if not kwargs and self._input_signature is None else None
        if key is not None:
            concrete = self._fast.get(key)
            if concrete is not None:
                self._streak.clear()
                return concrete.call_flat(list(args))
        named = self._bind(args, kwargs)
        if self._input_signature is not None:
            values = [v for _, v in named]
            flat = nest.flatten(values, expand_composites=True)
            specs = nest.flatten(self._input_signature, expand_composites=True)
            if len(flat) != len(specs):
                raise TypeError(f"{self._name}: input_signature has {len(specs)} tensors but "
                                f"the call passed {len(flat)} values")
            s = sig.signature_of(named)
            names = [p for p, t in zip(s.paths, s.tokens) if t[0] not in "({C"]
            tensors = sig.check_against_specs(flat, specs, names, self._name)
            return self._signature_concrete().call_flat(tensors)
        s = sig.signature_of(named)
        concrete = self._lookup(s, named, record=True)
        if key is not None:
            self._fast[key] = concrete
        return concrete.call_flat(s.tensors)

    @staticmethod
    def _fast_key(args: tuple) -> tuple | None:
        """(shape, dtype) per argument when all are eager tensors: the hot-path cache key."""
        key = tuple([(a._value.shape, a._value.dtype) for a in args if type(a) is EagerTensor])
        return key if len(key) == len(args) else None

    def _bind(self, args: tuple, kwargs: dict) -> list[tuple[str, Any]]:
        """(name, value) per argument: positional first (named after parameters), then kwargs."""
        positional = [p for p in self._params
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        named = [(positional[i].name if i < len(positional) else f"args[{i}]", a)
                 for i, a in enumerate(args)]
        self._n_positional = len(args)
        return named + [(k, kwargs[k]) for k in sorted(kwargs)]

    def _call_args(self, named: list, n_positional: int, values: list) -> tuple[list, dict]:
        """Rebuild (args, kwargs) from `named` with tensor leaves replaced by `values`."""
        it = iter(values)

        def swap(x):
            if isinstance(x, CompositeTensor):
                parts = [next(it) for _ in composite.components(x)]
                return composite.rebuild(x, parts)[0]
            return next(it) if sig.is_tensor_leaf(x) else x

        args, kwargs = [], {}
        for i, (name, v) in enumerate(named):
            new = nest.map_structure(swap, v) if nest.is_nested(v) else swap(v)
            if i < n_positional:
                args.append(new)
            else:
                kwargs[name] = new
        return args, kwargs

    def _lookup(self, s: sig.Signature, named: list, record: bool) -> ConcreteFunction:
        concrete = self._cache.get(s.key)
        if concrete is not None:
            if record:
                self._streak.clear()
            return concrete
        for pattern, c in self._relaxed:
            if sig.matches(pattern, s.key):
                self._cache[s.key] = c
                return c
        pattern = None
        if self._reduce_retracing and self._last_pattern is not None:
            pattern = sig.relax(self._last_pattern, s.key)
        concrete = self._trace(s, named, pattern)
        self._cache[s.key] = concrete
        if pattern is not None:
            self._relaxed.append((pattern, concrete))
        self._last_pattern = pattern or s.key
        return concrete

    def _traceable(self) -> Callable:
        if self._traced_fn is None:
            fn = self._python_function
            if self._autograph:
                from tapeflow.graph.autograph import convert

                fn = convert(fn)
            self._traced_fn = fn
        return self._traced_fn

    def _trace(self, s: sig.Signature, named: list, pattern: tuple | None) -> ConcreteFunction:
        self._note_retrace(s)
        g = FuncGraph(self._name, allows_variable_creation=not self._concretes)
        tensor_paths = [p for p, t in zip(s.paths, s.tokens) if t[0] == "T"]
        tokens = pattern if pattern is not None else s.key
        specs = [t for t in tokens if t[0] == "T"]
        placeholders = [g.placeholder(t[1], t[2], name=_ident(p))
                        for p, t in zip(tensor_paths, specs)]
        args, kwargs = self._call_args(named, self._n_positional, placeholders)
        concrete = self._run_trace(g, args, kwargs, tensor_paths)
        for observe in trace_observers:
            observe(concrete, s.tensors)
        return concrete

    def _run_trace(self, g: FuncGraph, args: list, kwargs: dict,
                   paths: list[str]) -> ConcreteFunction:
        fn = self._traceable()
        saved_tapes, _state.tapes = _state.tapes, ()
        try:
            with graph_scope(g):
                result = fn(*args, **kwargs)
                structure = _collect_outputs(g, result)
        finally:
            _state.tapes = saved_tapes
        jit = config.get_jit() if self._jit_compile is None else self._jit_compile
        if self._jit_compile is None:
            _follows_set_jit.add(self)
        concrete = ConcreteFunction(g, structure, self._name, input_paths=paths,
                                    jit_compile=bool(jit))
        self._concretes.append(concrete)
        return concrete

    def _signature_concrete(self) -> ConcreteFunction:
        if self._concretes:
            return self._concretes[0]
        specs = nest.flatten(self._input_signature, expand_composites=True)
        names = [self._params[i].name if i < len(self._params) else f"args[{i}]"
                 for i in range(len(self._input_signature))]
        g = FuncGraph(self._name)
        flat_names = []
        for name, spec in zip(names, self._input_signature):
            n = len(nest.flatten(spec, expand_composites=True))
            flat_names += [name] if n == 1 else [f"{name}[{i}]" for i in range(n)]
        phs = [g.placeholder(s.shape, s.dtype, name=_ident(n)) for s, n in zip(specs, flat_names)]
        args = nest.pack_sequence_as(self._input_signature, phs, expand_composites=True)
        return self._run_trace(g, list(args), {}, flat_names)

    def _note_retrace(self, s: sig.Signature) -> None:
        if self._last_sig is not None:
            diffs = sig.explain(self._last_sig, s)
            text = "; ".join(f"argument '{p}': {w}" for p, w in diffs) or "new signature"
            self._retraces.append(f"  trace {len(self._concretes) + 1}: {text}")
            self._streak.append(diffs)
            if len(self._streak) >= RETRACE_WARNING_THRESHOLD - 1 and not self._warned:
                self._warned = True
                culprits = sorted({p for d in self._streak for p, _ in d})
                warnings.warn(
                    f"tf.function '{self._name}' retraced {len(self._streak) + 1} times in a "
                    f"row because argument(s) {', '.join(repr(c) for c in culprits)} changed "
                    f"each call ({text}). Tracing is expensive: pass tensors instead of Python "
                    f"values, or use input_signature / reduce_retracing=True. See "
                    f"fn.explain_retrace().\n{errors.user_line()}", stacklevel=4)
        self._last_sig = s

    # --- methods ------------------------------------------------------------------------
    def __get__(self, obj: Any, objtype: Any = None):
        """Methods: one Function (and trace cache) per instance, kept on the instance."""
        if obj is None:
            return self
        store = getattr(obj, "__dict__", None)
        key = f"_tapeflow_function_{id(self)}"
        bound = store.get(key) if store is not None else self._bound.get(obj)
        if bound is None:
            bound = Function(types.MethodType(self._python_function, obj), name=self._name,
                             input_signature=self._input_signature, autograph=self._autograph,
                             reduce_retracing=self._reduce_retracing)
            if store is not None:
                store[key] = bound
            else:
                self._bound[obj] = bound
        return bound

    def __repr__(self) -> str:
        return f"<tapeflow.function {self._name}>"


def _collect_outputs(g: Graph, result: Any) -> Any:
    """Make the traced result's tensors graph outputs; return the structure with indices."""
    from tapeflow.framework.constant import convert_to_tensor

    leaves = nest.flatten(result)
    structure = []
    for x in leaves:
        if isinstance(x, CompositeTensor):  # ragged, sparse: its components become outputs
            parts = composite.components(x)
            structure.append(_CompositeLeaf(x, list(range(len(g.outputs),
                                                          len(g.outputs) + len(parts)))))
            g.outputs.extend(g.convert(p) for p in parts)
        elif isinstance(x, (Tensor, Variable, np.ndarray)):
            t = g.convert(x) if not isinstance(x, np.ndarray) else convert_to_tensor(x)
            structure.append(len(g.outputs))
            g.outputs.append(t)
        else:
            structure.append(_PyLeaf(x))
    if not nest.is_nested(result) and structure and isinstance(structure[0], int):
        return structure[0]
    return nest.pack_sequence_as(result, structure)


@export("function")
def function(func: Callable | None = None, input_signature: Any = None, autograph: bool = True,
             jit_compile: Any = None, reduce_retracing: bool = False,
             experimental_relax_shapes: bool | None = None, name: str | None = None,
             experimental_implements: Any = None, experimental_autograph_options: Any = None,
             experimental_follow_type_hints: Any = None, experimental_compile: Any = None):
    """``tf.function``: decorator or call; traces per input signature, runs compiled graphs."""
    relax = bool(reduce_retracing or experimental_relax_shapes)

    jit = jit_compile if jit_compile is not None else experimental_compile  # False stays False

    def decorate(f: Callable) -> Function:
        return Function(f, name=name, input_signature=input_signature, autograph=autograph,
                        reduce_retracing=relax, jit_compile=jit)

    return decorate if func is None else decorate(func)


@export("config.run_functions_eagerly")
def run_functions_eagerly(run_eagerly: bool) -> None:
    """Debugging switch: run tf.function-decorated functions as plain Python."""
    _config["run_eagerly"] = bool(run_eagerly)


@export("config.functions_run_eagerly")
def functions_run_eagerly() -> bool:
    return _config["run_eagerly"]


debug_ops.functions_eagerly[:] = [functions_run_eagerly, run_functions_eagerly]  # check_numerics
