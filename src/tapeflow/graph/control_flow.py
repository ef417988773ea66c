"""Control flow with the graph: ``tf.cond``, ``tf.while_loop``, ``tf.TensorArray``.

Eagerly these are plain Python. While tracing, ``cond`` and ``while_loop`` become single nodes
holding traced sub-graphs (branches, loop condition and body); outer tensors a sub-graph uses are
captured as extra node inputs, and variable reads are hoisted out of sub-graphs that do not assign
them, so gradients reach variables used inside loops and branches.

Gradients: ``If`` differentiates by a ``cond`` over the replayed branches (differentiable again);
``While`` by ``WhileGrad``, which re-runs the loop keeping each iterate, then runs the body's
vector-Jacobian graph backwards over them.

``tf.print`` and ``tf.group``, which need no sub-graphs, are ops (``ops/control_flow_ops.py``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow._api import export
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework import errors, nest
from tapeflow.framework.constant import convert_to_tensor
from tapeflow.framework.context import graph_scope
from tapeflow.framework.context import state as _state
from tapeflow.framework.dispatch import apply, op
from tapeflow.framework.shapes import TensorShape
from tapeflow.framework.tape import GradientTape
from tapeflow.framework.tensor import Tensor
from tapeflow.framework.variable import Variable
from tapeflow.ops import control_flow_ops
from tapeflow.ops.array_ops import _identity


def _graph_mod():
    from tapeflow.graph import codegen, ir

    return ir, codegen


def _differentiable(t) -> bool:
    return t.dtype.is_floating or t.dtype.is_complex


# --- tracing sub-graphs -------------------------------------------------------------------------


def _trace_subgraph(fn, name: str, arg_specs: list, args_structure: Any = None):
    """Trace `fn(*args)` into a SubGraph of the current graph; returns (graph, raw result)."""
    ir, _ = _graph_mod()
    parent = _state.graph
    sub = ir.SubGraph(name, parent=parent)
    with graph_scope(sub):
        phs = [sub.placeholder(s, d, name=f"arg{i}") for i, (s, d) in enumerate(arg_specs)]
        args = phs if args_structure is None else _pack(args_structure, phs)
        result = fn(*args)
    return sub, result


def _hoist_reads(subs: list) -> None:
    """Variable reads in the sub-graphs of one control-flow op (both branches; a loop's cond and
    body) that none of them assigns become captures of one read per variable in the parent,
    made by an op on the variable (as any other use of it), so a tape around the op carries the
    capture's gradient to the variable. One read shared by all the sub-graphs: two reads of one
    variable became one placeholder when the function was differentiated, and the branch not
    taken then added the taken one's gradient again (doubled gradients)."""
    ir, _ = _graph_mod()
    assigned = set()

    def scan(g):
        for n in g.nodes:
            if n.op.name.startswith("Assign"):
                assigned.add(id(n.attrs["var"]))
            for s in ir.subgraphs(n):
                scan(s)

    for sub in subs:
        scan(sub)
    outer_reads: dict[int, Any] = {}
    for sub in subs:
        dead = set()
        for node in list(sub.nodes):
            if node.op.variable != "read" or id(node.attrs["var"]) in assigned:
                continue
            var = node.attrs["var"]
            if id(var) not in outer_reads:  # an op on the variable itself: tapes link it to var
                with graph_scope(sub.parent):
                    outer_reads[id(var)] = apply(_identity, var)
            ph = sub.capture(outer_reads[id(var)])
            if sub.nodes[-1] is ph.node:
                sub.nodes.insert(0, sub.nodes.pop())
            ir.replace_uses(sub, node.outputs[0], ph)
            dead.add(id(node))
        ir.remove_nodes(sub, dead)


def _align_captures(graphs: list, n_args: int) -> list:
    """Give every graph the same capture inputs (union, in first-seen order); return outers."""
    outers, seen = [], set()
    for g in graphs:
        for outer, _ in g.captures:
            if id(outer) not in seen:
                seen.add(id(outer))
                outers.append(outer)
    for g in graphs:
        g.inputs = g.inputs[:n_args] + [g.capture(o) for o in outers]
    return outers


