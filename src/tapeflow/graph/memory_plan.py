"""The static memory plan of a compiled graph: each buffer's lifetime and the peak, before the
graph runs (``concrete.memory_plan()``).

The executor decides every allocation ahead of time: which node makes a new array, which writes
into a dying input (``out=``), which returns a view of its input (``Op.output``), and where each
value is deleted (``del`` after its last use). Replaying those decisions over the static
shapes gives the bytes alive after each line. Inputs and variable values exist before the call
and are not counted; a variable read aliases its value; values returned stay alive to the end.
Not modelled: a kernel's own temporaries while it runs and values whose shape is unknown until
run time (listed as such); with the inter-op worker, lines may overlap (the plan follows the
calling thread's order).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Step:
    """One generated line: its node, argument and output names, the argument whose buffer the
    output takes over (``out=``), and the names deleted after it."""

    node: object
    args: list[str]
    outs: list[str]
    into: str | None
    dead: list[str]
    ufunc: bool  # runs as one NumPy ufunc call


@dataclass
class Buffer:
    name: str  # the value that allocated it
    op: str
    nbytes: int | None  # None: shape unknown until run time
    start: int  # the line (step) that allocates it
    end: int | None = None  # the step after which it is freed (None: returned, alive at the end)
    names: set[str] = field(default_factory=set)


class MemoryPlan:
    """Buffers with their lifetimes, the bytes alive after each step, and the peak."""

    def __init__(self, steps: list[Step], params: list[str], final: set[str], name: str):
        self.name = name
        self.buffers: list[Buffer] = []
        self.live_after: list[int] = []
        owner: dict[str, Buffer | None] = dict.fromkeys(params)  # None: not ours (inputs)
        last_read = {a: i for i, s in enumerate(steps) for a in s.args}
        live = 0
        for i, s in enumerate(steps):
            op = s.node.op
            for k, (out, t) in enumerate(zip(s.outs, s.node.outputs)):
                if k == 0 and s.into is not None:
                    owner[out] = owner.get(s.into)
                elif op.output in ("view", "input") and s.args:
                    owner[out] = owner.get(s.args[0])
                elif op.variable is not None or (op.stateful and "var" in s.node.attrs):
                    owner[out] = None  # a variable's value: held by the variable
                else:
                    n = t.shape.num_elements()
                    if n is not None:
                        n = op.allocates(s.node) if k == 0 and op.allocates else n * t.dtype.size
                    buf = Buffer(out, op.name, n, i)
                    self.buffers.append(buf)
                    owner[out] = buf
                    live += buf.nbytes or 0
                if owner[out] is not None:
                    owner[out].names.add(out)
            peak_here = live + _transient(s)
            for name in s.dead:
                buf = owner.pop(name, None)
                if buf is None:
                    continue
                buf.names.discard(name)
                if not buf.names:
                    buf.end = i
                    live -= buf.nbytes or 0
            for out in s.outs:  # outputs nobody reads are dropped at once
                buf = owner.get(out)
                if buf is not None and out not in final and last_read.get(out, -1) <= i:
                    buf.names.discard(out)
                    owner.pop(out)
                    if not buf.names:
                        buf.end = i
                        live -= buf.nbytes or 0
            self.live_after.append(peak_here)
        self.peak_bytes = max(self.live_after, default=0)
        self.peak_step = self.live_after.index(self.peak_bytes) if self.live_after else None
        self.unknown = [b for b in self.buffers if b.nbytes is None]

    def __str__(self) -> str:
        lines = [f"memory plan of {self.name}: predicted peak {_mb(self.peak_bytes)} at step "
                 f"{self.peak_step} of {len(self.live_after)} (inputs and variables excluded)",
                 f"  {'buffer':<12} {'op':<28} {'bytes':>12} {'lifetime':>12}"]
        for b in self.buffers:
            end = "end" if b.end is None else str(b.end)
            size = "?" if b.nbytes is None else f"{b.nbytes:,}"
            lines.append(f"  {b.name:<12} {b.op:<28} {size:>12} {f'{b.start}..{end}':>12}")
        if self.unknown:
            lines.append(f"  {len(self.unknown)} buffers have a run-time shape (not counted)")
        return "\n".join(lines)


def _transient(s: Step) -> int:
    """Bytes a line holds only while it runs: the op's declared workspace, or the iteration
    buffer NumPy gives a ufunc whose array operand is broadcast (np.getbufsize() elements)."""
    if s.node.op.workspace is not None:
        return s.node.op.workspace(s.node)
    out = s.node.outputs[0] if s.node.outputs else None
    if s.ufunc and out is not None and out.shape.is_fully_defined():
        n = out.shape.num_elements()
        for t in s.node.inputs:
            size = t.shape.num_elements()
            if size is not None and 1 < size < n:
                return min(n, np.getbufsize()) * out.dtype.size
    return 0


def _mb(n: int) -> str:
    return f"{n / 1e6:.3f} MB ({n:,} bytes)"
