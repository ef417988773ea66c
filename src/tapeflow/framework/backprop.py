"""The one reverse-mode walker, shared by ``GradientTape.gradient`` and ``tf.gradients``.

Both differentiate a list of recorded applications in forward order: a tape's entries, or a
graph's nodes (``tf.gradients`` reads the graph itself, which records every op). Each step
hands its outputs' gradients to the op's gradient rule and adds what it returns into its
inputs' gradients. Gradient rules are written in tapeflow ops, so the walk runs eagerly or
emits backward nodes into the graph being built, and is itself recorded by any outer tape.

The few ops the walker and the tape need themselves (adding gradients, ones for the seed,
zeros for missing ones, a cast) belong to the op library, a layer above this one: it installs
them (``install``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from types import SimpleNamespace
from typing import Any


class Step:
    """One recorded application of an op's gradient rule: `keys` identify the inputs (ids),
    `outs` is the output (a tuple when `multi`), `out_keys` identify the outputs."""

    __slots__ = ("grad_fn", "attrs", "keys", "inputs", "outs", "out_keys", "multi")

    def __init__(self, grad_fn: Callable, attrs: dict, keys: list[int], inputs: Any, outs: Any,
                 out_keys: list[int], multi: bool):
        self.grad_fn = grad_fn
        self.attrs = attrs
        self.keys = keys
        self.inputs = inputs
        self.outs = outs
        self.out_keys = out_keys
        self.multi = multi


ops = SimpleNamespace(add=None, zeros_like=None, ones_like=None, zeros=None, cast=None,
                      slices=None, dense=None)

# Gradient rules that take a keyword-only ``needs`` (one bool per input): the walker passes it
# when some input gets no gradient (a constant, labels, a batch of data), so the rule skips
# computing it (the first layer's input gradient: a whole matrix product), as TensorFlow's eager
# rules skip ``skip_input_indices``. Registered by ``Op.def_grad``.
selective: set[Callable] = set()


def install(**fns: Callable) -> None:
    """Called by the op library (``tapeflow.ops``) with add (which also sums IndexedSlices),
    zeros_like, ones_like, zeros, cast, the IndexedSlices class (`slices`) and `dense`, which
    densifies one."""
    unknown = set(fns) - set(vars(ops))
    if unknown:
        raise TypeError(f"backprop.install: unknown ops {sorted(unknown)}")
    vars(ops).update(fns)


def accumulate(grads: dict[int, Any], key: int, g: Any) -> None:
    """Add gradient `g` into ``grads[key]``."""
    prev = grads.get(key)
    grads[key] = g if prev is None else ops.add(prev, g)


def relevant(steps: Iterable[Step], source_keys: set[int]) -> list[Step]:
    """The steps on some path from a source (forward reachability)."""
    reach = set(source_keys)
    kept = []
    for s in steps:
        for k in s.keys:
            if k in reach:
                kept.append(s)
                reach.update(s.out_keys)
                break
    return kept


def differentiable(t: Any) -> bool:
    d = t.dtype
    return d.is_floating or d.is_complex


def _first_uses(steps: list[Step], source_keys: set[int]) -> dict[int, list[int]]:
    """Step index -> the sources whose earliest use is that step (-1: used by none): once the
    backward walk has passed it, their gradients are final."""
    first: dict[int, int] = {}
    for i in reversed(range(len(steps))):
        for k in steps[i].keys:
            if k in source_keys:
                first[k] = i
    out: dict[int, list[int]] = {}
    for k in source_keys:
        out.setdefault(first.get(k, -1), []).append(k)
    return out


def backward(steps: list[Step], grads: dict[int, Any], source_keys: set[int],
             receives: set[int], on_final: Callable | None = None) -> dict[int, Any]:
    """Walk `steps` (forward order, see ``relevant``) backwards from `grads` (key -> gradient
    of the targets). An input gets a gradient only if its key is in `receives` (watched, or
    reachable from a source) and its dtype is differentiable. Gradients of intermediates are
    dropped once used; those of `source_keys` are kept. A gradient rule gets an IndexedSlices
    densified unless it is marked ``passes_slices`` (a variable read's); a multi-output rule
    marked ``takes_none`` gets None, not zeros, for outputs without a gradient (an LSTM's
    saved gates). `on_final(key, grad)` is called for each source as soon as no step left can
    add to its gradient (tf.distribute starts all-reducing finished gradients while the walk
    goes on). Returns `grads`."""
    def take(k: int) -> Any:
        return grads.get(k) if k in source_keys else grads.pop(k, None)

    final_after = _first_uses(steps, source_keys) if on_final is not None else {}
    for i in reversed(range(len(steps))):
        if final_after:
            for k in final_after.pop(i + 1, ()):
                on_final(k, grads.get(k))
        s = steps[i]
        if s.multi:
            gs = [take(k) for k in s.out_keys]
            if all(g is None for g in gs):
                continue
            none = getattr(s.grad_fn, "takes_none", False)
            gs = tuple((None if none else ops.zeros_like(o)) if g is None else ops.dense(g)
                       for g, o in zip(gs, s.outs))
        else:
            gs = take(s.out_keys[0])
            if gs is None:
                continue
            if type(gs) is ops.slices and not getattr(s.grad_fn, "passes_slices", False):
                gs = ops.dense(gs)
        fn = s.grad_fn
        if fn in selective:
            needs = tuple(k in receives and differentiable(x) for k, x in zip(s.keys, s.inputs))
            in_grads = (fn(gs, s.outs, *s.inputs, **s.attrs) if all(needs)
                        else fn(gs, s.outs, *s.inputs, needs=needs, **s.attrs))
        else:
            in_grads = fn(gs, s.outs, *s.inputs, **s.attrs)
        if len(s.inputs) == 1 and not isinstance(in_grads, (tuple, list)):
            in_grads = (in_grads,)
        for key, x, g in zip(s.keys, s.inputs, in_grads):
            if g is not None and key in receives and differentiable(x):
                accumulate(grads, key, g)
    for i in sorted(final_after, reverse=True):  # step 0's sources, and those no step used
        for k in final_after[i]:
            on_final(k, grads.get(k))
    return grads