def _flatten(structure: Any) -> list:
    return [x._buffer_tensor() if isinstance(x, TensorArray) else x
            for x in nest.flatten(structure)]


def _pack(structure: Any, flat: list) -> Any:
    leaves = nest.flatten(structure)
    out = [x._with_buffer(v) if isinstance(x, TensorArray) else v for x, v in zip(leaves, flat)]
    return nest.pack_sequence_as(structure, out)


def _is_stateful(graphs: list) -> bool:
    ir, _ = _graph_mod()
    for g in graphs:
        for n in g.nodes:
            if n.op.stateful and n.op is not ir.PLACEHOLDER:
                return True
            if _is_stateful(ir.subgraphs(n)):
                return True
    return False


def _spec(t) -> tuple:
    return t.shape.as_tuple(), t.dtype


# --- cond ---------------------------------------------------------------------------------------


def _if_shape(pred, *args, then_graph, else_graph):
    specs = []
    for a, b in zip(then_graph.outputs, else_graph.outputs):
        shape = a.shape.most_specific_common_supertype([b.shape])
        specs.append((shape.as_tuple(), a.dtype))
    return specs


def _if_kernel(pred, *args, then_graph, else_graph):
    _, codegen = _graph_mod()
    return codegen.executable(then_graph if pred else else_graph).fn(*args)


_if = op("StatelessIf", multi_output=True, shape=_if_shape)(_if_kernel)
_stateful_if = op("If", multi_output=True, stateful=True, shape=_if_shape)(_if_kernel)


def _if_grad(gs, outs, pred, *args, then_graph, else_graph):
    diff_in = [i for i, a in enumerate(args) if _differentiable(a)]
    diff_out = [i for i, o in enumerate(outs) if _differentiable(o)]
    if not diff_in or not diff_out:
        return (None,) * (len(args) + 1)
    g_out = [gs[i] for i in diff_out]

    def branch(graph):
        def fn():
            return _replay_vjp(graph, list(args), diff_in, diff_out, g_out)
        return fn

    grads = cond(pred, branch(then_graph), branch(else_graph))
    result: list = [None] * len(args)
    for i, g in zip(diff_in, grads):
        result[i] = g
    return (None, *result)


_if.def_grad(_if_grad)
_stateful_if.def_grad(_if_grad)


def _replay_vjp(graph, args: list, diff_in: list, diff_out: list, g_out: list) -> list:
    """Gradients of `graph`'s outputs wrt `args[diff_in]`, replaying it with the current ops."""
    from tapeflow.graph.gradients import replay
    from tapeflow.ops import array_ops

    ir, _ = _graph_mod()
    args = [_state.graph.convert(a) for a in args]  # captured here: the tape keys local tensors
    sources = [args[i] for i in diff_in]
    tape = GradientTape(persistent=True, watch_accessed_variables=False)
    with tape:
        tape.watch(sources)
        mapping = replay(graph, args)
    outs = [mapping[id(graph.outputs[i])] if isinstance(graph.outputs[i], ir.SymbolicTensor)
            else None for i in diff_out]
    pairs = [(o, g) for o, g in zip(outs, g_out) if o is not None]
    grads = tape.gradient([o for o, _ in pairs], sources,
                          output_gradients=[g for _, g in pairs]) if pairs else [None] * len(
        sources)
    return [array_ops.zeros_like(s) if g is None else g for s, g in zip(sources, grads)]


