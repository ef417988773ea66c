"""The single entry point for every primitive op: ``apply(op, *inputs, **attrs)``.

Eager: run the kernel on NumPy arrays now and wrap the result. Tracing: hand the op to the
graph being built (``state.graph.apply``). Either way, active gradient tapes record the op,
so gradients work the same in both modes.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from tapeflow.framework import backprop as _backprop
from tapeflow.framework import composite as _composite
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework import errors
from tapeflow.framework.context import state as _state
from tapeflow.framework.tensor import EagerTensor, Tensor, wrap
from tapeflow.framework.variable import Variable

ShapeRule = Callable[..., Any]

# Set by tapeflow.keras: consulted only when an eager input has no `_value` (the slow conversion
# path), so an op on a symbolic KerasTensor becomes a functional-API layer. NotImplemented
# declines and conversion goes on as usual.
symbolic_apply: Callable[..., Any] | None = None
# Set by tf.debugging.enable_check_numerics: called with (op, outputs) after each eager op.
check_numerics_hook: Callable[..., Any] | None = None


class Op:
    """A primitive: kernel + shape/dtype rule + gradient rule + facts the compiler reads.

    kernel(*arrays, **attrs) -> array | tuple of arrays      (plain NumPy, never sees Tensors)
    shape(*specs, **attrs) -> spec | list of specs           spec = (shape tuple|None, DType)
    grad(g, out, *inputs, **attrs) -> grad per input         (written in tapeflow ops)

    Compiler facts (set where the op is defined; ``graph/`` reads them and names no op):

    - ``elementwise``: pointwise over broadcast inputs (fusible; implies ``same_dtype``).
    - ``stateful`` / ``random``: never folded, CSE'd or reordered; run even when unused.
    - ``variable``: ``"read"`` or ``"write"`` when the op reads or replaces ``attrs["var"]``
      (effects ordered per variable; an unused read has no effect and may be dropped);
      ``"assign"``: a write after which the variable holds input 0's value, so a later read in
      the same graph may take that value instead (``jit_compile``'s clusters see through it).
    - ``output``: the output buffer. ``"fresh"``: a new array the executor may overwrite once
      dead; ``"fresh_float"``: fresh when input 0 is floating; ``"input"``: input 0 itself
      (no line is emitted); ``"view"``: a view of input 0 (no new memory; the memory plan
      keeps input 0's buffer alive with it); ``"unknown"`` (default): a new array for the
      memory plan, but never overwritten (it may be a view).
      Ops lowered to a single ufunc call (below) are fresh on their own.
    - ``worker``: a pure kernel heavy enough to hand to the inter-op worker thread.
    - ``foldable``: may be computed at compile time from constant inputs (default: not
      stateful). ``shape_only``: input positions read for their static shape/dtype only.
    - ``allocates(node) -> int``: the bytes of the buffer output 0 owns, where that is more than
      its spec (a channel prefix of a wider buffer), for the memory plan.
    - ``workspace(node) -> int``: bytes the kernel holds while it runs beyond its inputs and a
      fresh output (temporaries; a variable update's new values), for the memory plan.
    - ``flops(node) -> float``: the cost estimate's arithmetic (multiply-adds x 2); without it
      the scheduler estimates from the bytes moved.
    - ``ufunc``: ``(np.ufunc, extra constant operands)``: on float inputs the op is this one
      ufunc call (no kernel frame, and it may write into a dying input's buffer). A kernel that
      is itself a single-output ufunc gets this for every dtype without saying so.
    - ``emit(node, args, bind) -> str | None``: how the executor calls it inline, as a Python
      expression over the argument names `args` and ``bind(value)`` (a name for a constant);
      None falls back to the kernel call. ``emit_into`` is the same for writing into input 0's
      buffer when that input dies at the op (a fresh array no one else reads).
    - ``scalar``: ``(fn, constants)``: for an elementwise op that is no single ufunc, a
      ``kernels.scalar_math`` function computing one element (`constants` appended, in the
      values' dtype): what a ``jit_compile`` cluster calls in its loop.
    - ``reduction``: ``"sum"`` or ``"mean"``: the op adds up (or averages) its one input over
      ``attrs["axis"]`` (``keepdims`` keeping them as 1s): a ``jit_compile`` cluster ending in
      it accumulates in its loop instead of writing the summed values out.
    - ``neutral``: ``(value, positions)``: an operand at one of `positions` equal to `value`
      everywhere makes the op return its other operand (``x * 1``, ``x - 0``).
    - ``passthrough``: ``True`` or ``fn(attrs) -> bool``: the op returns input 0 unchanged when
      input and output specs are equal (Reshape, Cast; Transpose with the identity perm).
    - ``inverse``: the Op this one undoes along the same ``axis`` attribute (a split of a
      concatenation into the concatenated pieces).
    - ``groups``: the per-variable update Op this one runs for many variables in one call
      (setting it sets that Op's ``grouped`` to this one). Nodes of that op that share every
      input after the gradient and every attribute that is no Variable may become one node of
      this op: inputs (the shared ones, then the gradients), each Variable attribute ``k`` as
      a tuple ``ks`` (``var`` -> ``vars``), the rest as they were; its one output is its first
      input (``graph/passes/group_updates``).
    """

    __slots__ = ("name", "kernel", "shape_fn", "grad_fn", "elementwise", "stateful", "random",
                 "same_dtype", "multi_output", "variable", "output", "worker", "foldable",
                 "shape_only", "flops", "ufunc", "emit", "emit_into", "neutral", "passthrough",
                 "inverse", "workspace", "allocates", "scalar", "reduction", "groups", "grouped",
                 "__dict__")

    def __init__(self, name: str, kernel: Callable, *, shape: ShapeRule | None = None,
                 grad: Callable | None = None, elementwise: bool = False,
                 stateful: bool = False, random: bool = False, same_dtype: bool | None = None,
                 multi_output: bool = False, variable: str | None = None,
                 output: str = "unknown", worker: bool = False, foldable: bool | None = None,
                 shape_only: tuple[int, ...] = (), flops: Callable | None = None,
                 ufunc: tuple | None = None, emit: Callable | None = None,
                 emit_into: Callable | None = None, neutral: tuple | None = None,
                 passthrough: bool | Callable = False, inverse: Op | None = None,
                 workspace: Callable | None = None, allocates: Callable | None = None,
                 scalar: tuple | None = None, reduction: str | None = None,
                 groups: Op | None = None):
        if variable not in (None, "read", "write", "assign"):
            raise ValueError(f"Op {name}: variable must be None, 'read', 'write' or 'assign'")
        if reduction not in (None, "sum", "mean"):
            raise ValueError(f"Op {name}: reduction must be None, 'sum' or 'mean'")
        if output not in _OUTPUTS:
            raise ValueError(f"Op {name}: output must be one of {_OUTPUTS}, got {output!r}")
        self.name = name
        self.kernel = kernel
        self.shape_fn = shape
        self.grad_fn = grad
        self.elementwise = elementwise
        self.variable = variable
        self.stateful = stateful or random or variable is not None
        self.random = random
        self.same_dtype = elementwise if same_dtype is None else same_dtype
        self.multi_output = multi_output
        self.output = output
        self.worker = worker
        self.foldable = not self.stateful if foldable is None else foldable
        self.shape_only = frozenset(shape_only)
        self.flops = flops
        self.ufunc = ufunc
        self.emit = emit
        self.emit_into = emit_into
        self.neutral = neutral
        self.passthrough = passthrough
        self.inverse = inverse
        self.workspace = workspace
        self.allocates = allocates
        self.scalar = scalar
        self.reduction = reduction
        self.groups = groups
        self.grouped: Op | None = None
        if groups is not None:
            groups.grouped = self

    def def_grad(self, fn: Callable) -> Callable:
        """Decorator: attach the gradient rule (VJP) to this op. A rule with a keyword-only
        ``needs=None`` is told which inputs need a gradient (``backprop.selective``)."""
        self.grad_fn = fn
        param = inspect.signature(fn).parameters.get("needs")
        if param is not None and param.kind is param.KEYWORD_ONLY:
            _backprop.selective.add(fn)
        return fn

    def def_shape(self, fn: ShapeRule) -> ShapeRule:
        """Decorator: attach the static shape/dtype rule to this op."""
        self.shape_fn = fn
        return fn

    def __call__(self, *inputs, **attrs):
        return apply(self, *inputs, **attrs)

    def __repr__(self) -> str:
        return f"<Op {self.name}>"


_OUTPUTS = ("unknown", "fresh", "fresh_float", "input", "view")

REGISTRY: dict[str, Op] = {}


def op(name: str, **flags) -> Callable[[Callable], Op]:
    """Decorator turning a NumPy kernel into a registered primitive ``Op``.

    Positional parameters of the kernel are tensor inputs; keyword-only ones are attributes.
    `flags` are the keyword arguments of ``Op`` (shape, grad and the compiler facts).
    """

    def wrap_kernel(kernel: Callable) -> Op:
        if name in REGISTRY:
            raise ValueError(f"Op {name!r} is defined twice (one op, one place)")
        o = Op(name, kernel, **flags)
        o.__doc__ = kernel.__doc__
        REGISTRY[name] = o
        return o

    return wrap_kernel


def apply(op: Op, *inputs: Any, **attrs: Any):
    """Run (eager) or record (tracing) `op` on `inputs`; record it on active tapes."""
    plain = _state.plain  # eager, no tape, no tf.device: one thread-local read, not three
    if plain or _state.graph is None:
        try:
            n = len(inputs)
            if n == 2:
                arrays = (inputs[0]._value, inputs[1]._value)
            elif n == 1:
                arrays = (inputs[0]._value,)
            else:
                arrays = tuple([x._value for x in inputs])
        except AttributeError:
            pair = _tensor_and_number(op, inputs) if n == 2 else None
            if pair is not None:  # `x + 1.0`, `maximum(x, 0)`: the common case, first
                inputs, arrays = pair
            else:
                if symbolic_apply is not None:
                    out = symbolic_apply(op, inputs, attrs)
                    if out is not NotImplemented:
                        return out
                out = _composite.apply_elementwise(op, inputs, attrs)  # ragged / sparse inputs
                if out is not NotImplemented:
                    return out
                inputs, arrays = _convert_eager_inputs(op, inputs)
        if op.same_dtype and n > 1:
            d0 = arrays[0].dtype
            for a in arrays:
                if a.dtype is not d0 and a.dtype != d0:
                    _raise_dtype_mismatch(op, arrays)
        try:
            out = op.kernel(*arrays, **attrs) if attrs else op.kernel(*arrays)
        except errors.OpError:
            raise
        except Exception as e:  # NumPy's errors become TF's, naming op, shapes and user line
            raise kernel_error(op, arrays, attrs, e) from e
        if op.multi_output:
            outs = tuple(wrap(o if type(o) is np.ndarray else np.asarray(o)) for o in out)
        else:
            outs = _new(EagerTensor)
            outs._value = out if type(out) is np.ndarray else np.asarray(out)
        if not plain and _state.tapes:
            tensors = [x if type(x) is EagerTensor else wrap(a) for x, a in zip(inputs, arrays)]
            _record(op, inputs, tensors, attrs, outs)
        if check_numerics_hook is not None:  # tf.debugging.enable_check_numerics
            check_numerics_hook(op, outs)
        if not plain and _state.device is not None:  # inside tf.device: outputs carry its name
            for t in (outs if op.multi_output else (outs,)):
                t._device = _state.device
        return outs
    graph = _state.graph
    for x in inputs:
        if isinstance(x, _composite.CompositeTensor):
            out = _composite.apply_elementwise(op, inputs, attrs)
            if out is not NotImplemented:
                return out
    tensors, outs = graph.apply(op, inputs, attrs)
    if _state.tapes:
        _record(op, inputs, tensors, attrs, outs)
    return outs


_new = object.__new__


def eager_binary(op: Op, general: Callable, reflected: bool = False) -> Callable:
    """The operator method ``x <op> y`` of eager tensors (``EagerTensor.__add__``; ``y <op> x``
    when `reflected`, ``EagerTensor.__radd__``): when the thread runs plain eager (no tape, no
    tf.device) and `y` is an eager tensor of `x`'s dtype or a Python number that fits it (TF's
    rule, as ``number_operand``), the kernel runs at once, as `apply` would run it, without its
    argument packing and the checks that cannot fire; everything else is `general(x, y)`, the
    method of every tensor.

    `op` must be a same-dtype, single-output elementwise op. ``a + b`` on float32[10] costs
    ~0.8 us this way against ~1.2 us through `apply` (2-core EPYC, thread CPU time)."""
    if not (op.elementwise and op.same_dtype) or op.multi_output:
        raise ValueError(f"eager_binary: {op.name} is not a same-dtype elementwise op")
    kernel = op.kernel

    def method(x, y):
        if _state.plain:
            a = x._value
            kind = type(y)
            if kind is EagerTensor:
                b = y._value
                if a.dtype is not b.dtype:
                    return general(x, y)  # mixed (an error) or equal but distinct dtypes
            elif kind is float or kind is int:
                number = number_operand(y, a.dtype)
                if number is None:
                    return general(x, y)
                b = number._value
            else:
                return general(x, y)
            if reflected:
                a, b = b, a
            try:
                out = kernel(a, b)
            except errors.OpError:
                raise
            except Exception as e:  # as apply words it: op, shapes and the user's line
                raise kernel_error(op, [a, b], _NO_ATTRS, e) from e
            t = _new(EagerTensor)
            t._value = out if type(out) is np.ndarray else np.asarray(out)
            if check_numerics_hook is not None:
                check_numerics_hook(op, t)
            return t
        return general(x, y)

    method.__name__ = method.__qualname__ = general.__name__
    method.__doc__ = general.__doc__
    return method


def eager_unary(op: Op, general: Callable) -> Callable:
    """``fn(x)`` for the single-output op `op` on one input (``tf.exp``, ``-x``): an eager tensor
    in a plain eager thread runs the kernel at once, as `apply` would; anything else is
    `general(x)` (tf.exp on float32[10] ~0.8 us against ~1.0 us through apply)."""
    if op.multi_output:
        raise ValueError(f"eager_unary: {op.name} has several outputs")
    kernel = op.kernel

    def run(x):
        if type(x) is EagerTensor and _state.plain:
            a = x._value
            try:
                out = kernel(a)
            except errors.OpError:
                raise
            except Exception as e:  # as apply words it: op, shapes and the user's line
                raise kernel_error(op, [a], _NO_ATTRS, e) from e
            t = _new(EagerTensor)
            t._value = out if type(out) is np.ndarray else np.asarray(out)
            if check_numerics_hook is not None:
                check_numerics_hook(op, t)
            return t
        return general(x)

    run.__name__ = run.__qualname__ = general.__name__
    run.__doc__ = general.__doc__
    return run


def eager_output(op: Op, out: Any) -> EagerTensor:
    """A single-output kernel's result as apply returns it in a plain eager thread (see
    ``state.plain``), for fast paths that call an op's kernel themselves: calling it with its
    attributes spelled out (``kernel(x, spec=spec)``) saves the ~0.15 us that apply's
    ``kernel(*arrays, **attrs)`` spends forwarding them."""
    t = _new(EagerTensor)
    t._value = out if type(out) is np.ndarray else np.asarray(out)
    if check_numerics_hook is not None:
        check_numerics_hook(op, t)
    return t


def _read_grad(g, out, value):
    return g


_read_grad.passes_slices = True  # a variable's gradient may stay an IndexedSlices


def _record(op, inputs, tensors, attrs, outs) -> None:
    if op.grad_fn is None:
        return
    tapes = _state.tapes
    for x, t in zip(inputs, tensors):
        if isinstance(x, Variable):
            # the value read is a tensor derived from the variable, so gradients computed with
            # it (higher order) stay connected to the variable on outer tapes
            for tape in tapes:
                tape._record(_read_grad, _NO_ATTRS, (x,), (t,), t, False)
    for tape in tapes:
        tape._record(op.grad_fn, attrs, tensors, tensors, outs, op.multi_output)


_NO_ATTRS: dict = {}


def _tensor_and_number(op: Op, inputs: tuple) -> tuple[tuple, tuple] | None:
    """An eager tensor and a Python float/int of a same-dtype op, the number taking the tensor's
    dtype (the conversion rule's answer, without its general walk); None for anything else."""
    if not op.same_dtype:
        return None
    a, b = inputs
    if type(a) is EagerTensor and type(b) in (float, int):
        number = number_operand(b, a._value.dtype)
        return None if number is None else ((a, number), (a._value, number._value))
    if type(b) is EagerTensor and type(a) in (float, int):
        number = number_operand(a, b._value.dtype)
        return None if number is None else ((number, b), (number._value, b._value))
    return None


def _convert_eager_inputs(op: Op, inputs: tuple) -> tuple[tuple, list]:
    dtype = matching_dtype(inputs) if op.same_dtype else None
    converted = []
    for i, x in enumerate(inputs):
        if isinstance(x, Tensor) and not isinstance(x, EagerTensor):
            raise errors.InvalidArgumentError(
                f"{op.name}: input {i} is a symbolic tensor from a graph ({x!r}) but the op runs "
                f"eagerly. Return it from the traced function instead of leaking it.\n"
                f"{errors.user_line()}")
        if hasattr(x, "_value") and not isinstance(x, np.ndarray):
            converted.append(x)
        else:
            converted.append(convert_operand(x, dtype, op.name))
    return tuple(converted), [x._value for x in converted]


# --- TensorFlow's conversion rule for operands that must share one dtype ----------------------
# (its args_to_matching_eager): the dtype is the first tensor's (or variable's); with no tensor,
# the first operand's own dtype (an int is int32, a float float32, an array keeps its dtype).
# Every other operand converts to it: NumPy arrays are cast (as TF casts them, even float to
# int), Python numbers and lists must fit (1.5 meeting int32 is a TypeError).
# tests/framework/reference/conversion_table.json records TF 2.21's outcomes.


def matching_dtype(inputs: tuple) -> _dtypes.DType | None:
    """The dtype that all operands of a same-dtype op convert to."""
    for x in inputs:
        if isinstance(x, (Tensor, Variable)):
            return x.dtype
    for x in inputs:
        if isinstance(x, (np.ndarray, np.generic)):
            return _dtypes.from_numpy(x.dtype) if x.dtype.kind in "biufc" else None
        if x is not None:
            from tapeflow.framework.constant import convert_to_tensor

            try:
                return convert_to_tensor(x).dtype
            except (TypeError, ValueError):
                return None
    return None


def convert_matching(*values: Any, op_name: str) -> list:
    """`values` of one op that must share a dtype, by the rule above (tensors and Variables pass
    as they are, so tapes still see a Variable's read)."""
    dtype = matching_dtype(values)
    return [x if isinstance(x, (Tensor, Variable)) else convert_operand(x, dtype, op_name)
            for x in values]


def convert_operand(x: Any, dtype: _dtypes.DType | None, op_name: str) -> Tensor:
    """`x` (not a tensor) as a tensor of `dtype` by the rule above; its own dtype if None."""
    from tapeflow.framework.constant import convert_to_tensor

    if dtype is None:
        return convert_to_tensor(x, _op_name=op_name)
    number = number_as(x, dtype._np)
    if number is not None:
        return number  # `x + 1.0`: the common case
    if isinstance(x, (np.ndarray, np.generic)) and x.dtype.kind in "biufc" and \
            dtype._np.kind in "biufc":
        return convert_to_tensor(np.asarray(x).astype(dtype._np, copy=False))
    if isinstance(x, (list, tuple)) and (dtype.is_integer or dtype.is_bool):
        own = convert_to_tensor(x, _op_name=op_name).dtype
        if own.is_floating or own.is_complex:
            raise TypeError(f"{op_name}: cannot convert {x!r} to a tensor of dtype {dtype.name} "
                            f"(its values are {own.name}); use tf.cast\n{errors.user_line()}")
    return convert_to_tensor(x, dtype=dtype, _op_name=op_name)


def number_as(value: Any, np_dtype: np.dtype) -> EagerTensor | None:
    """A Python float/int as a tensor of the dtype it meets (TF's rule), or None if it does not
    fit without rounding (an int tensor meeting 1.5) or is not a plain number."""
    kind = type(value)
    if kind is float:
        return wrap(np.asarray(value, np_dtype)) if np_dtype.kind in "fc" else None
    if kind is int and np_dtype.kind in "fciu":
        try:
            return wrap(np.asarray(value, np_dtype))
        except OverflowError:  # -1 meeting uint8: the general conversion explains
            return None
    return None


_OPERANDS: dict = {}  # (number, its type, NumPy dtype[, a zero's sign]) -> read-only tensor


def number_operand(value: Any, np_dtype: np.dtype) -> EagerTensor | None:
    """``number_as`` for an operand that goes straight into an op and is never handed back: one
    read-only tensor per number and dtype, made once (``maximum(x, 0.0)`` in a loop converts
    0.0 once; a conversion costs ~0.4 us, a look-up ~0.1 us)."""
    kind = type(value)
    if kind is not float and kind is not int:
        return None
    # -0.0 == 0.0 and they hash alike, but maximum(x, -0.0) differs from maximum(x, 0.0)
    key = (value, kind, np_dtype) if value else (value, kind, np_dtype, math.copysign(1, value))
    t = _OPERANDS.get(key)
    if t is None:
        t = number_as(value, np_dtype)
        if t is None:
            return None
        t._value.flags.writeable = False
        if len(_OPERANDS) >= 512:  # NaNs never match, and loops may meet many numbers
            _OPERANDS.clear()
        _OPERANDS[key] = t
    return t


def _raise_dtype_mismatch(op: Op, arrays: list) -> None:
    names = ", ".join(_dtypes.from_numpy(a.dtype).name for a in arrays)
    raise errors.InvalidArgumentError(
        f"{op.name}: inputs must have the same dtype, got ({names}); tapeflow, like TensorFlow, "
        f"never promotes silently: use tf.cast.\n{errors.user_line()}")


def kernel_error(op: Op, arrays: list, attrs: dict, e: Exception) -> Exception:
    """The error to raise for kernel exception `e`: TF's InvalidArgumentError naming the op,
    its inputs' dtypes and shapes, its attributes and the user's line."""
    shapes = ", ".join(f"{_dtypes.from_numpy(a.dtype).name}{list(a.shape)}" for a in arrays)
    shown = {k: v for k, v in attrs.items() if not callable(v) and not k.startswith("_")}
    attr_txt = f" with {shown}" if shown else ""
    msg = (f"{op.name} failed on inputs ({shapes}){attr_txt}: {e}\n{errors.user_line()}")
    return errors.InvalidArgumentError(None, op.name, msg)


def probe_shape(op: Op, specs: list, attrs: dict):
    """Default shape rule: run the kernel on zero arrays (unknown dims probed as 1 and 2).

    Dims that differ between the probes depend on an unknown input dim and become None.
    Stateful ops must define their own rule (probing would run their side effects).
    """
    if op.stateful:
        raise TypeError(f"Op {op.name} is stateful and needs an explicit shape rule")
    if any(shape is None for shape, _ in specs):
        out = _probe(op, [((), d) for _, d in specs], attrs, 1)
        return [(None, d) for _, d in out] if op.multi_output else (None, out[1])
    results = []
    for fill in (1, 2):
        try:
            results.append(_probe(op, specs, attrs, fill))
        except Exception:
            if fill == 1:
                raise
    if not op.multi_output:
        results = [[r] for r in results]
    merged = []
    for outs in zip(*results):
        (s0, d0) = outs[0]
        if len(outs) > 1:
            s1 = outs[1][0]
            shape = None if len(s0) != len(s1) else tuple(a if a == b else None
                                                          for a, b in zip(s0, s1))
        else:
            shape = s0
        merged.append((shape, d0))
    return merged if op.multi_output else merged[0]


def _probe(op: Op, specs: list, attrs: dict, fill: int):
    arrays = [np.zeros(tuple(fill if d is None else d for d in shape),
                       dtype=dtype._np if dtype is not _dtypes.string else object)
              for shape, dtype in specs]
    with np.errstate(all="ignore"):
        out = op.kernel(*arrays, **attrs)
    if op.multi_output:
        return [(np.shape(o), _dtypes.from_numpy(np.asarray(o).dtype)) for o in out]
    out = np.asarray(out)
    return (out.shape, _dtypes.from_numpy(out.dtype))
