"""Higher-order functions: ``tf.map_fn``, ``tf.scan``, ``tf.foldl/foldr``, ``tf.vectorized_map``,
``tf.switch_case``, ``tf.case``.

Eagerly they are Python loops and choices. Traced, the loops become one ``tf.while_loop`` over
TensorArrays (so the leading dim may be known only at run time, and gradients flow through the
loop), and the choices nested ``tf.cond`` nodes. Ragged or sparse per-element results cannot live
in a TensorArray; with a static leading dim such loops are unrolled instead (as many nodes as
elements); with a run-time one, ragged elements and 1-D ragged-row results (concatenated in
the loop, lengths in a TensorArray) work, other composites raise.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from tapeflow._api import export
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework import errors, nest
from tapeflow.framework.composite import CompositeTensor, TypeSpec
from tapeflow.framework.constant import convert_to_tensor
from tapeflow.framework.context import state as _state
from tapeflow.framework.tensor import Tensor
from tapeflow.framework.tensor_spec import TensorSpec
from tapeflow.graph import control_flow
from tapeflow.ops import array_ops, gather_ops, math_ops


def _as_elem(x: Any) -> Any:
    if isinstance(x, (Tensor, CompositeTensor)):
        return x
    return convert_to_tensor(x)


def _leading(flat: list, what: str) -> Any:
    """The number of elements (an int when static, else a scalar tensor)."""
    first = flat[0]
    n = first.shape[0] if first.shape.rank else None
    if first.shape.rank == 0:
        raise ValueError(f"{what}: elems must have at least one dimension")
    if n is None:
        if isinstance(first, CompositeTensor):
            return first.nrows()
        return array_ops.shape(first)[0]
    return n


def _row(x: Any, i: Any) -> Any:
    if isinstance(x, CompositeTensor):
        return x[i]
    return gather_ops.gather(x, i) if isinstance(i, Tensor) else x[i]


def _stack(values: list, spec: Any) -> Any:
    if isinstance(values[0], CompositeTensor) or isinstance(spec, TypeSpec):
        from tapeflow.ragged.dispatch import stack as ragged_stack
        from tapeflow.sparse.tensor import SparseTensor

        if isinstance(values[0], SparseTensor):
            from tapeflow.data.composite import stack as stack_sparse

            return stack_sparse(values)
        return ragged_stack(values)
    return array_ops.stack(values)


def _is_composite_spec(spec: Any) -> bool:
    return isinstance(spec, TypeSpec) and not isinstance(spec, TensorSpec)


def _specs_from(signature: Any, structure: Any) -> list:
    if signature is None:
        return [None] * len(nest.flatten(structure))
    flat = nest.flatten(signature)
    return [s if isinstance(s, TypeSpec) or isinstance(s, TensorSpec) else
            TensorSpec(None, _dtypes.as_dtype(s)) for s in flat]


@export("map_fn")
def map_fn(fn: Callable, elems: Any, dtype: Any = None, parallel_iterations: Any = None,
           back_prop: bool = True, swap_memory: bool = False, infer_shape: bool = True,
           name: str | None = None, fn_output_signature: Any = None) -> Any:
    """Apply `fn` to each element (slice along axis 0) of `elems`; stack the results.

    `elems` may be a nested structure (fn then gets the same structure of slices), ragged or
    sparse; `fn_output_signature` (or the older `dtype`) gives the result's structure and
    dtypes, needed when they differ from the input's (a RaggedTensorSpec makes a ragged result).
    """
    signature = fn_output_signature if fn_output_signature is not None else dtype
    flat = [_as_elem(x) for x in nest.flatten(elems)]
    if not flat:
        raise ValueError("tf.map_fn: elems must contain at least one tensor")
    n = _leading(flat, "tf.map_fn")

    def call(i: Any) -> Any:
        return fn(nest.pack_sequence_as(elems, [_row(x, i) for x in flat]))

    composite_out = signature is not None and any(_is_composite_spec(s)
                                                  for s in nest.flatten(signature))
    if _state.graph is None or isinstance(n, int) and (
            composite_out or any(isinstance(x, CompositeTensor) for x in flat)):
        if not isinstance(n, int):
            n = int(n)
        if n == 0:
            raise ValueError("tf.map_fn over zero elements needs a traced while_loop; "
                             "got an empty input eagerly")
        results = [call(i) for i in range(n)]
        leaves = [nest.flatten(r) for r in results]
        specs = _specs_from(signature, results[0])
        stacked = [_stack([cast_to(leaf[j], specs[j]) for leaf in leaves], specs[j])
                   for j in range(len(leaves[0]))]
        return nest.pack_sequence_as(results[0], stacked)
    if any(isinstance(x, CompositeTensor) and not hasattr(x, "row_splits") for x in flat) or (
            composite_out and not all(_ragged_row_spec(sp) or not _is_composite_spec(sp)
                                      for sp in nest.flatten(signature))):
        raise NotImplementedError("tf.map_fn with sparse elements, or results other than dense "
                                  "tensors and 1-D ragged rows (RaggedTensorSpec([None], "
                                  "ragged_rank=0)), inside tf.function needs a static number "
                                  "of elements")
    return _map_loop(call, n, signature)


def _ragged_row_spec(spec: Any) -> bool:
    """A per-element result spec of a 1-D row of any length (the result is ragged)."""
    return getattr(spec, "ragged_rank", None) == 0 and spec.shape.rank == 1


def cast_to(value: Any, spec: Any) -> Any:
    """A result converted to its declared dtype (python numbers, mismatched dtypes raise)."""
    if spec is None or isinstance(value, CompositeTensor):
        return value
    t = value if isinstance(value, Tensor) else convert_to_tensor(value, spec.dtype)
    if t.dtype is not spec.dtype:
        raise TypeError(f"tf.map_fn: fn returned {t.dtype.name} where fn_output_signature "
                        f"declares {spec.dtype.name}\n{errors.user_line()}")
    return t


def _map_loop(call: Callable, n: Any, signature: Any) -> Any:
    """The traced form: a while_loop writing each result to a TensorArray. A result declared
    a 1-D ragged row (RaggedTensorSpec([None], ragged_rank=0)) is concatenated onto a growing
    values tensor, with its length in a TensorArray; the rows become one RaggedTensor."""
    first = call(0 if isinstance(n, int) else convert_to_tensor(0))
    leaves = nest.flatten(first)
    specs = _specs_from(signature, first)
    leaves = [cast_to(v, s) for v, s in zip(leaves, specs)]
    rows = [_ragged_row_spec(s) for s in specs]
    state: list = []
    for t, row in zip(leaves, rows):
        if row:  # (values so far, lengths)
            lengths = control_flow.TensorArray(_dtypes.int64, size=n, element_shape=[])
            state += [t, lengths.write(0, array_ops.size(t, out_type=_dtypes.int64))]
        else:
            state.append(control_flow.TensorArray(t.dtype, size=n, element_shape=t.shape)
                         .write(0, t))

    def body(i: Any, *carried: Any) -> Any:
        out = [cast_to(v, s) for v, s in zip(nest.flatten(call(i)), specs)]
        new, k = [], 0
        for v, row in zip(out, rows):
            if row:
                new += [array_ops.concat([carried[k], v], 0),
                        carried[k + 1].write(i, array_ops.size(v, out_type=_dtypes.int64))]
                k += 2
            else:
                new.append(carried[k].write(i, v))
                k += 1
        return (i + 1, *new)

    limit = math_ops.cast(n, _dtypes.int32) if isinstance(n, Tensor) else convert_to_tensor(n)
    result = control_flow.while_loop(lambda i, *c: math_ops.less(i, limit), body,
                                     [convert_to_tensor(1)] + state)
    stacked, k = [], 1
    for row in rows:
        if row:
            from tapeflow.ragged.tensor import RaggedTensor

            stacked.append(RaggedTensor.from_row_lengths(result[k], result[k + 1].stack(),
                                                         validate=False))
            k += 2
        else:
            stacked.append(result[k].stack())
            k += 1
    return nest.pack_sequence_as(first, stacked)


@export("scan")
def scan(fn: Callable, elems: Any, initializer: Any = None, parallel_iterations: int = 10,
         back_prop: bool = True, swap_memory: bool = False, infer_shape: bool = True,
         reverse: bool = False, name: str | None = None) -> Any:
    """Running `acc = fn(acc, elem)` over `elems`; the stacked accumulators.

    Without an initializer the first element starts the accumulator (and is its first output).
    """
    flat = [_as_elem(x) for x in nest.flatten(elems)]
    n = _leading(flat, "tf.scan")

    def elem(i: Any) -> Any:
        return nest.pack_sequence_as(elems, [_row(x, i) for x in flat])

    order = (lambda k: n - 1 - k) if reverse else (lambda k: k)
    if _state.graph is None or isinstance(n, int):
        n_int = int(n)
        start = 0
        if initializer is None:
            acc = elem(order(0))
            outputs = [acc]
            start = 1
        else:
            acc, outputs = initializer, []
        for k in range(start, n_int):
            acc = fn(acc, elem(order(k)))
            outputs.append(acc)
        if reverse:
            outputs = outputs[::-1]
        leaves = [nest.flatten(o) for o in outputs]
        stacked = [array_ops.stack([leaf[j] for leaf in leaves]) for j in range(len(leaves[0]))]
        return nest.pack_sequence_as(outputs[0], stacked)
    return _scan_loop(fn, elem, n, initializer, reverse)


def _scan_loop(fn: Callable, elem: Callable, n: Tensor, initializer: Any,
               reverse: bool) -> Any:
    one = convert_to_tensor(1)

    def index(k: Any) -> Any:
        return n - 1 - k if reverse else k

    if initializer is None:
        acc0, k0 = elem(index(convert_to_tensor(0))), one
    else:
        acc0, k0 = initializer, convert_to_tensor(0)
    acc_flat = [convert_to_tensor(a) if not isinstance(a, Tensor) else a
                for a in nest.flatten(acc0)]
    arrays = [control_flow.TensorArray(a.dtype, size=n, element_shape=a.shape)
              for a in acc_flat]
    if initializer is None:
        arrays = [ta.write(index(convert_to_tensor(0)), a) for ta, a in zip(arrays, acc_flat)]
    m = len(acc_flat)

    def body(k: Any, *state: Any) -> Any:
        acc = nest.pack_sequence_as(acc0, list(state[:m]))
        new = [convert_to_tensor(v) if not isinstance(v, Tensor) else v
               for v in nest.flatten(fn(acc, elem(index(k))))]
        tas = [ta.write(index(k), v) for ta, v in zip(state[m:], new)]
        return (k + 1,) + tuple(new) + tuple(tas)

    result = control_flow.while_loop(lambda k, *s: math_ops.less(k, n), body,
                                         [k0] + acc_flat + arrays)
    stacked = [ta.stack() for ta in result[1 + m:]]
    return nest.pack_sequence_as(acc0, stacked)


def _fold(fn: Callable, elems: Any, initializer: Any, reverse: bool, what: str) -> Any:
    flat = [_as_elem(x) for x in nest.flatten(elems)]
    n = _leading(flat, what)

    def elem(i: Any) -> Any:
        return nest.pack_sequence_as(elems, [_row(x, i) for x in flat])

    if _state.graph is None or isinstance(n, int):
        idx = list(range(int(n)))[::-1] if reverse else list(range(int(n)))
        if initializer is None:
            acc, idx = elem(idx[0]), idx[1:]
        else:
            acc = initializer
        for i in idx:
            acc = fn(acc, elem(i))
        return acc

    def index(k: Any) -> Any:
        return n - 1 - k if reverse else k

    if initializer is None:
        acc0, k0 = elem(index(convert_to_tensor(0))), convert_to_tensor(1)
    else:
        acc0, k0 = initializer, convert_to_tensor(0)
    acc_flat = [convert_to_tensor(a) if not isinstance(a, Tensor) else a
                for a in nest.flatten(acc0)]

    def body(k: Any, *state: Any) -> Any:
        acc = nest.pack_sequence_as(acc0, list(state))
        return (k + 1,) + tuple(nest.flatten(fn(acc, elem(index(k)))))

    result = control_flow.while_loop(lambda k, *s: math_ops.less(k, n), body,
                                         [k0] + acc_flat)
    return nest.pack_sequence_as(acc0, list(result[1:]))


@export("foldl")
def foldl(fn: Callable, elems: Any, initializer: Any = None, parallel_iterations: int = 10,
          back_prop: bool = True, swap_memory: bool = False, name: str | None = None) -> Any:
    """`acc = fn(acc, elem)` from the first element to the last; the final accumulator."""
    return _fold(fn, elems, initializer, False, "tf.foldl")


@export("foldr")
def foldr(fn: Callable, elems: Any, initializer: Any = None, parallel_iterations: int = 10,
          back_prop: bool = True, swap_memory: bool = False, name: str | None = None) -> Any:
    """`acc = fn(acc, elem)` from the last element to the first."""
    return _fold(fn, elems, initializer, True, "tf.foldr")


@export("vectorized_map")
def vectorized_map(fn: Callable, elems: Any, fallback_to_while_loop: bool = True,
                   warn: bool = True) -> Any:
    """map_fn computed by one call of `fn` on the whole batch when that is the same thing.

    Eagerly, `fn` is run on the first two elements both ways (batched, and one at a time) and
    must agree; then the whole batch goes through one call. When it does not (fn looks at
    the batch dimension, or fails on a batch), the result comes from a map_fn loop, with a
    warning. Traced, it is map_fn's while_loop.
    """
    flat = [_as_elem(x) for x in nest.flatten(elems)]
    n = _leading(flat, "tf.vectorized_map")
    if _state.graph is None and isinstance(n, int) and n > 0:
        probe = nest.pack_sequence_as(elems, [x[:min(n, 2)] for x in flat])
        try:
            batched = fn(probe)
            looped = map_fn(fn, probe)
            agree = _same(batched, looped)
        except Exception:  # noqa: BLE001 - fn cannot take a batch: the loop is the answer
            agree = False
        if agree:
            return fn(elems)
        if not fallback_to_while_loop:
            raise ValueError("tf.vectorized_map: fn does not vectorize over the batch and "
                             "fallback_to_while_loop is False")
        if warn:
            warnings.warn("tf.vectorized_map: fn gives different results on a batch than "
                          "element by element; falling back to a map_fn loop", stacklevel=2)
    return map_fn(fn, elems)


def _same(a: Any, b: Any) -> bool:
    fa, fb = nest.flatten(a), nest.flatten(b)
    if len(fa) != len(fb):
        return False
    for x, y in zip(fa, fb):
        x, y = np.asarray(x), np.asarray(y)
        if x.shape != y.shape or not np.allclose(x, y, rtol=1e-6, atol=1e-6, equal_nan=True):
            return False
    return True


@export("switch_case")
def switch_case(branch_index: Any, branch_fns: Any, default: Callable | None = None,
                name: str | None = None) -> Any:
    """Run branch_fns[branch_index] (or `default`, which defaults to the last branch, for an
    index out of range); nested conds when traced."""
    if isinstance(branch_fns, dict):
        pairs = sorted(branch_fns.items())
    else:
        pairs = list(enumerate(branch_fns))
    if not pairs:
        raise ValueError("tf.switch_case: branch_fns must not be empty")
    fallback = default if default is not None else pairs[-1][1]
    index = branch_index
    if _state.graph is None or not isinstance(index, Tensor):
        k = int(np.asarray(index.numpy() if hasattr(index, "numpy") else index))
        return dict(pairs).get(k, fallback)()
    index = math_ops.cast(index, _dtypes.int32)

    def chain(rest: list) -> Any:
        if not rest:
            return fallback()
        (k, branch), tail = rest[0], rest[1:]
        return control_flow.cond(math_ops.equal(index, k), branch, lambda: chain(tail))

    return chain(pairs)


@export("case")
def case(pred_fn_pairs: Any, default: Callable | None = None, exclusive: bool = False,
         strict: bool = False, name: str = "case") -> Any:
    """The function of the first true predicate (or `default`); nested conds when traced.

    With `exclusive`, more than one true predicate is an error (checked when eager).
    """
    pairs = list(pred_fn_pairs.items() if isinstance(pred_fn_pairs, dict) else pred_fn_pairs)
    if _state.graph is None:
        truth = [bool(np.asarray(p.numpy() if hasattr(p, "numpy") else p)) for p, _ in pairs]
        if exclusive and sum(truth) > 1:
            raise errors.InvalidArgumentError(
                f"tf.case: exclusive=True but {sum(truth)} predicates are true\n"
                f"{errors.user_line()}")
        for t, (_, fn) in zip(truth, pairs):
            if t:
                return fn()
        if default is None:
            raise errors.InvalidArgumentError("tf.case: no predicate is true and no default")
        return default()

    def chain(rest: list) -> Any:
        if not rest:
            if default is None:
                return pairs[-1][1]()
            return default()
        (pred, fn), tail = rest[0], rest[1:]
        return control_flow.cond(pred, fn, lambda: chain(tail))

    return chain(pairs)


@export("hessians")
def hessians(ys: Any, xs: Any, gate_gradients: bool = False, aggregation_method: Any = None,
             name: str = "hessians") -> list:
    """Per x in xs, the Hessian of sum(ys) with respect to x ([*x.shape, *x.shape]); graph mode
    only, as TF (use nested GradientTapes eagerly)."""
    from tapeflow.graph.symbolic_gradients import gradients

    xs = list(xs) if isinstance(xs, (list, tuple)) else [xs]
    out = []
    for x, g in zip(xs, gradients(ys, xs)):
        n = int(np.prod(x.shape.as_list()))
        flat = array_ops.reshape(g, [-1])
        rows = [gradients(flat[i], x)[0] for i in range(n)]
        rows = [array_ops.zeros_like(x) if r is None else r for r in rows]
        out.append(array_ops.reshape(array_ops.stack(rows), x.shape.as_list() * 2))
    return out


def _register_config_aliases() -> None:
    """TF's older names for turning tf.function tracing off (the same functions)."""
    from tapeflow.graph.function import functions_run_eagerly, run_functions_eagerly

    export("config.experimental_run_functions_eagerly")(run_functions_eagerly)
    export("config.experimental_functions_run_eagerly")(functions_run_eagerly)