@export("cond")
def cond(pred: Any, true_fn: Any = None, false_fn: Any = None, name: str | None = None):
    """``tf.cond``: `true_fn()` if `pred` else `false_fn()`; one graph node when tracing."""
    if true_fn is None or false_fn is None:
        raise TypeError("tf.cond needs both true_fn and false_fn")
    ir, _ = _graph_mod()
    if not isinstance(pred, ir.SymbolicTensor):
        return true_fn() if bool(pred) else false_fn()
    if pred.dtype is not _dtypes.bool or pred.shape.rank not in (0, None):
        raise errors.InvalidArgumentError(
            None, _stateful_if.name, f"tf.cond: pred must be a scalar bool tensor, got "
            f"{pred.dtype.name} of shape {pred.shape}\n{errors.user_line()}")
    then_g, then_r = _trace_subgraph(true_fn, "cond_true", [])
    else_g, else_r = _trace_subgraph(false_fn, "cond_false", [])
    structure = _merge_branch_outputs(then_g, then_r, else_g, else_r)
    _hoist_reads([then_g, else_g])
    outers = _align_captures([then_g, else_g], 0)
    then_g, else_g = _optimized(then_g), _optimized(else_g)
    stateful = _is_stateful([then_g, else_g])
    if not then_g.outputs and not stateful:
        return _unflatten_outputs(structure, [])
    kind = _stateful_if if stateful else _if
    outs = apply(kind, pred, *outers, then_graph=then_g, else_graph=else_g)
    return _unflatten_outputs(structure, list(outs))


def _optimized(g):
    from tapeflow.graph.passes.pipeline import optimize

    return optimize(g)[0]


class _Same:
    """A non-tensor value both branches returned unchanged (passed through as is)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


def _leaf_to_tensor(g, x: Any, what: str):
    if isinstance(x, (Tensor, Variable, np.ndarray)) or isinstance(x, (int, float, bool)):
        with graph_scope(g):
            return g.convert(x)
    raise TypeError(f"{what} must be a tensor or a number, got {type(x).__name__} ({x!r})\n"
                    f"{errors.user_line()}")


def _merge_branch_outputs(then_g, then_r, else_g, else_r) -> Any:
    """Check both branches return the same structure and dtypes; set the graphs' outputs."""
    try:
        nest.assert_same_structure(then_r, else_r)
    except ValueError as e:
        raise ValueError(f"tf.cond: true_fn and false_fn must return the same structure: "
                         f"{e}\n{errors.user_line()}") from None
    from tapeflow.graph.autograph.api import RETVAL, Undefined

    ta, fa = _flatten(then_r), _flatten(else_r)
    marks = []
    for i, (a, b) in enumerate(zip(ta, fa)):
        if a is b and not isinstance(a, Tensor):
            marks.append(_Same(a))
            continue
        if isinstance(a, Undefined) or isinstance(b, Undefined):
            undefined, other, g = (a, b, then_g) if isinstance(a, Undefined) else (b, a, else_g)
            if undefined.name != RETVAL or isinstance(other, Undefined):
                marks.append(_Same(undefined))
                continue
            other_t = other if isinstance(other, Tensor) else convert_to_tensor(other)
            if not other_t.shape.is_fully_defined():
                raise ValueError(f"a `return` inside an `if` on a tensor returns a value of "
                                 f"unknown shape {other_t.shape}; return on every path"
                                 f"\n{errors.user_line()}")
            from tapeflow.ops import array_ops

            with graph_scope(g):
                filler = array_ops.zeros(other_t.shape.as_list(), dtype=other_t.dtype)
            a, b = (filler, b) if g is then_g else (a, filler)
        if a is None or b is None:
            raise ValueError(f"tf.cond: output {i} is None in one branch only\n"
                             f"{errors.user_line()}")
        ta_t = _leaf_to_tensor(then_g, a, f"tf.cond true_fn output {i}")
        fa_t = _leaf_to_tensor(else_g, b, f"tf.cond false_fn output {i}")
        if ta_t.dtype is not fa_t.dtype:
            if isinstance(b, (int, float)) and not isinstance(b, bool):
                fa_t = _leaf_to_tensor(else_g, convert_to_tensor(b, dtype=ta_t.dtype), "")
            elif isinstance(a, (int, float)) and not isinstance(a, bool):
                ta_t = _leaf_to_tensor(then_g, convert_to_tensor(a, dtype=fa_t.dtype), "")
            else:
                raise TypeError(f"tf.cond: output {i} has dtype {ta_t.dtype.name} in true_fn but "
                                f"{fa_t.dtype.name} in false_fn\n{errors.user_line()}")
        marks.append(len(then_g.outputs))
        then_g.outputs.append(ta_t)
        else_g.outputs.append(fa_t)
    return then_r, marks


