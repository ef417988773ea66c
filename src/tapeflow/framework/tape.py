"""``tf.GradientTape``: records ops as they run (eager) or are traced, then replays them backward.

Each recorded entry keeps the op's gradient rule, its attributes, the input tensors and the
outputs. Gradient rules are written in tapeflow ops, so the backward pass is itself recorded by
any outer tape (higher-order gradients) or traced into the graph being built.
"""

from __future__ import annotations

import enum
import functools
import inspect
from collections.abc import Callable
from typing import Any

from tapeflow.framework import backprop, errors
from tapeflow.framework.context import state as _state
from tapeflow.framework.nest import flatten, pack_sequence_as
from tapeflow.framework.tensor import EagerTensor, Tensor
from tapeflow.framework.variable import Variable

# Called as hook(sources) before each backward pass; a callable it returns gets
# (source index, gradient) as each source's gradient becomes final, while the pass goes on
# (tf.distribute all-reduces finished gradient buckets then).
gradient_ready_hooks: list = []


def _as_traced(t: Any) -> Any:
    """Inside a trace, an eager tensor the traced code reads is that graph's captured constant
    (one per tensor), so watching it, or asking for its gradient, means that constant."""
    graph = _state.graph
    if graph is not None and isinstance(t, EagerTensor):
        return graph.convert(t)
    return t


def _gradient_ready(sources: list) -> Callable | None:
    """The backward walk's `on_final` (source key, gradient) for the hook that wants this
    pass's gradients as they become final, if one does."""
    ready = next((r for r in (hook(sources) for hook in gradient_ready_hooks)
                  if r is not None), None)
    if ready is None:
        return None
    index = {id(s): i for i, s in enumerate(sources)}

    def on_final(key: int, grad: Any) -> None:
        ready(index[key], grad)

    return on_final


class UnconnectedGradients(enum.Enum):
    NONE = "none"
    ZERO = "zero"


def _call_site() -> tuple | None:
    """Where the user called: (file, line, function), formatted only if an error needs it."""
    f = errors.user_frame()
    return None if f is None else (f.f_code.co_filename, f.f_lineno, f.f_code.co_name)


def _used_twice(site: tuple | None) -> str:
    first_use = ""
    if site is not None:
        import linecache

        file, line, name = site
        source = linecache.getline(file, line).strip()
        first_use = f'  File "{file}", line {line}, in {name}\n    {source}'
    return ("A non-persistent GradientTape can only be used to compute one set of gradients "
            "(or jacobians); its resources were released after the first call"
            + (f":\n{first_use}\n" if first_use else ". ")
            + "Create it with tf.GradientTape(persistent=True) to call gradient() more than "
            f"once. This call:\n{errors.user_line()}")


