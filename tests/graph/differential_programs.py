"""Random programs over the op library, run eagerly, traced with static shapes, traced with every
dimension unknown, and in PyTorch; values and gradients must agree.

Ops: elementwise math and activations, broadcasting binaries, matmul (with transposes) and
einsum, transpose, reshape, expand_dims, squeeze, seven reductions, gather, slicing, concat,
stack, pad, tile, broadcast_to, cumsum/cumprod, reverse, where, softmax/log_softmax,
l2_normalize and clip. A program is a list of steps over a pool of values that starts with the
inputs. The generator
knows every value's concrete shape, so it only draws steps that are valid; their parameters
(axes, permutations, shapes, indices) are Python constants, as in user code. The loss is
``reduce_sum(sin(last value))``; gradients are taken with ``unconnected_gradients=ZERO`` so an
input the result does not use gets zeros.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import strategies as st

import tapeflow as tf

Shape = tuple[int, ...]


@dataclass(frozen=True)
class Step:
    op: str
    args: tuple[int, ...]  # indices into the pool
    params: tuple[Any, ...] = ()

    def __repr__(self) -> str:
        return f"{self.op}{self.args}{self.params if self.params else ''}"


@dataclass(frozen=True)
class Program:
    shapes: tuple[Shape, ...]
    steps: tuple[Step, ...]
    seed: int

    def inputs(self) -> list[np.ndarray]:
        rng = np.random.default_rng(self.seed)
        return [rng.standard_normal(s) for s in self.shapes]


def _broadcast(a: Shape, b: Shape) -> Shape | None:
    out = []
    for x, y in zip((1,) * (len(b) - len(a)) + a, (1,) * (len(a) - len(b)) + b):
        if x != y and 1 not in (x, y):
            return None
        out.append(max(x, y))
    return tuple(out)


UNARY = ("tanh", "sigmoid", "sin", "square", "neg", "scale", "clip", "softmax", "log_softmax",
         "relu", "elu", "gelu", "softplus", "leaky_relu", "smooth_sqrt", "log1p_square", "erf",
         "exp_tanh")
BINARY = ("add", "sub", "mul", "maximum", "div", "squared_difference", "atan2", "pow")
REDUCTIONS = ("reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod",
              "reduce_logsumexp", "reduce_std")
# where these are not differentiable (ties, kinks, the std of one value) each framework has its
# own rule: with them, PyTorch's gradients are not compared (eager and graphs still are)
TIES = {"maximum", "clip", "reduce_max", "reduce_min", "relu", "leaky_relu", "reduce_std"}


def _draw_step(draw: Callable, shapes: list[Shape]) -> tuple[Step, Shape] | None:
    """One valid step on the current pool, with its output shape (None: try another op)."""
    n = len(shapes)
    kind = draw(st.sampled_from(
        ["unary", "binary", "matmul", "transpose", "reshape", "expand_dims", "squeeze",
         "reduce", "gather", "slice", "concat", "pad", "tile", "broadcast_to", "cumsum",
         "reverse", "where", "stack", "einsum", "l2_normalize"]))
    i = draw(st.integers(0, n - 1))
    s = shapes[i]
    r = len(s)
    if kind == "unary":
        op = draw(st.sampled_from(UNARY))
        if op in ("softmax", "log_softmax") and r == 0:
            return None
        return Step(op, (i,)), s
    if kind in ("binary", "where", "concat", "stack"):
        j = draw(st.integers(0, n - 1))
        t = shapes[j]
        if kind == "binary":
            out = _broadcast(s, t)
            return None if out is None else (Step(draw(st.sampled_from(BINARY)), (i, j)), out)
        if s != t and kind in ("where", "stack"):
            return None
        if kind == "where":
            return Step("where", (i, j)), s
        if kind == "stack":
            axis = draw(st.integers(0, r))
            return Step("stack", (i, j), (axis,)), s[:axis] + (2,) + s[axis:]
        if r == 0 or len(t) != r:
            return None
        axis = draw(st.integers(0, r - 1))
        if s[:axis] + s[axis + 1:] != t[:axis] + t[axis + 1:]:
            return None
        return Step("concat", (i, j), (axis,)), s[:axis] + (s[axis] + t[axis],) + s[axis + 1:]
    if kind == "einsum":  # a batched matmul spelt as an einsum over equal batch dims
        j = draw(st.integers(0, n - 1))
        t = shapes[j]
        if r < 2 or len(t) != r or s[:-2] != t[:-2] or s[-1] != t[-2]:
            return None
        return Step("einsum", (i, j)), s[:-1] + t[-1:]
    if kind == "matmul":
        j = draw(st.integers(0, n - 1))
        t = shapes[j]
        if r < 2 or len(t) < 2:
            return None
        ta, tb = draw(st.booleans()), draw(st.booleans())
        m, k = (s[-1], s[-2]) if ta else (s[-2], s[-1])
        k2, p = (t[-1], t[-2]) if tb else (t[-2], t[-1])
        batch = _broadcast(s[:-2], t[:-2])
        if k != k2 or batch is None:
            return None
        return Step("matmul", (i, j), (ta, tb)), batch + (m, p)
    if kind == "transpose":
        perm = tuple(draw(st.permutations(range(r))))
        return Step("transpose", (i,), (perm,)), tuple(s[p] for p in perm)
    if kind == "reshape":
        size = math.prod(s)
        d = draw(st.sampled_from([d for d in range(1, size + 1) if size % d == 0]))
        target = draw(st.sampled_from([(-1,), (-1, d), (d, -1), (1, -1, d)]))
        out = tuple(size // d if t == -1 and len(target) > 1 else (size if t == -1 else t)
                    for t in target)
        return Step("reshape", (i,), (target,)), out
    if kind == "expand_dims":
        axis = draw(st.integers(-r - 1, r))
        a = axis % (r + 1)
        return Step("expand_dims", (i,), (axis,)), s[:a] + (1,) + s[a:]
    if kind == "squeeze":
        ones = [a for a, d in enumerate(s) if d == 1]
        if not ones:
            return None
        axis = draw(st.sampled_from(ones))
        return Step("squeeze", (i,), (axis,)), s[:axis] + s[axis + 1:]
    if r == 0:
        return None
    axis = draw(st.integers(0, r - 1))
    rest = s[:axis] + s[axis + 1:]
    if kind == "reduce":
        op = draw(st.sampled_from(REDUCTIONS))
        keep = draw(st.booleans())
        return Step(op, (i,), (axis, keep)), (s[:axis] + (1,) + s[axis + 1:]) if keep else rest
    if kind == "gather":
        idx = tuple(draw(st.lists(st.integers(0, s[axis] - 1), min_size=1, max_size=4)))
        return Step("gather", (i,), (idx, axis)), s[:axis] + (len(idx),) + s[axis + 1:]
    if kind == "slice":
        b = draw(st.integers(0, s[axis] - 1))
        e = draw(st.integers(b + 1, s[axis]))
        return Step("slice", (i,), (axis, b, e)), s[:axis] + (e - b,) + s[axis + 1:]
    if kind == "pad":
        lo, hi = draw(st.integers(0, 2)), draw(st.integers(0, 2))
        return Step("pad", (i,), (axis, lo, hi)), s[:axis] + (s[axis] + lo + hi,) + s[axis + 1:]
    if kind == "tile":
        return Step("tile", (i,), (axis,)), s[:axis] + (2 * s[axis],) + s[axis + 1:]
    if kind == "broadcast_to":
        target = (2,) + tuple(3 if d == 1 and draw(st.booleans()) else d for d in s)
        return Step("broadcast_to", (i,), (target,)), target
    if kind == "cumsum":
        return Step(draw(st.sampled_from(["cumsum", "cumprod"])), (i,),
                    (axis, draw(st.booleans()))), s
    if kind == "l2_normalize":
        return Step("l2_normalize", (i,), (axis,)), s
    return Step("reverse", (i,), (axis,)), s


@st.composite
def programs(draw: Callable, max_steps: int = 6) -> Program:
    """A random valid program with two inputs of rank 0-4, dims 1-3 (1s make broadcasting)."""
    shapes = [tuple(draw(st.lists(st.integers(1, 3), min_size=0, max_size=4)))
              for _ in range(2)]
    pool = list(shapes)
    steps = []
    for _ in range(draw(st.integers(1, max_steps))):
        drawn = _draw_step(draw, pool)
        if drawn is None:
            continue
        step, out = drawn
        if math.prod(out) > 4096:
            continue
        steps.append(step)
        pool.append(out)
    if not steps:
        steps.append(Step("tanh", (0,)))
    if draw(st.integers(0, 7)) == 0:  # last: squeeze() leaves an unknown rank when relaxed
        steps.append(Step("squeeze", (len(pool) - 1,), (None,)))
    return Program(tuple(shapes), tuple(steps), draw(st.integers(0, 2**31 - 1)))


def _slice(x: Any, axis: int, b: int, e: int) -> Any:
    return x[(slice(None),) * axis + (slice(b, e),)]


def apply_tf(step: Step, a: Any, b: Any = None) -> Any:
    """One step in tapeflow (the same code runs eagerly and traced)."""
    op, p = step.op, step.params
    simple = {"tanh": tf.tanh, "sigmoid": tf.sigmoid, "sin": tf.sin, "square": tf.square,
              "neg": lambda x: -x, "scale": lambda x: x * 1.5,
              "clip": lambda x: tf.clip_by_value(x, -0.8, 0.8), "softmax": tf.nn.softmax,
              "log_softmax": tf.nn.log_softmax, "relu": tf.nn.relu, "elu": tf.nn.elu,
              "gelu": tf.nn.gelu, "softplus": tf.nn.softplus,
              "leaky_relu": lambda x: tf.nn.leaky_relu(x, 0.1),
              "smooth_sqrt": lambda x: tf.sqrt(x * x + 1.0),
              "log1p_square": lambda x: tf.math.log1p(x * x), "erf": tf.math.erf,
              "exp_tanh": lambda x: tf.exp(tf.tanh(x))}
    if op in simple:
        return simple[op](a)
    binary = {"add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y,
              "maximum": tf.maximum, "div": lambda x, y: x / (tf.abs(y) + 1.0),
              "where": lambda x, y: tf.where(x > 0, x, y),
              "squared_difference": tf.math.squared_difference, "atan2": tf.math.atan2,
              "pow": lambda x, y: tf.pow(tf.abs(x) + 1.0, tf.tanh(y))}
    if op in binary:
        return binary[op](a, b)
    if op == "einsum":
        return tf.einsum("...ij,...jk->...ik", a, b)
    if op == "l2_normalize":
        return tf.nn.l2_normalize(a, axis=p[0])
    if op == "reduce_std":
        return tf.math.reduce_std(a, axis=p[0], keepdims=p[1])
    if op == "matmul":
        return tf.matmul(a, b, transpose_a=p[0], transpose_b=p[1])
    if op == "stack":
        return tf.stack([a, b], axis=p[0])
    if op == "concat":
        return tf.concat([a, b], axis=p[0])
    if op in REDUCTIONS:
        return getattr(tf, op)(a, axis=p[0], keepdims=p[1])
    if op == "gather":
        return tf.gather(a, list(p[0]), axis=p[1])
    if op == "slice":
        return _slice(a, *p)
    if op == "pad":
        paddings = [[0, 0]] * p[0] + [[p[1], p[2]]] + [[0, 0]] * (len(a.shape) - p[0] - 1)
        return tf.pad(a, paddings)
    if op == "tile":
        return tf.tile(a, [2 if k == p[0] else 1 for k in range(len(a.shape))])
    if op in ("cumsum", "cumprod"):
        return getattr(tf.math, op)(a, axis=p[0], reverse=p[1])
    if op == "reverse":
        return tf.reverse(a, [p[0]])
    return getattr(tf, op)(a, *p)  # transpose, reshape, expand_dims, squeeze, broadcast_to


def apply_torch(step: Step, a: Any, b: Any = None) -> Any:
    """The same step in PyTorch."""
    import torch

    op, p = step.op, step.params
    simple = {"tanh": torch.tanh, "sigmoid": torch.sigmoid, "sin": torch.sin,
              "square": torch.square, "neg": torch.neg, "scale": lambda x: x * 1.5,
              "clip": lambda x: torch.clamp(x, -0.8, 0.8),
              "softmax": lambda x: torch.softmax(x, -1),
              "log_softmax": lambda x: torch.log_softmax(x, -1), "relu": torch.relu,
              "elu": torch.nn.functional.elu,
              "gelu": lambda x: torch.nn.functional.gelu(x, approximate="none"),
              "softplus": torch.nn.functional.softplus,
              "leaky_relu": lambda x: torch.nn.functional.leaky_relu(x, 0.1),
              "smooth_sqrt": lambda x: torch.sqrt(x * x + 1.0),
              "log1p_square": lambda x: torch.log1p(x * x), "erf": torch.erf,
              "exp_tanh": lambda x: torch.exp(torch.tanh(x))}
    if op in simple:
        return simple[op](a)
    binary = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "maximum": torch.maximum,
              "div": lambda x, y: x / (torch.abs(y) + 1.0),
              "where": lambda x, y: torch.where(x > 0, x, y),
              "squared_difference": lambda x, y: (x - y) ** 2, "atan2": torch.atan2,
              "pow": lambda x, y: torch.pow(torch.abs(x) + 1.0, torch.tanh(y))}
    if op in binary:
        return binary[op](a, b)
    if op == "einsum":
        return torch.einsum("...ij,...jk->...ik", a, b)
    if op == "l2_normalize":
        return a / torch.sqrt(torch.clamp((a * a).sum(p[0], keepdim=True), min=1e-12))
    if op == "matmul":
        return torch.matmul(a.transpose(-1, -2) if p[0] else a,
                            b.transpose(-1, -2) if p[1] else b)
    if op == "stack":
        return torch.stack([a, b], p[0])
    if op == "concat":
        return torch.cat([a, b], p[0])
    if op in REDUCTIONS:
        fn = {"reduce_sum": torch.sum, "reduce_mean": torch.mean, "reduce_max": torch.amax,
              "reduce_min": torch.amin, "reduce_prod": torch.prod,
              "reduce_logsumexp": torch.logsumexp,
              "reduce_std": lambda x, dim, keepdim: torch.std(x, dim, correction=0,
                                                              keepdim=keepdim)}[op]
        return fn(a, dim=p[0], keepdim=p[1])
    if op == "gather":
        return torch.index_select(a, p[1], torch.tensor(p[0]))
    if op == "slice":
        return _slice(a, *p)
    if op == "pad":
        pads = [0, 0] * (a.dim() - p[0] - 1) + [p[1], p[2]]
        return torch.nn.functional.pad(a, pads)
    if op == "tile":
        return a.repeat([2 if k == p[0] else 1 for k in range(a.dim())])
    if op in ("cumsum", "cumprod"):
        fn = getattr(torch, op)
        return torch.flip(fn(torch.flip(a, [p[0]]), p[0]), [p[0]]) if p[1] else fn(a, p[0])
    if op == "reverse":
        return torch.flip(a, [p[0]])
    if op == "transpose":
        return a.permute(p[0])
    if op == "reshape":
        return a.reshape(p[0])
    if op == "expand_dims":
        return a.unsqueeze(p[0])
    if op == "squeeze":
        return a.squeeze() if p[0] is None else a.squeeze(p[0])
    return a.expand(p[0])  # broadcast_to


def evaluate(program: Program, xs: list[Any], apply: Callable) -> Any:
    pool = list(xs)
    for step in program.steps:
        pool.append(apply(step, *(pool[k] for k in step.args)))
    return pool[-1]


def _cumprod_meets_a_zero(program: Program) -> bool:
    """True when a cumprod's input holds an exact 0 (a pad, a where): there TF's gradient rule,
    which tapeflow follows, divides by zero, and torch's does not, so only values compare."""
    pool = [tf.constant(x) for x in program.inputs()]
    for step in program.steps:
        args = [pool[k] for k in step.args]
        if step.op == "cumprod" and np.any(args[0].numpy() == 0):
            return True
        pool.append(apply_tf(step, *args))
    return False


