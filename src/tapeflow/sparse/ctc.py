"""Connectionist temporal classification: ``tf.nn.ctc_loss`` (dense or sparse labels),
``ctc_beam_search_decoder`` and ``ctc_unique_labels`` (TensorFlow's semantics).

The loss is one primitive whose kernel runs the forward-backward recursion in log space (float64)
and returns the per-sequence loss together with its gradient with respect to the logits, as
TensorFlow's own CTC kernels do; the gradient rule scales that saved gradient by the incoming
one (so, as in TensorFlow, the loss has no second derivative)."""

from __future__ import annotations

import heapq
from typing import Any

import numpy as np

from tapeflow._api import export
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework.dispatch import apply, op
from tapeflow.ops import array_ops, math_ops
from tapeflow.ops.array_ops import _tensor
from tapeflow.sparse.tensor import SparseTensor

_NEG = -np.inf


def _logsumexp(*terms):
    stacked = np.stack(terms)
    top = np.max(stacked, axis=0)
    safe = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        return safe + np.log(np.sum(np.exp(stacked - safe), axis=0))


def _log_softmax(x):
    top = np.max(x, axis=-1, keepdims=True)
    shifted = x - top
    return shifted - np.log(np.sum(np.exp(shifted), axis=-1, keepdims=True))


def _extended(labels, label_length, blank):
    """Labels with blanks around and between them ([batch, 2L+1]), the mask of states that
    exist per sequence, and where the skip transition s-2 -> s is allowed."""
    batch, max_len = labels.shape
    ext = np.full((batch, 2 * max_len + 1), blank, np.int64)
    ext[:, 1::2] = labels
    states = 2 * label_length.astype(np.int64) + 1
    valid = np.arange(ext.shape[1])[None, :] < states[:, None]
    skip = np.zeros(ext.shape, bool)
    skip[:, 2:] = (ext[:, 2:] != blank) & (ext[:, 2:] != ext[:, :-2])
    return ext, valid, skip, states


def _ctc_rule(logits, labels, label_length, logit_length, *, blank):
    return [((logits[0][1] if logits[0] is not None else None,), logits[1]), logits]


@op("CTCLossDense", multi_output=True, shape=_ctc_rule)
def _ctc_loss(logits, labels, label_length, logit_length, *, blank):
    """(negative log-likelihood per sequence, its gradient w.r.t. logits) for time-major
    logits [time, batch, classes] and padded labels [batch, max_label_length]."""
    time, batch, classes = logits.shape
    lp = _log_softmax(logits.astype(np.float64))
    ext, valid, skip, states = _extended(labels, label_length, blank)
    lengths = logit_length.astype(np.int64)
    rows = np.arange(batch)[:, None]
    emit = np.full((time, batch, ext.shape[1]), _NEG)
    for t in range(time):
        emit[t] = np.where(valid & (t < lengths[:, None]), lp[t][rows, ext], _NEG)
    alpha = np.full(emit.shape, _NEG)
    alpha[0, :, :2] = emit[0, :, :2]
    for t in range(1, time):
        prev = alpha[t - 1]
        one = np.concatenate([np.full((batch, 1), _NEG), prev[:, :-1]], axis=1)
        two = np.concatenate([np.full((batch, 2), _NEG), prev[:, :-2]], axis=1)
        alpha[t] = _logsumexp(prev, one, np.where(skip, two, _NEG)) + emit[t]
        alpha[t] = np.where(t < lengths[:, None], alpha[t], _NEG)
    beta = np.full(emit.shape, _NEG)
    last = np.arange(ext.shape[1])[None, :] >= (states - 2)[:, None]
    for t in range(time - 1, -1, -1):
        if t + 1 < time:
            nxt = beta[t + 1]
            one = np.concatenate([nxt[:, 1:], np.full((batch, 1), _NEG)], axis=1)
            two = np.concatenate([np.where(skip, nxt, _NEG)[:, 2:], np.full((batch, 2), _NEG)],
                                 axis=1)
            beta[t] = _logsumexp(nxt, one, two) + emit[t]
        start = (t == lengths - 1)[:, None] & last & valid
        beta[t] = np.where(start, emit[t], beta[t])
    end = np.maximum(lengths - 1, 0)
    final = alpha[end, np.arange(batch)]
    ends = np.where(last & valid, final, _NEG)
    log_lik = _logsumexp(*ends.T) if ends.shape[1] else np.full(batch, _NEG)
    log_lik = np.where(lengths > 0, log_lik, np.where(label_length == 0, 0.0, _NEG))
    with np.errstate(invalid="ignore"):
        post = np.exp(alpha + beta - emit - log_lik[None, :, None])
    post = np.where(np.isfinite(emit), post, 0.0)
    occupancy = np.zeros((time, batch, classes))
    t_idx, b_idx = np.meshgrid(np.arange(time), np.arange(batch), indexing="ij")
    for s in range(ext.shape[1]):
        np.add.at(occupancy, (t_idx, b_idx, np.broadcast_to(ext[:, s], (time, batch))),
                  post[:, :, s])
    grad = np.exp(lp) - occupancy
    grad *= (np.arange(time)[:, None] < lengths[None, :])[:, :, None]
    return (-log_lik).astype(logits.dtype), grad.astype(logits.dtype)