def _unflatten_outputs(structure: Any, outs: list) -> Any:
    template, marks = structure
    flat = [m.value if isinstance(m, _Same) else outs[m] for m in marks]
    return _pack(template, flat)


# --- while_loop ---------------------------------------------------------------------------------


def _while_shape(*specs, cond_graph, body_graph, n_vars, maximum_iterations):
    return [(t.shape.as_tuple(), t.dtype) for t in body_graph.inputs[:n_vars]]


def _while_kernel(*args, cond_graph, body_graph, n_vars, maximum_iterations):
    _, codegen = _graph_mod()
    test, body = codegen.executable(cond_graph).fn, codegen.executable(body_graph).fn
    values, caps = args[:n_vars], args[n_vars:]
    i = 0
    while (maximum_iterations is None or i < maximum_iterations) and test(*values, *caps)[0]:
        values = body(*values, *caps)
        i += 1
    return tuple(values)


_while = op("StatelessWhile", multi_output=True, shape=_while_shape)(_while_kernel)
_stateful_while = op("While", multi_output=True, stateful=True, shape=_while_shape)(_while_kernel)


def _while_grad_rule(gs, outs, *inputs, cond_graph, body_graph, n_vars, maximum_iterations):
    values, caps = inputs[:n_vars], inputs[n_vars:]
    var_idx = tuple(i for i, v in enumerate(values) if _differentiable(v))
    cap_idx = tuple(j for j, c in enumerate(caps) if _differentiable(c))
    if not var_idx:
        return (None,) * len(inputs)
    vjp = _body_vjp(body_graph, n_vars, var_idx, cap_idx)
    g_in = [gs[i] for i in var_idx]
    res = apply(_while_grad, *inputs, *g_in, cond_graph=cond_graph, body_graph=body_graph,
                vjp_graph=vjp, n_vars=n_vars, var_idx=var_idx, cap_idx=cap_idx,
                maximum_iterations=maximum_iterations)
    result: list = [None] * len(inputs)
    for k, i in enumerate(var_idx):
        result[i] = res[k]
    for k, j in enumerate(cap_idx):
        result[n_vars + j] = res[len(var_idx) + k]
    return tuple(result)


_while.def_grad(_while_grad_rule)
_stateful_while.def_grad(_while_grad_rule)


def _body_vjp(body_graph, n_vars: int, var_idx: tuple, cap_idx: tuple):
    """Graph: (loop values, captures, grads of differentiable outputs) -> grads of inputs."""
    from tapeflow.graph.function import FuncGraph
    from tapeflow.graph.gradients import replay
    from tapeflow.ops import array_ops

    cache = body_graph.__dict__.setdefault("_vjp_cache", {})
    key = (var_idx, cap_idx)
    if key in cache:
        return cache[key]
    g = FuncGraph(f"{body_graph.name}_vjp")
    saved, _state.tapes = _state.tapes, ()
    try:
        with graph_scope(g):
            phs = [g.placeholder(t.shape, t.dtype, name=f"x{i}")
                   for i, t in enumerate(body_graph.inputs)]
            sources = [phs[i] for i in var_idx] + [phs[n_vars + j] for j in cap_idx]
            gphs = [g.placeholder(body_graph.inputs[i].shape, body_graph.inputs[i].dtype,
                                  name=f"g{i}") for i in var_idx]
            tape = GradientTape(persistent=True, watch_accessed_variables=False)
            with tape:
                tape.watch(sources)
                mapping = replay(body_graph, phs)
            outs = [mapping[id(body_graph.outputs[i])] for i in var_idx]
            grads = tape.gradient(outs, sources, output_gradients=gphs)
            g.outputs = [array_ops.zeros_like(s) if d is None else d
                         for s, d in zip(sources, grads)]
    finally:
        _state.tapes = saved
    cache[key] = g
    return g


