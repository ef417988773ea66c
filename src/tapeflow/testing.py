"""Test helpers: gradient checks against finite differences and a table-driven op harness.

``check_grads(f, args, order=2)`` proves a gradient rule: tape gradients of ``f`` (and, for
order 2, gradients of those gradients through nested tapes) must match central finite
differences computed in float64. ``OpCase`` rows describe one op each (tapeflow function, NumPy
reference, input generator, optional PyTorch twin); the ``check_*`` functions run one column.

    from tapeflow.testing import check_grads
    check_grads(lambda x: x ** 3, [np.array([2.0])], order=2)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tapeflow.framework.constant import constant
from tapeflow.framework.tape import GradientTape

# --- gradient checking ------------------------------------------------------------------------


def numeric_gradient(f: Callable[[np.ndarray], float], x: np.ndarray,
                     eps: float = 1e-6) -> np.ndarray:
    """Central finite differences of a scalar NumPy function at float64 `x`: the reference
    that tests compare a tape's gradient with when they do not go through ``check_grads``."""
    out = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[i] = eps
        out[i] = (f(x + step) - f(x - step)) / (2 * eps)
    return out


def _outputs(result: Any) -> list:
    return list(result) if isinstance(result, (list, tuple)) else [result]


def _projected(f: Callable, cotangents: list) -> Callable:
    """x -> sum_i <f(x)_i, cotangent_i>: a scalar whose gradient is the VJP of f."""
    from tapeflow.ops.math_ops import add, multiply
    from tapeflow.ops.reduce_ops import reduce_sum

    def scalar(*xs):
        total = None
        for out, c in zip(_outputs(f(*xs)), cotangents):
            if out is None:
                continue
            term = reduce_sum(multiply(out, constant(c)))
            total = term if total is None else add(total, term)
        return total

    return scalar


def _tensors(args: list) -> list:
    return [constant(a) for a in args]


def check_grads(f: Callable, args: Sequence[Any], order: int = 1, eps: float = 1e-6,
                atol: float = 1e-6, rtol: float = 1e-5, seed: int = 0) -> None:
    """Assert tape gradients of `f` at `args` match central finite differences (float64).

    Float arguments are differentiated (as float64); integer and bool ones are held constant.
    ``order=2`` also checks the gradient of the gradient, through nested tapes.
    """
    args = [np.asarray(a) for a in args]
    args = [a.astype(np.float64) if a.dtype.kind == "f" else a for a in args]
    wrt = [i for i, a in enumerate(args) if a.dtype.kind == "f"]
    if not wrt:
        raise ValueError("check_grads: no floating point argument to differentiate")
    rng = np.random.default_rng(seed)
    outs = _outputs(f(*_tensors(args)))
    cotangents = [None if o is None else rng.standard_normal(tuple(o.shape)) for o in outs]
    scalar = _projected(f, cotangents)
    _check_first_order(scalar, args, wrt, eps, atol, rtol, order)
    if order >= 2:
        def vjp(*xs):
            with GradientTape() as tape:
                for i in wrt:
                    tape.watch(xs[i])
                y = scalar(*xs)
            grads = tape.gradient(y, [xs[i] for i in wrt])
            from tapeflow.ops.array_ops import zeros_like

            return [zeros_like(xs[i]) if g is None else g for i, g in zip(wrt, grads)]

        check_grads(vjp, args, order=order - 1, eps=eps, atol=atol, rtol=rtol, seed=seed + 1)


def _check_first_order(scalar: Callable, args: list, wrt: list[int], eps: float, atol: float,
                       rtol: float, order: int) -> None:
    xs = _tensors(args)
    with GradientTape() as tape:
        for i in wrt:
            tape.watch(xs[i])
        y = scalar(*xs)
    analytic = tape.gradient(y, [xs[i] for i in wrt])
    for i, g in zip(wrt, analytic):
        numeric = np.zeros_like(args[i])
        for j in np.ndindex(args[i].shape):
            numeric[j] = (_at(scalar, args, i, j, eps) - _at(scalar, args, i, j, -eps)) / (2 * eps)
        got = np.zeros_like(args[i]) if g is None else np.asarray(g)
        np.testing.assert_allclose(
            got, numeric, atol=atol, rtol=rtol,
            err_msg=f"order-{order} gradient check: argument {i} (shape {args[i].shape}): tape "
                    f"gradient vs central finite differences")


def _at(scalar: Callable, args: list, i: int, j: tuple, delta: float) -> float:
    moved = list(args)
    moved[i] = args[i].copy()
    moved[i][j] += delta
    return float(np.asarray(scalar(*[constant(a) for a in moved])))


# --- the table-driven op harness --------------------------------------------------------------