class GradientTape:
    """Record operations for automatic differentiation (``tf.GradientTape``)."""

    def __init__(self, persistent: bool = False, watch_accessed_variables: bool = True):
        self._persistent = persistent
        self._watch_accessed = watch_accessed_variables
        self._entries: list[backprop.Step] = []
        self._watched: set[int] = set()
        self._watched_vars: dict[int, Variable] = {}
        self._keep: list = []  # keeps watched objects alive so their ids stay unique
        self._recording = False
        self._used = False
        self._first_use: tuple | None = None

    # --- context management -------------------------------------------------------------
    def __enter__(self) -> GradientTape:
        self._push()
        return self

    def __exit__(self, *exc) -> None:
        self._pop()

    def _push(self) -> None:
        if self._recording:
            raise ValueError("Tape is still recording, this can happen if you try to re-enter "
                             "an already-active tape.")
        self._recording = True
        _state.tapes = _state.tapes + (self,)

    def _pop(self) -> None:
        self._recording = False
        _state.tapes = tuple(t for t in _state.tapes if t is not self)

    def stop_recording(self):
        """Context manager: ops inside are not recorded on this tape."""
        tape = self

        class _Pause:
            def __enter__(self_inner):
                if not tape._recording:
                    raise ValueError("Tape is not recording.")
                tape._pop()

            def __exit__(self_inner, *exc):
                tape._push()

        return _Pause()

    def reset(self) -> None:
        """Forget everything recorded so far."""
        self._entries.clear()
        self._watched.clear()
        self._watched_vars.clear()
        self._keep.clear()

    # --- watching -----------------------------------------------------------------------
    def watch(self, tensor: Any) -> None:
        """Track `tensor` (or every tensor/variable in a nested structure)."""
        for t in flatten(tensor):
            if isinstance(t, Variable):
                self._watch_var(t)
            elif isinstance(t, Tensor):
                t = _as_traced(t)
                if backprop.differentiable(t):
                    self._watched.add(id(t))
                    self._keep.append(t)
            else:
                raise ValueError(f"Passed in object {t!r} of type {type(t).__name__!r}, not "
                                 "tf.Tensor or tf.Variable, to GradientTape.watch")

    def _watch_var(self, v: Variable) -> None:
        if backprop.differentiable(v):
            self._watched.add(id(v))
            self._watched_vars[id(v)] = v

    def watched_variables(self) -> tuple:
        return tuple(sorted(self._watched_vars.values(), key=lambda v: v._unique_id))

    # --- recording (called by dispatch) -------------------------------------------------
    def _record(self, grad_fn, attrs, inputs, tensors, outs, multi) -> None:
        watched = self._watched
        keys = [id(x) for x in inputs]
        if self._watch_accessed:
            for x in inputs:
                if isinstance(x, Variable) and x._trainable and id(x) not in watched:
                    self._watch_var(x)
        for k in keys:
            if k in watched:
                break
        else:
            return
        out_list = outs if multi else (outs,)
        out_keys = []
        for o in out_list:
            k = id(o)
            out_keys.append(k)
            if backprop.differentiable(o):
                watched.add(k)
        self._entries.append(backprop.Step(grad_fn, attrs, keys, tensors, outs, out_keys, multi))

    # --- differentiation ----------------------------------------------------------------
    def gradient(self, target: Any, sources: Any, output_gradients: Any = None,
                 unconnected_gradients: Any = UnconnectedGradients.NONE):
        """d(sum of targets)/d(each source), in the structure of `sources`."""
        if self._used and not self._persistent:
            raise RuntimeError(_used_twice(self._first_use))
        result = self._gradient(target, sources, output_gradients, unconnected_gradients)
        if not self._persistent:
            self._used = True
            self._first_use = _call_site()
            self._entries = []
        return result

    def _gradient(self, target, sources, output_gradients, unconnected_gradients):
        unconnected = UnconnectedGradients(
            unconnected_gradients.value if isinstance(unconnected_gradients, UnconnectedGradients)
            else str(unconnected_gradients).lower())
        flat_sources = flatten(sources)
        for s in flat_sources:
            if not isinstance(s, (Tensor, Variable)):
                raise ValueError(f"GradientTape.gradient: sources must be tensors or variables, "
                                 f"got {type(s).__name__}")
        flat_sources = [_as_traced(s) for s in flat_sources]
        flat_targets = flatten(target)
        if output_gradients is None:
            flat_out_grads = [None] * len(flat_targets)
        else:
            flat_out_grads = flatten(output_gradients)
            if len(flat_out_grads) != len(flat_targets):
                raise ValueError(f"output_gradients has {len(flat_out_grads)} entries but there "
                                 f"are {len(flat_targets)} targets")

        grads: dict[int, Any] = {}
        for t, og in zip(flat_targets, flat_out_grads):
            if t is None:
                continue
            if isinstance(t, Variable):
                t = t.read_value()
            if og is None:
                og = backprop.ops.ones_like(t)
            elif not isinstance(og, Tensor):
                og = backprop.ops.cast(og, t.dtype)
            backprop.accumulate(grads, id(t), og)

        source_keys = {id(s) for s in flat_sources}
        steps = backprop.relevant(self._entries, source_keys)
        backprop.backward(steps, grads, source_keys, self._watched,
                          _gradient_ready(flat_sources) if gradient_ready_hooks else None)
        out = []
        for original, s in zip(flatten(sources), flat_sources):
            g = grads.get(id(s))
            if type(g) is backprop.ops.slices and not isinstance(original, Variable):
                g = backprop.ops.dense(g)  # IndexedSlices go to variables, as in TensorFlow
            if g is None and unconnected is UnconnectedGradients.ZERO:
                g = (backprop.ops.zeros(s.shape, dtype=s.dtype) if s.shape.is_fully_defined()
                     else backprop.ops.zeros_like(s))  # an unknown dim: take it at run time
            out.append(g)
        return pack_sequence_as(sources, out)

    # jacobian and batch_jacobian (built from ops: stack, reshape, gather) are installed by the
    # op library: ops/jacobian_ops.py


def custom_gradient(f: Callable | None = None):
    """``tf.custom_gradient``: f returns (y, grad_fn); grad_fn(dy) gives gradients of inputs.

    If f reads trainable variables, grad_fn must accept ``variables=`` and return
    (input_grads, variable_grads), as in TF.
    """
    if f is None:
        return custom_gradient

    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        outer = _state.tapes
        probe = GradientTape(watch_accessed_variables=True)
        _state.tapes = ()
        try:
            probe._push()
            try:
                y, grad_fn = f(*args, **kwargs)
            finally:
                probe._pop()
        finally:
            _state.tapes = outer
        if not outer:
            return y
        variables = list(probe.watched_variables())
        takes_vars = "variables" in inspect.signature(grad_fn).parameters or any(
            p.kind == p.VAR_KEYWORD for p in inspect.signature(grad_fn).parameters.values())
        tensor_args = [a for a in flatten(list(args)) if isinstance(a, (Tensor, Variable))]
        flat_y = flatten(y)
        multi = len(flat_y) != 1 or isinstance(y, (list, tuple))
        n_args = len(tensor_args)

        def backward(g, outs, *inputs):
            dys = list(g) if multi else [g]
            if takes_vars and variables:
                gx, gv = grad_fn(*dys, variables=variables)
            else:
                gx, gv = grad_fn(*dys), []
            gx = list(gx) if isinstance(gx, (list, tuple)) else [gx]
            if len(gx) != n_args:
                raise ValueError(f"custom_gradient: grad_fn returned {len(gx)} gradients for "
                                 f"{n_args} tensor inputs")
            return tuple(gx) + tuple(gv)

        inputs = tensor_args + variables
        tensors = [a.read_value() if isinstance(a, Variable) else a for a in inputs]
        outs = tuple(flat_y) if multi else flat_y[0]
        for tape in outer:
            tape._record(backward, {}, inputs, tensors, outs, multi)
        return y

    return wrapper
