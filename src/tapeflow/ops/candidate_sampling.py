"""Candidate samplers (``tf.random.*_candidate_sampler``) and ``tf.nn.compute_accidental_hits``:
the negatives that sampled softmax and NCE train against.

Each sampler draws `num_sampled` classes from a distribution over [0, range_max) and reports the
expected number of times each true and sampled class would be drawn, as TensorFlow's range
samplers define it: p * num_sampled, or with `unique=True` 1 - (1 - p) ** num_tries where
num_tries counts every draw made until `num_sampled` distinct classes were found. The
distributions are TF's: uniform, log-uniform (Zipf) P(c) = log((c + 2) / (c + 1)) /
log(range_max + 1), a fixed unigram (weights ** distortion, reserved ids weigh 0, sharded by
id % num_shards), and a learned unigram (every class starts at weight 1 and each call adds 1 per
true class seen, after sampling). Seeds follow TF's stateful rules (a seeded sampler called again
continues its stream) but the draws are NumPy's, not TF's bits."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from tapeflow._api import export
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework.context import state as _state
from tapeflow.framework.dispatch import apply, op
from tapeflow.ops import math_ops
from tapeflow.ops.array_ops import _tensor
from tapeflow.ops.random_ops import make_generator

_learned_lock = threading.Lock()
_learned: dict = {}  # eager learned-unigram weights per sampler configuration (TF: per kernel)


class _Distribution:
    """Probabilities over [0, range_max) and how to draw from them."""

    def __init__(self, probs: np.ndarray, log_uniform: bool = False, weights: Any = None):
        self.probs = probs
        self.log_uniform = log_uniform
        self.weights = weights  # the learned unigram's counts, updated in place

    def draw(self, gen: np.random.Generator, n: int) -> np.ndarray:
        if self.weights is not None:
            self.probs = self.weights / self.weights.sum()
        if self.log_uniform:
            log_range = np.log1p(len(self.probs))
            v = np.floor(np.exp(gen.random(n) * log_range)).astype(np.int64) - 1
            return np.minimum(v, len(self.probs) - 1)
        if np.all(self.probs == self.probs[0]):
            return gen.integers(0, len(self.probs), n)
        return gen.choice(len(self.probs), n, p=self.probs)


def _expected(p: np.ndarray, num_sampled: int, num_tries: int) -> np.ndarray:
    if num_tries == num_sampled:
        return (p * num_sampled).astype(np.float32)
    return (-np.expm1(num_tries * np.log1p(-p))).astype(np.float32)


def _sampler_rule(true_classes, *, dist, num_sampled, unique, gen):
    sampled = ((num_sampled,), _dtypes.int64)
    return [sampled, (true_classes[0], _dtypes.float32), ((num_sampled,), _dtypes.float32)]


@op("CandidateSampler", random=True, multi_output=True, shape=_sampler_rule)
def _sample(true_classes, *, dist, num_sampled, unique, gen):
    """(sampled classes, expected counts of the true classes, of the sampled ones)."""
    true_classes = true_classes.astype(np.int64)
    range_max = len(dist.probs)
    if true_classes.size and (true_classes.min() < 0 or true_classes.max() >= range_max):
        raise ValueError(f"true_classes must lie in [0, {range_max}), got "
                         f"{true_classes.min()}..{true_classes.max()}")
    if unique:
        if num_sampled > np.count_nonzero(dist.probs):
            raise ValueError(f"unique sampling of {num_sampled} classes needs at least as many "
                             f"with nonzero probability ({np.count_nonzero(dist.probs)})")
        found: dict = {}
        tries = 0
        while len(found) < num_sampled:
            for v in dist.draw(gen, num_sampled - len(found)).tolist():
                tries += 1
                found.setdefault(v, None)
                if len(found) == num_sampled:
                    break
        sampled = np.fromiter(found, np.int64, num_sampled)
    else:
        tries = num_sampled
        sampled = dist.draw(gen, num_sampled).astype(np.int64)
    true_count = _expected(dist.probs[true_classes], num_sampled, tries)
    sampled_count = _expected(dist.probs[sampled], num_sampled, tries)
    if dist.weights is not None:
        np.add.at(dist.weights, true_classes.ravel(), 1.0)
    return sampled, true_count, sampled_count


def _run(true_classes: Any, num_true: int, num_sampled: int, unique: bool, dist: _Distribution,
         seed: int | None) -> tuple:
    classes = math_ops.cast(_tensor(true_classes), _dtypes.int64)
    if classes.shape.rank is not None and classes.shape.rank != 2:
        raise ValueError(f"true_classes must be [batch_size, num_true], got {classes.shape}")
    if classes.shape[-1] is not None and classes.shape[-1] != int(num_true):
        raise ValueError(f"true_classes has {classes.shape[-1]} columns but num_true is "
                         f"{num_true}")
    return tuple(apply(_sample, classes, dist=dist, num_sampled=int(num_sampled),
                       unique=bool(unique), gen=make_generator(seed)))


@export("random.uniform_candidate_sampler", "nn.uniform_candidate_sampler")
def uniform_candidate_sampler(true_classes: Any, num_true: int, num_sampled: int, unique: bool,
                              range_max: int, seed: int | None = None,
                              name: str | None = None) -> tuple:
    """(sampled_candidates, true_expected_count, sampled_expected_count), classes uniform."""
    return _run(true_classes, num_true, num_sampled, unique,
                _Distribution(np.full(int(range_max), 1.0 / int(range_max))), seed)


@export("random.log_uniform_candidate_sampler", "nn.log_uniform_candidate_sampler")
def log_uniform_candidate_sampler(true_classes: Any, num_true: int, num_sampled: int,
                                  unique: bool, range_max: int, seed: int | None = None,
                                  name: str | None = None) -> tuple:
    """As uniform_candidate_sampler with Zipf's P(c) = log((c+2)/(c+1)) / log(range_max+1):
    for classes numbered by decreasing frequency."""
    c = np.arange(int(range_max), dtype=np.float64)
    probs = np.log((c + 2.0) / (c + 1.0)) / np.log1p(int(range_max))
    return _run(true_classes, num_true, num_sampled, unique,
                _Distribution(probs, log_uniform=True), seed)


def _vocab_counts(vocab_file: str) -> list:
    """The last comma-separated column of each line of a vocabulary file (TF's format)."""
    with open(vocab_file, encoding="utf-8") as f:
        return [float(line.rsplit(",", 1)[-1]) for line in f.read().splitlines() if line]


@export("random.fixed_unigram_candidate_sampler", "nn.fixed_unigram_candidate_sampler")
def fixed_unigram_candidate_sampler(true_classes: Any, num_true: int, num_sampled: int,
                                    unique: bool, range_max: int, vocab_file: str = "",
                                    distortion: float = 1.0, num_reserved_ids: int = 0,
                                    num_shards: int = 1, shard: int = 0, unigrams: Any = (),
                                    seed: int | None = None, name: str | None = None) -> tuple:
    """Classes drawn with probability proportional to unigrams ** distortion (from `unigrams`
    or the last column of `vocab_file`); ids below num_reserved_ids are never drawn, and with
    num_shards > 1 only ids with id % num_shards == shard are kept."""
    if bool(vocab_file) == bool(len(unigrams)):
        raise ValueError("fixed_unigram_candidate_sampler: give exactly one of vocab_file and "
                         "unigrams")
    counts = _vocab_counts(vocab_file) if vocab_file else [float(u) for u in unigrams]
    ids = range(int(num_reserved_ids) + len(counts))
    weights = [0.0 if i < num_reserved_ids else counts[i - num_reserved_ids] ** distortion
               for i in ids if i % num_shards == shard]
    if len(weights) != int(range_max):
        raise ValueError(f"fixed_unigram_candidate_sampler: range_max ({range_max}) must equal "
                         f"the number of ids in this shard ({len(weights)})")
    w = np.asarray(weights, np.float64)
    return _run(true_classes, num_true, num_sampled, unique, _Distribution(w / w.sum()), seed)


@export("random.learned_unigram_candidate_sampler", "nn.learned_unigram_candidate_sampler")
def learned_unigram_candidate_sampler(true_classes: Any, num_true: int, num_sampled: int,
                                      unique: bool, range_max: int, seed: int | None = None,
                                      name: str | None = None) -> tuple:
    """Classes drawn in proportion to how often they were seen as true classes (each starts at
    1; a call counts its true classes after sampling). Eagerly the counts are kept per sampler
    configuration, as TF's cached kernel keeps them; a traced call keeps its own."""
    key = (int(range_max), int(num_true), int(num_sampled), bool(unique), seed)
    if _state.graph is None:
        with _learned_lock:
            weights = _learned.setdefault(key, np.ones(int(range_max)))
    else:
        weights = np.ones(int(range_max))
    return _run(true_classes, num_true, num_sampled, unique,
                _Distribution(weights / weights.sum(), weights=weights), seed)


@export("random.all_candidate_sampler", "nn.all_candidate_sampler")
def all_candidate_sampler(true_classes: Any, num_true: int, num_sampled: int, unique: bool,
                          seed: int | None = None, name: str | None = None) -> tuple:
    """Every class 0..num_sampled-1, each with expected count 1 (for testing)."""
    from tapeflow.ops import array_ops, creation_ops

    classes = _tensor(true_classes)
    sampled = creation_ops.range_(int(num_sampled), dtype=_dtypes.int64)
    return (sampled, array_ops.ones_like(classes, dtype=_dtypes.float32),
            array_ops.ones([int(num_sampled)], _dtypes.float32))


@op("ComputeAccidentalHits", multi_output=True, shape=lambda true, sampled, *, num_true: [
    ((None,), _dtypes.int32), ((None,), _dtypes.int64), ((None,), _dtypes.float32)])
def _accidental_hits(true, sampled, *, num_true):
    positions: dict = {}
    for j, s in enumerate(sampled.tolist()):
        positions.setdefault(s, []).append(j)
    rows, ids = [], []
    for i, row in enumerate(true.tolist()):
        for c in row:
            for j in positions.get(c, ()):
                rows.append(i)
                ids.append(j)
    return (np.asarray(rows, np.int32), np.asarray(ids, np.int64),
            np.full(len(rows), -np.finfo(np.float32).max, np.float32))


@export("nn.compute_accidental_hits")
def compute_accidental_hits(true_classes: Any, sampled_candidates: Any, num_true: int,
                            seed: int | None = None, name: str | None = None) -> tuple:
    """(row indices, sampled positions, weights -FLT_MAX) of every sampled candidate that is
    also one of its row's true classes: added to those logits, they drop out of the softmax."""
    return tuple(apply(_accidental_hits, math_ops.cast(_tensor(true_classes), _dtypes.int64),
                       math_ops.cast(_tensor(sampled_candidates), _dtypes.int64),
                       num_true=int(num_true)))