@dataclasses.dataclass
class OpCase:
    """One row of an op table: how to call the op, what it should compute, on which inputs.

    fn: tapeflow function of tensors; ref: NumPy reference of arrays; make: rng -> list of
    float64/int arrays; torch_fn: the same computation on torch tensors (None: no comparison);
    grad: whether the op is differentiable in its float inputs; order: gradient check order.
    """

    name: str
    fn: Callable
    ref: Callable
    make: Callable[[np.random.Generator], list]
    torch_fn: Callable | None = None
    grad: bool = True
    order: int = 1
    atol: float = 1e-5
    rtol: float = 1e-5

    def inputs(self, seed: int = 0) -> list:
        return self.make(np.random.default_rng(seed))

    def __str__(self) -> str:
        return self.name


def as_float32(arrays: list) -> list:
    return [a.astype(np.float32) if a.dtype.kind == "f" else a for a in arrays]


def check_forward(case: OpCase) -> None:
    """float32 forward (TF's default dtype) against the NumPy reference computed in float64."""
    arrays = case.inputs()
    got = _outputs(case.fn(*[constant(a) for a in as_float32(arrays)]))
    want = _outputs(case.ref(*arrays))
    assert len(got) == len(want), f"{case.name}: {len(got)} outputs, reference has {len(want)}"
    for g, w in zip(got, want):
        w = np.asarray(w)
        g_np = np.asarray(g)
        assert g_np.shape == w.shape, f"{case.name}: shape {g_np.shape} != reference {w.shape}"
        if w.dtype.kind == "f":
            assert g_np.dtype == np.float32, f"{case.name}: float32 in, {g_np.dtype} out"
        np.testing.assert_allclose(g_np, w, atol=1e-4, rtol=1e-4, err_msg=case.name)


def check_case_grads(case: OpCase) -> None:
    check_grads(case.fn, case.inputs(), order=case.order)


def check_torch(case: OpCase, torch: Any) -> None:
    """Forward values and the VJP for a random cotangent, tapeflow vs PyTorch, in float64."""
    arrays = case.inputs()
    rng = np.random.default_rng(1)
    ours_in = [constant(a) for a in arrays]
    torch_in = [torch.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    with GradientTape() as tape:
        for t, a in zip(ours_in, arrays):
            if a.dtype.kind == "f":
                tape.watch(t)
        ours = _outputs(case.fn(*ours_in))
        cots = [rng.standard_normal(tuple(o.shape)) for o in ours]
        if case.grad:
            loss = _projected(lambda *xs: ours, cots)()
    theirs = _outputs(case.torch_fn(*torch_in))
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(np.asarray(o), t.detach().numpy(), atol=case.atol,
                                   rtol=case.rtol, err_msg=f"{case.name}: forward vs torch")
    if not case.grad:
        return
    float_in = [(t, o) for t, o, a in zip(torch_in, ours_in, arrays) if a.dtype.kind == "f"]
    torch_loss = sum((t * torch.tensor(c)).sum() for t, c in zip(theirs, cots))
    torch_grads = torch.autograd.grad(torch_loss, [t for t, _ in float_in], allow_unused=True)
    our_grads = tape.gradient(loss, [o for _, o in float_in])
    for (t, _), tg, og in zip(float_in, torch_grads, our_grads):
        want = np.zeros(tuple(t.shape)) if tg is None else tg.numpy()
        got = np.zeros(tuple(t.shape)) if og is None else np.asarray(og)
        np.testing.assert_allclose(got, want, atol=case.atol, rtol=case.rtol,
                                   err_msg=f"{case.name}: gradient vs torch")


def check_graph(case: OpCase, function: Callable) -> None:
    """The op traced with `function` (tf.function) gives the eager result."""
    arrays = as_float32(case.inputs())
    eager = _outputs(case.fn(*[constant(a) for a in arrays]))
    traced = _outputs(function(case.fn)(*[constant(a) for a in arrays]))
    for e, t in zip(eager, traced):
        np.testing.assert_allclose(np.asarray(t), np.asarray(e), atol=1e-6, rtol=1e-6,
                                   err_msg=f"{case.name}: graph vs eager")


def op_table_tests(cases: list[OpCase]) -> tuple[Callable, ...]:
    """The four table columns as pytest tests: forward, gradient, vs PyTorch, graph vs eager.

    Usage in a test module: ``test_forward, test_gradient, test_vs_torch, test_graph =
    op_table_tests(CASES)``.
    """
    import pytest

    from tapeflow.graph.function import function

    ids = str

    @pytest.mark.parametrize("case", cases, ids=ids)
    def test_forward(case):
        check_forward(case)

    @pytest.mark.parametrize("case", [c for c in cases if c.grad], ids=ids)
    def test_gradient(case):
        check_case_grads(case)

    @pytest.mark.parametrize("case", [c for c in cases if c.torch_fn is not None], ids=ids)
    def test_vs_torch(case):
        check_torch(case, pytest.importorskip("torch"))

    @pytest.mark.parametrize("case", cases, ids=ids)
    def test_graph_matches_eager(case):
        check_graph(case, function)

    return test_forward, test_gradient, test_vs_torch, test_graph_matches_eager