_register_config_aliases()


class AggregationMethod:
    """How tf.gradients adds the gradients that reach one tensor: tapeflow always adds them in
    one add_n, which is what every method computes (TF's constants, for code that names them)."""

    ADD_N = 0
    DEFAULT = ADD_N
    EXPERIMENTAL_TREE = 1
    EXPERIMENTAL_ACCUMULATE_N = 2


export("AggregationMethod")(AggregationMethod)


class CGState(tuple):
    """(i, x, r, p, gamma) of conjugate_gradient, with TF's field names."""

    __slots__ = ()
    _fields = ("i", "x", "r", "p", "gamma")

    def __new__(cls, i: Any, x: Any, r: Any, p: Any, gamma: Any) -> CGState:
        return tuple.__new__(cls, (i, x, r, p, gamma))

    i = property(lambda self: self[0])
    x = property(lambda self: self[1])
    r = property(lambda self: self[2])
    p = property(lambda self: self[3])
    gamma = property(lambda self: self[4])


@export("linalg.experimental.conjugate_gradient")
def conjugate_gradient(operator: Any, rhs: Any, preconditioner: Any = None, x: Any = None,
                       tol: float = 1e-5, max_iter: int = 20,
                       name: str = "conjugate_gradient") -> CGState:
    """Solve A x = rhs for a self-adjoint positive definite LinearOperator A by (optionally
    preconditioned) conjugate gradients: stop after max_iter steps or when every residual's
    norm is at most tol times the starting one (TF's loop, a while_loop when traced)."""
    from tapeflow.ops import complex_ops, reduce_ops

    if not (operator.is_self_adjoint and operator.is_positive_definite):
        raise ValueError("Expected a self-adjoint, positive definite operator.")
    rhs = convert_to_tensor(rhs)

    def dot(a: Any, b: Any) -> Any:  # a^H b over the last axis
        return reduce_ops.reduce_sum((complex_ops.conj(a) if a.dtype.is_complex else a) * b,
                                     axis=-1)

    def norm(v: Any) -> Any:
        return math_ops.sqrt(reduce_ops.reduce_sum(math_ops.square(math_ops.abs(v)), axis=-1))

    r0 = rhs * array_ops.ones(array_ops.concat(
        [operator.batch_shape_tensor(), array_ops.shape(rhs)[-1:]], 0), rhs.dtype) \
        if operator.batch_shape.rank else rhs
    limit = tol * norm(r0)
    if x is None:
        x = array_ops.zeros_like(r0)
    else:
        x = convert_to_tensor(x, rhs.dtype)
        r0 = rhs - operator.matvec(x)
    p0 = r0 if preconditioner is None else preconditioner.matvec(r0)
    state = (convert_to_tensor(np.int32(0)), x, r0, p0, dot(r0, p0))

    def keep_going(i: Any, x: Any, r: Any, p: Any, gamma: Any) -> Any:
        return math_ops.logical_and(i < max_iter, reduce_ops.reduce_any(norm(r) > limit))

    def step(i: Any, x: Any, r: Any, p: Any, gamma: Any) -> tuple:
        z = operator.matvec(p)
        alpha = gamma / dot(p, z)
        x = x + alpha[..., None] * p
        r = r - alpha[..., None] * z
        q = r if preconditioner is None else preconditioner.matvec(r)
        new_gamma = dot(r, q)
        beta = new_gamma / gamma
        return i + 1, x, r, q + beta[..., None] * p, new_gamma

    state = control_flow.while_loop(keep_going, step, state)
    return CGState(*state)


@export("experimental.async_scope")
@contextlib.contextmanager
def async_scope() -> Any:
    """TF groups asynchronously executed ops here and reports their errors at the end of the
    scope; tapeflow executes every op synchronously, so errors surface at the op, inside the
    scope, and there is nothing left to wait for when it closes."""
    yield


@export("experimental.async_clear_error")
def async_clear_error() -> None:
    """Clear the error an asynchronous op left pending: synchronous execution leaves none."""