def _while_grad_shape(*specs, cond_graph, body_graph, vjp_graph, n_vars, var_idx, cap_idx,
                      maximum_iterations):
    n_caps = len(specs) - n_vars - len(var_idx)
    caps = specs[n_vars:n_vars + n_caps]
    return [specs[i] for i in var_idx] + [caps[j] for j in cap_idx]


@op("WhileGrad", multi_output=True, shape=_while_grad_shape)
def _while_grad(*args, cond_graph, body_graph, vjp_graph, n_vars, var_idx, cap_idx,
                maximum_iterations):
    _, codegen = _graph_mod()
    test, body = codegen.executable(cond_graph).fn, codegen.executable(body_graph).fn
    vjp = codegen.executable(vjp_graph).fn
    n_caps = len(args) - n_vars - len(var_idx)
    values, caps = args[:n_vars], args[n_vars:n_vars + n_caps]
    g = list(args[n_vars + n_caps:])
    states = []
    i = 0
    while (maximum_iterations is None or i < maximum_iterations) and test(*values, *caps)[0]:
        states.append(values)
        values = body(*values, *caps)
        i += 1
    g_caps = [np.zeros_like(caps[j]) for j in cap_idx]
    nv = len(var_idx)
    for state in reversed(states):
        res = vjp(*state, *caps, *g)
        g = list(res[:nv])
        for k in range(len(cap_idx)):
            g_caps[k] = g_caps[k] + res[nv + k]
    return tuple(g) + tuple(g_caps)


@op("Unsupported", shape=lambda like, *, message: like)
def _unsupported(like, *, message):
    """Stands for a gradient that does not exist; fails only if it is actually computed."""
    raise NotImplementedError(message)


@_while_grad.def_grad
def _(gs, outs, *inputs, **attrs):
    message = ("Second-order gradients through tf.while_loop are not supported (the loop's "
               "gradient is itself not differentiable). Unroll the loop with a Python range, or "
               "differentiate once.")
    return tuple(apply(_unsupported, x, message=message) if _differentiable(x) else None
                 for x in inputs)


@export("while_loop")
def while_loop(cond: Any, body: Any, loop_vars: Any, shape_invariants: Any = None,
               parallel_iterations: int = 10, back_prop: bool = True, swap_memory: bool = False,
               maximum_iterations: Any = None, name: str | None = None):
    """``tf.while_loop``: repeat `body` while `cond`; one graph node when tracing."""
    single = not isinstance(loop_vars, (list, tuple))
    structure = [loop_vars] if single else loop_vars
    ir, _ = _graph_mod()
    if maximum_iterations is not None and not isinstance(maximum_iterations, (int, np.integer)):
        maximum_iterations = int(maximum_iterations)

    def call(fn, values):
        out = fn(*values)
        if len(structure) == 1 and not isinstance(out, (list, tuple)):
            out = [out]
        return out

    if _state.graph is None:
        values, i = structure, 0
        while (maximum_iterations is None or i < maximum_iterations) and bool(cond(*values)):
            values = call(body, values)
            i += 1
        return values[0] if single else values
    g = _state.graph
    flat = [x if isinstance(x, ir.SymbolicTensor) and x.graph is g else g.convert(x)
            for x in _flatten(structure)]
    specs = [_spec(t) for t in flat]
    # a TensorArray's buffer grows as the body writes: only its shape may change untold
    grows = [isinstance(x, TensorArray) for x in nest.flatten(structure)]
    if shape_invariants is not None:
        specs = _invariant_specs(nest.flatten(shape_invariants), specs)
    for _ in range(4):
        body_g, out = _trace_subgraph(lambda *a: call(body, a), "while_body", specs, structure)
        try:
            nest.assert_same_structure(list(structure), list(out))
        except ValueError as e:
            raise ValueError(f"tf.while_loop: body must return the same structure as "
                             f"loop_vars: {e}\n{errors.user_line()}") from None
        out_flat = [_leaf_to_tensor(body_g, x, f"while_loop body output {i}")
                    for i, x in enumerate(_flatten(out))]
        for i, (t, (_, d)) in enumerate(zip(out_flat, specs)):
            if t.dtype is not d:
                raise TypeError(f"tf.while_loop: loop variable {i} enters as {d.name} but the "
                                f"body returns {t.dtype.name}\n{errors.user_line()}")
        relaxed = [(TensorShape(s).most_specific_common_supertype([t.shape]).as_tuple(), d)
                   for t, (s, d) in zip(out_flat, specs)]
        _check_invariants(relaxed, specs, out_flat, grows, shape_invariants is not None)
        if relaxed == specs:
            break
        specs = relaxed
    body_g.outputs = out_flat
    cond_g, test = _trace_subgraph(lambda *a: cond(*a), "while_cond", specs, structure)
    test_t = _leaf_to_tensor(cond_g, test, "while_loop cond result")
    if test_t.dtype is not _dtypes.bool:
        raise TypeError(f"tf.while_loop: cond must return a bool, got {test_t.dtype.name}\n"
                        f"{errors.user_line()}")
    cond_g.outputs = [test_t]
    _hoist_reads([cond_g, body_g])
    n = len(flat)
    outers = _align_captures([cond_g, body_g], n)
    cond_g, body_g = _optimized(cond_g), _optimized(body_g)
    kind = _stateful_while if _is_stateful([cond_g, body_g]) else _while
    outs = apply(kind, *flat, *outers, cond_graph=cond_g, body_graph=body_g, n_vars=n,
                 maximum_iterations=maximum_iterations)
    result = _pack(structure, list(outs))
    return result[0] if single else result