@_ctc_loss.def_grad
def _(g, out, logits, labels, label_length, logit_length, *, blank):
    return (array_ops.reshape(g[0], [1, -1, 1]) * out[1], None, None, None)


def _row_lengths(sparse: SparseTensor) -> Any:
    """Per row of a [batch, max_len] SparseTensor, how many values it holds."""
    from tapeflow.ops import segment_ops

    rows = math_ops.cast(sparse.indices[:, 0], _dtypes.int32)
    ones = array_ops.ones_like(rows)
    return segment_ops.unsorted_segment_sum(ones, rows, math_ops.cast(
        sparse.dense_shape[0], _dtypes.int32))


@export("nn.ctc_loss")
def ctc_loss(labels: Any, logits: Any, label_length: Any, logit_length: Any,
             logits_time_major: bool = True, unique: Any = None, blank_index: int | None = None,
             name: str | None = None) -> Any:
    """Negative log-probability of each label sequence under CTC ([batch]). Dense labels
    [batch, max_label_length] use `label_length` and blank 0 by default; SparseTensor labels
    need `blank_index` (negative counts from the end)."""
    from tapeflow.sparse.ops import to_dense

    logits = _tensor(logits)
    if not logits_time_major:
        logits = array_ops.transpose(logits, [1, 0, 2])
    classes = logits.shape[-1]
    sparse = isinstance(labels, SparseTensor)
    if sparse:
        if blank_index is None:
            raise ValueError("ctc_loss: argument `blank_index` must be provided when `labels` "
                             "is a SparseTensor.")
        label_length = _row_lengths(labels)
        labels = to_dense(labels)
    elif blank_index is None:
        blank_index = 0
    blank = int(blank_index) + (classes if int(blank_index) < 0 else 0)
    if not 0 <= blank < classes:
        raise ValueError(f"ctc_loss: blank_index {blank_index} is out of range for "
                         f"{classes} classes")
    orig = logits.dtype
    if orig in (_dtypes.float16, _dtypes.bfloat16):
        logits = math_ops.cast(logits, _dtypes.float32)
    labels = math_ops.cast(_tensor(labels), _dtypes.int64)
    # TF moves the blank to class 0 (dense) or to the last class (sparse) and renumbers the
    # labels around it; doing the same keeps its answers for labels that equal the blank
    target = classes - 1 if sparse else 0
    if blank != target:
        parts = [logits[:, :, :blank], logits[:, :, blank + 1:]]
        blank_col = logits[:, :, blank:blank + 1]
        logits = array_ops.concat(parts + [blank_col] if sparse else [blank_col] + parts, 2)
        labels = math_ops.where(labels < blank, labels if sparse else labels + 1,
                                 labels - 1 if sparse else labels)
    loss, _ = apply(_ctc_loss, logits, labels,
                    math_ops.cast(_tensor(label_length), _dtypes.int64),
                    math_ops.cast(_tensor(logit_length), _dtypes.int64), blank=target)
    return math_ops.cast(loss, orig) if orig != logits.dtype else loss


@op("CTCUniqueLabels", multi_output=True, shape=lambda labels: [
    (labels[0], _dtypes.int64), (labels[0], _dtypes.int32)])