def tf_value_and_grads(program: Program, xs: list[Any]) -> tuple[Any, list[Any]]:
    with tf.GradientTape() as tape:
        tape.watch(xs)
        out = evaluate(program, xs, apply_tf)
        loss = tf.reduce_sum(tf.sin(out))
    grads = tape.gradient(loss, xs, unconnected_gradients=tf.UnconnectedGradients.ZERO)
    return out, grads


def torch_value_and_grads(program: Program) -> tuple[np.ndarray, list[np.ndarray]]:
    import torch

    xs = [torch.tensor(x, requires_grad=True) for x in program.inputs()]
    out = evaluate(program, xs, apply_torch)
    loss = torch.sum(torch.sin(out))
    grads = torch.autograd.grad(loss, xs, allow_unused=True)
    return (out.detach().numpy(),
            [np.zeros(x.shape) if g is None else g.numpy() for x, g in zip(xs, grads)])


def run_modes(program: Program) -> dict[str, tuple[np.ndarray, list[np.ndarray]]]:
    """{mode: (value, grads)} for eager, static-shape and unknown-shape traces."""
    xs = [tf.constant(x) for x in program.inputs()]
    results = {}
    out, grads = tf_value_and_grads(program, xs)
    results["eager"] = out.numpy(), [g.numpy() for g in grads]
    for mode, spec in (("static", lambda s: list(s)), ("relaxed", lambda s: [None] * len(s))):
        signature = [tf.TensorSpec(spec(s), tf.float64) for s in program.shapes]
        fn = tf.function(lambda *a: tf_value_and_grads(program, list(a)),
                         input_signature=signature)
        out, grads = fn(*xs)
        results[mode] = out.numpy(), [g.numpy() for g in grads]
    return results


def _close(a: np.ndarray, b: np.ndarray) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and np.allclose(a, b, rtol=1e-9, atol=1e-9, equal_nan=True)


def mismatches(program: Program, with_torch: bool) -> list[str]:
    """What differs between the modes (empty when all agree)."""
    results = run_modes(program)
    if with_torch:
        value, grads = torch_value_and_grads(program)
        if TIES & {s.op for s in program.steps} or _cumprod_meets_a_zero(program):
            grads = results["eager"][1]  # compare values only
        results["torch"] = value, grads
    base_value, base_grads = results["eager"]
    found = []
    for mode, (value, grads) in results.items():
        if not _close(value, base_value):
            found.append(f"{mode} value differs from eager: shape {np.shape(value)} vs "
                         f"{np.shape(base_value)}, max diff "
                         f"{_maxdiff(value, base_value)}")
        for k, (g, e) in enumerate(zip(grads, base_grads)):
            if not _close(g, e):
                found.append(f"{mode} gradient of input {k} differs from eager: shape "
                             f"{np.shape(g)} vs {np.shape(e)}, max diff {_maxdiff(g, e)}")
    return found


def _maxdiff(a: Any, b: Any) -> Any:
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b)))) if np.shape(a) == np.shape(
        b) else "n/a"