def _invariant_specs(invariants: list, specs: list) -> list:
    """Loop-variable specs from `shape_invariants`, each checked against the entering shape."""
    if len(invariants) != len(specs):
        raise ValueError(f"tf.while_loop: shape_invariants has {len(invariants)} entries for "
                         f"{len(specs)} loop variables\n{errors.user_line()}")
    out = []
    for i, (inv, (shape, dtype)) in enumerate(zip(invariants, specs)):
        inv = TensorShape(inv)
        if not inv.is_compatible_with(TensorShape(shape)):
            raise ValueError(f"tf.while_loop: the shape invariant {inv} of loop variable {i} is "
                             f"not compatible with the shape it enters the loop with, "
                             f"{TensorShape(shape)}\n{errors.user_line()}")
        out.append((inv.as_tuple(), dtype))
    return out


def _check_invariants(relaxed: list, specs: list, outs: list, grows: list,
                      given: bool) -> None:
    """The body must keep each loop variable's shape (or its invariant), as in TensorFlow."""
    for i, ((new, _), (old, _), out, ta) in enumerate(zip(relaxed, specs, outs, grows)):
        if new != old and not ta:
            before = (f"has the shape invariant {TensorShape(old)}" if given
                      else f"enters the loop with shape {TensorShape(old)}")
            raise ValueError(
                f"tf.while_loop: loop variable {i} {before}, but has shape {out.shape} after "
                f"one iteration. To allow the shape to vary across iterations, use the "
                f"`shape_invariants` argument of tf.while_loop to specify a less-specific "
                f"shape (None for the dims that change)\n{errors.user_line()}")


# --- TensorArray --------------------------------------------------------------------------------


def _ta_write_shape(buf, index, value, *, size, dynamic):
    vs, dtype = value
    lead = None if dynamic or size is None else size
    return (None if vs is None else (lead, *vs)), dtype


@op("TensorArrayWrite", shape=_ta_write_shape)
def _ta_write(buf, index, value, *, size, dynamic):
    i = int(index)
    fits = buf.ndim == value.ndim + 1 and buf.shape[1:] == value.shape
    n = max(size or 0, i + 1, buf.shape[0] if fits else 0)
    if not dynamic and size is not None and i >= size:
        raise errors.OutOfRangeError(
            None, _ta_write.name,
            f"Tried to write to index {i} but array is not resizeable and size is: {size}")
    out = np.zeros((n, *value.shape), dtype=value.dtype)
    if fits:
        out[:buf.shape[0]] = buf
    out[i] = value
    return out