def _unique_labels(labels):
    batch, width = labels.shape
    out = np.zeros(labels.shape, np.int64)
    idx = np.zeros(labels.shape, np.int32)
    for b in range(batch):
        seen: dict = {}
        for i, v in enumerate(labels[b]):
            idx[b, i] = seen.setdefault(v, len(seen))
        out[b, :len(seen)] = list(seen)
    return out, idx


@export("nn.ctc_unique_labels")
def ctc_unique_labels(labels: Any, name: str | None = None) -> tuple:
    """Per row of [batch, max_len] labels: the unique labels in first-seen order (padded with
    0) and each label's index in them: the `unique` argument of ctc_loss."""
    return tuple(apply(_unique_labels, _tensor(labels)))


def _beam_search(lp, top_paths, beam_width):
    """Prefix beam search over one sequence's log-probabilities [time, classes] (blank: the
    last class, repeats merged only across a blank, as TF's decoder with merge_repeated=False
    scores its beams). Returns the top paths and their log-probabilities."""
    blank = lp.shape[1] - 1
    def add(into, prefix, pb, pnb):
        ob, onb = into.get(prefix, (_NEG, _NEG))
        into[prefix] = (np.logaddexp(ob, pb), np.logaddexp(onb, pnb))

    beams = {(): (0.0, _NEG)}  # prefix -> (log p ending in blank, log p ending in a label)
    for t in range(lp.shape[0]):
        nxt: dict = {}
        for prefix, (pb, pnb) in beams.items():
            total = np.logaddexp(pb, pnb)
            add(nxt, prefix, total + lp[t, blank], _NEG)
            for c in range(blank):
                if prefix and prefix[-1] == c:
                    add(nxt, prefix, _NEG, pnb + lp[t, c])
                    add(nxt, prefix + (c,), _NEG, pb + lp[t, c])
                else:
                    add(nxt, prefix + (c,), _NEG, total + lp[t, c])
        beams = dict(heapq.nlargest(beam_width, nxt.items(),
                                    key=lambda kv: np.logaddexp(*kv[1])))
    best = heapq.nlargest(top_paths, beams.items(), key=lambda kv: np.logaddexp(*kv[1]))
    return [list(p) for p, _ in best], [float(np.logaddexp(*s)) for _, s in best]


def _beam_rule(logits, lengths, *, beam_width, top_paths):
    out = []
    for _ in range(top_paths):
        out += [((None, 2), _dtypes.int64), ((None,), _dtypes.int64), ((2,), _dtypes.int64)]
    return out + [((logits[0][1] if logits[0] else None, top_paths), logits[1])]


@op("CTCBeamSearchDecoder", multi_output=True, shape=_beam_rule)
def _ctc_beam(logits, lengths, *, beam_width, top_paths):
    batch = logits.shape[1]
    lp = _log_softmax(logits.astype(np.float64))
    paths, scores = [], np.zeros((batch, top_paths))
    for b in range(batch):
        found, score = _beam_search(lp[:int(lengths[b]), b], top_paths, beam_width)
        paths.append(found)
        scores[b, :len(score)] = score
    out = []
    for k in range(top_paths):
        indices, values, width = [], [], 0
        for b in range(batch):
            path = paths[b][k] if k < len(paths[b]) else []
            indices += [[b, i] for i in range(len(path))]
            values += path
            width = max(width, len(path))
        out += [np.asarray(indices, np.int64).reshape(-1, 2), np.asarray(values, np.int64),
                np.asarray([batch, width], np.int64)]
    return tuple(out) + (scores.astype(logits.dtype),)


@export("nn.ctc_beam_search_decoder")
def ctc_beam_search_decoder(inputs: Any, sequence_length: Any, beam_width: int = 100,
                            top_paths: int = 1) -> tuple:
    """([top_paths decoded SparseTensors], log-probabilities [batch, top_paths]) of
    [time, batch, classes] logits by prefix beam search; the blank is the last class."""
    if top_paths > beam_width:
        raise ValueError(f"ctc_beam_search_decoder: top_paths ({top_paths}) must be at most "
                         f"beam_width ({beam_width})")
    outs = apply(_ctc_beam, _tensor(inputs), _tensor(sequence_length),
                 beam_width=int(beam_width), top_paths=int(top_paths))
    decoded = [SparseTensor(*outs[3 * k:3 * k + 3]) for k in range(top_paths)]
    return decoded, outs[-1]
