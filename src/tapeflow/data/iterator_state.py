"""What `tf.train.Checkpoint(iterator=it)` saves of a dataset iterator, and how it comes back.

The state is the iterator's position (elements handed out) plus everything random the pipeline
drew: a per-iterator seed for unseeded shuffles and samplers, and the epoch number every stage
of the pipeline drew (shuffles reshuffle, maps re-seed their random ops per epoch). Restoring
rebuilds the same pipeline with those draws and runs it forward to the saved position, so the
restored iterator yields exactly the elements the saved one still had to give, shuffle buffers
and parallel maps included, because they are refilled by the same computation. The cost is
recomputing the elements before the position (no element values are stored).

Pipelines whose order is not a function of these draws are refused when saving, with the stage
named: `deterministic=False` parallel stages (order follows thread timing) and `from_generator`
(a Python generator's state cannot be captured, as in TensorFlow).

The state travels in one fixed-size uint8 variable (a checkpoint holds variables of fixed shape):
a version byte, a length and a JSON text.
"""

from __future__ import annotations

import json
from collections import deque
from typing import Any

import numpy as np

from tapeflow.framework import errors

VERSION = 1
STATE_BYTES = 16384


def stages(root: Any) -> list:
    """The datasets of a pipeline in a fixed order (depth first through `_inputs`)."""
    out, seen, stack = [], set(), [root]
    while stack:
        ds = stack.pop()
        if id(ds) in seen:
            continue
        seen.add(id(ds))
        out.append(ds)
        stack.extend(reversed(getattr(ds, "_inputs", ())))
    return out


class Draws:
    """Records (and on restore replays) the epoch numbers stages draw, keyed by stage index."""

    def __init__(self, root: Any, seed: int, replay: dict | None = None,
                 salts: dict | None = None, seeds: dict | None = None):
        self.stages = stages(root)
        self.keys = {id(ds): i for i, ds in enumerate(self.stages)}
        self.seed = seed
        self.drawn: dict[int, list] = {}
        self.replay = {int(k): deque(_expand(v)) for k, v in (replay or {}).items()}
        self.salts = {int(k): v for k, v in (salts or {}).items()}
        self.seeds = {int(k): v for k, v in (seeds or {}).items()}
        for ds in self.stages:   # fixed now, so a state saved before a stage starts holds them
            if hasattr(ds, "_stage"):
                self.salt(ds)
            if hasattr(ds, "_seed"):
                self.stage_seed(ds, ds._seed)

    def reserve(self) -> dict:
        """Every epoch drawn so far plus, for stages that have not started yet, the one they
        will draw (taken now), as {stage: [epochs]}: all a restore needs to replay."""
        out = {}
        for key, ds in enumerate(self.stages):
            if not hasattr(ds, "_epochs"):
                continue
            pending = self.replay.setdefault(key, deque())
            if key not in self.drawn and not pending:
                pending.append(ds._epochs.next())
            out[key] = self.drawn.get(key, []) + list(pending)
        return out

    def salt(self, dataset: Any) -> int:
        """A map stage's seed salt: the saved one on restore (a rebuilt pipeline draws anew)."""
        key = self.keys.get(id(dataset))
        if key is None:
            return dataset._stage
        return self.salts.setdefault(key, dataset._stage)

    def epoch(self, dataset: Any) -> int:
        key = self.keys.get(id(dataset))
        if key is None:             # a dataset made while iterating (inside interleave)
            return dataset._epochs.next()
        pending = self.replay.get(key)
        if pending:
            value = pending.popleft()
            dataset._epochs.at_least(value + 1)
        else:
            value = dataset._epochs.next()
        self.drawn.setdefault(key, []).append(value)
        return value

    def stage_seed(self, dataset: Any, seed: int | None) -> int | None:
        """A random stage's seed: the saved one on restore (a rebuilt pipeline resolves its
        seeds anew), else `seed`, else for an unseeded stage one derived from the iterator's."""
        key = self.keys.get(id(dataset))
        if key is None:
            return seed
        if seed is None:
            seed = hash((self.seed, key)) & (2**62 - 1)
        return self.seeds.setdefault(key, seed)


def _runs(values: list) -> list:
    """[start, count] runs of consecutive numbers (epochs drawn one after another)."""
    runs: list = []
    for v in values:
        if runs and runs[-1][0] + runs[-1][1] == v:
            runs[-1][1] += 1
        else:
            runs.append([v, 1])
    return runs


def _expand(runs: list) -> list:
    return [start + i for start, count in runs for i in range(count)]


def fingerprint(root: Any) -> list:
    return [type(ds).__name__ for ds in stages(root)]


def refuse_unrestorable(root: Any, options: Any) -> None:
    """Raise when the pipeline's remaining elements could not be reproduced on restore."""
    from tapeflow.data.sources import GeneratorDataset

    for ds in stages(root):
        name = type(ds).__name__
        if isinstance(ds, GeneratorDataset):
            raise errors.FailedPreconditionError(
                f"Cannot save the state of an iterator over from_generator({ds._name}): the "
                f"Python generator's position cannot be captured. Checkpoint the model only, "
                f"or build the input from files or tensors.")
        explicit = getattr(ds, "_deterministic", None)
        parallel = hasattr(ds, "_parallelism") or name.startswith("Parallel")
        if parallel and (explicit is False or (explicit is None
                                               and not options.is_deterministic)):
            raise errors.FailedPreconditionError(
                f"Cannot save the state of an iterator whose {name} runs with "
                f"deterministic=False: its order follows thread timing, so a restored iterator "
                f"could not give exactly the remaining elements.")


def encode(position: int, draws: Draws, root: Any) -> np.ndarray:
    text = json.dumps({"version": VERSION, "position": position, "seed": draws.seed,
                       "draws": {str(k): _runs(v) for k, v in draws.reserve().items()},
                       "salts": {str(k): v for k, v in draws.salts.items()},
                       "seeds": {str(k): v for k, v in draws.seeds.items()},
                       "stages": fingerprint(root)}).encode()
    if len(text) + 5 > STATE_BYTES:
        raise errors.FailedPreconditionError(
            f"The iterator state ({len(text)} bytes) exceeds {STATE_BYTES} bytes")
    out = np.zeros(STATE_BYTES, dtype=np.uint8)
    out[0] = VERSION
    out[1:5] = np.frombuffer(np.uint32(len(text)).tobytes(), np.uint8)
    out[5:5 + len(text)] = np.frombuffer(text, np.uint8)
    return out


def decode(value: np.ndarray, root: Any) -> dict:
    """The state dict from a checkpoint value, checked against the pipeline it restores."""
    raw = np.asarray(value, dtype=np.uint8).tobytes()
    if len(raw) != STATE_BYTES or raw[0] != VERSION:
        raise errors.DataLossError("The saved iterator state is corrupt or of another version")
    n = int(np.frombuffer(raw[1:5], np.uint32)[0])
    try:
        state = json.loads(raw[5:5 + n].decode())
    except (UnicodeDecodeError, ValueError):
        raise errors.DataLossError("The saved iterator state is corrupt") from None
    if state.get("stages") != fingerprint(root):
        raise errors.InvalidArgumentError(
            f"The saved iterator state belongs to a different pipeline: saved stages "
            f"{state.get('stages')}, this iterator's {fingerprint(root)}")
    return state