@_ta_write.def_grad
def _(g, out, buf, index, value, *, size, dynamic):
    from tapeflow.ops import array_ops, gather_ops

    g_value = gather_ops.gather(g, index)
    g_buf = apply(_ta_write, g, index, array_ops.zeros_like(value), size=size, dynamic=dynamic)
    return g_buf, None, g_value


@export("TensorArray")
class TensorArray:
    """``tf.TensorArray``: a list of same-shaped tensors usable as a loop variable.

    Stored as one dense tensor [size, *element_shape]; ``write`` returns a new TensorArray (use
    the returned value, as in TF), ``stack`` returns the dense tensor. Eagerly, a read clears
    its element when `clear_after_read` (the default), so a second read fails as in TensorFlow;
    inside ``tf.function`` reads do not clear (TensorFlow's traced TensorArrays are lists).
    """

    def __init__(self, dtype: Any, size: Any = None, dynamic_size: bool | None = None,
                 clear_after_read: bool | None = None, tensor_array_name: str | None = None,
                 handle: Any = None, flow: Any = None, infer_shape: bool = True,
                 element_shape: Any = None, colocate_with_first_write_call: bool = True,
                 name: str | None = None, _buffer: Any = None, _cleared: set | None = None):
        self._dtype = _dtypes.as_dtype(dtype)
        ir, _ = _graph_mod()
        symbolic = isinstance(size, ir.SymbolicTensor)  # known when the graph runs: grow
        self._size = None if size is None or symbolic else int(size)
        self._dynamic = bool(dynamic_size) or self._size is None
        self._clear = True if clear_after_read is None else bool(clear_after_read)
        self._infer_shape = bool(infer_shape)
        self._element_shape = TensorShape(element_shape) if element_shape is not None else None
        self._cleared = set() if _cleared is None else _cleared  # eager reads so far
        if _buffer is None:
            from tapeflow.ops import array_ops

            if self._element_shape is not None and self._element_shape.is_fully_defined():
                shape = [self._size or 0] + self._element_shape.as_list()
            else:
                shape = [0]
            _buffer = array_ops.zeros(shape, dtype=self._dtype)
        self._buffer = _buffer

    @property
    def dtype(self) -> _dtypes.DType:
        return self._dtype

    @property
    def dynamic_size(self) -> bool:
        return self._dynamic

    @property
    def element_shape(self) -> TensorShape:
        return self._element_shape if self._element_shape is not None else TensorShape(None)

    def _buffer_tensor(self):
        return self._buffer

    def _with_buffer(self, buf, element_shape: Any = None) -> TensorArray:
        shape = self._element_shape if element_shape is None else element_shape
        return TensorArray(self._dtype, self._size, self._dynamic, self._clear,
                           infer_shape=self._infer_shape, element_shape=shape, _buffer=buf,
                           _cleared=self._cleared)

    def _value(self, value: Any):
        return convert_to_tensor(value, dtype=self._dtype) if not isinstance(
            value, Tensor) else value

    def write(self, index: Any, value: Any, name: str | None = None) -> TensorArray:
        """A TensorArray with element `index` set to `value`."""
        value = self._value(value)
        shape = self._element_shape
        if self._infer_shape or shape is not None:
            if shape is not None and not shape.is_compatible_with(value.shape):
                raise ValueError(f"TensorArray.write: Incompatible shape for value "
                                 f"({value.shape}), expected ({shape})\n{errors.user_line()}")
            shape = value.shape if shape is None else shape.merge_with(value.shape)
        index = convert_to_tensor(index) if not isinstance(index, Tensor) else index
        buf = apply(_ta_write, self._buffer, index, value, size=self._size,
                    dynamic=self._dynamic)
        if _state.graph is None:
            self._cleared.discard(int(index))
        return self._with_buffer(buf, shape)

    def read(self, index: Any, name: str | None = None):
        from tapeflow.ops import gather_ops

        if _state.graph is None and self._clear:
            i = int(index)
            if i in self._cleared:
                raise errors.InvalidArgumentError(
                    None, "TensorArrayRead",
                    f"Could not read index {i} twice because it was cleared after a previous "
                    f"read (perhaps try setting clear_after_read = false?)\n{errors.user_line()}")
            self._cleared.add(i)
        return gather_ops.gather(self._buffer, index)

    def gather(self, indices: Any, element_shape: Any = None, name: str | None = None):
        """Elements `indices`, stacked."""
        from tapeflow.ops import gather_ops

        return gather_ops.gather(self._buffer, indices)

    def stack(self, name: str | None = None):
        """All elements as one tensor [size, *element_shape]."""
        from tapeflow.ops import array_ops

        return array_ops.identity(self._buffer)

    def concat(self, name: str | None = None):
        """All elements joined along their first axis (they share one shape here)."""
        from tapeflow.ops import array_ops

        shape = array_ops.shape(self._buffer)
        return array_ops.reshape(self._buffer, array_ops.concat([[-1], shape[2:]], 0))

    def unstack(self, value: Any, name: str | None = None) -> TensorArray:
        """A TensorArray whose elements are the rows of `value`."""
        value = convert_to_tensor(value, dtype=self._dtype)
        if not self._dynamic and value.shape.rank and value.shape[0] is not None and \
                self._size is not None and value.shape[0] > self._size:
            raise errors.OutOfRangeError(
                None, "TensorArrayUnstack", f"Tried to unstack {value.shape[0]} elements into "
                f"a TensorArray of size {self._size}\n{errors.user_line()}")
        return self._with_buffer(value, value.shape[1:] if value.shape.rank else None)

    def scatter(self, indices: Any, value: Any, name: str | None = None) -> TensorArray:
        """A TensorArray with element indices[k] set to value[k]."""
        from tapeflow.ops import array_ops

        value = self._value(value)
        indices = convert_to_tensor(indices) if not isinstance(indices, Tensor) else indices
        n = indices.shape[0] if indices.shape.rank == 1 else None
        if n is None:
            raise ValueError(f"TensorArray.scatter needs indices of static length, got shape "
                             f"{indices.shape}\n{errors.user_line()}")
        out = self
        rows = array_ops.unstack(value, num=n)
        for k in range(n):
            out = out.write(indices[k], rows[k])
        return out

    def split(self, value: Any, lengths: Any, name: str | None = None) -> TensorArray:
        """Element k is the next lengths[k] rows of `value` (equal lengths here: the elements
        share one dense buffer)."""
        from tapeflow.ops import array_ops

        value = self._value(value)
        lens = [int(n) for n in np.asarray(getattr(lengths, "_value", lengths)).ravel()]
        if len(set(lens)) > 1:
            raise NotImplementedError(f"TensorArray.split with unequal lengths {lens}: "
                                      f"tapeflow's TensorArray elements share one shape\n"
                                      f"{errors.user_line()}")
        if lens and value.shape.rank and value.shape[0] is not None and \
                sum(lens) != value.shape[0]:
            raise errors.InvalidArgumentError(
                None, "TensorArraySplit", f"Expected sum of lengths to be equal to values."
                f"shape[0], but sum of lengths is {sum(lens)} and value's shape is: "
                f"{value.shape}\n{errors.user_line()}")
        parts = array_ops.reshape(value, array_ops.concat(
            [[len(lens), lens[0] if lens else 0], array_ops.shape(value)[1:]], 0))
        return self.unstack(parts)

    def identity(self) -> TensorArray:
        return self._with_buffer(self._buffer)

    def close(self, name: str | None = None):
        return None

    def mark_used(self) -> None:
        """TensorFlow's should-use check; nothing to do here."""

    def size(self, name: str | None = None):
        from tapeflow.ops import array_ops

        return array_ops.shape(self._buffer)[0]


control_flow_ops.printed_as_stack = (TensorArray,)  # tf.print shows a TensorArray's stack
