"""The ``tf.nn`` functions that return or take SparseTensors: ctc_greedy_decoder,
embedding_lookup_sparse, safe_embedding_lookup_sparse (TensorFlow's semantics)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tapeflow._api import export
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework.dispatch import apply, op
from tapeflow.ops import array_ops, gather_ops, math_ops, reduce_ops, segment_ops
from tapeflow.ops.array_ops import _tensor
from tapeflow.sparse.tensor import SparseTensor


@op("CTCGreedyDecoder", multi_output=True, shape=lambda logits, lengths, *, merge, blank: [
    ((None, 2), _dtypes.int64), ((None,), _dtypes.int64), ((2,), _dtypes.int64),
    ((None, 1), logits[1])])
def _ctc_greedy(logits, lengths, *, merge, blank):
    time, batch, classes = logits.shape
    blank = classes - 1 if blank is None else blank
    best = np.argmax(logits, axis=-1)
    score = np.zeros((batch, 1), logits.dtype)
    indices, values, width = [], [], 0
    for b in range(batch):
        n = int(lengths[b])
        score[b, 0] = -np.sum(np.max(logits[:n, b], axis=-1))
        decoded, prev = [], None
        for t in range(n):
            label = int(best[t, b])
            if label != blank and not (merge and label == prev):
                decoded.append(label)
            prev = label
        indices += [[b, i] for i in range(len(decoded))]
        values += decoded
        width = max(width, len(decoded))
    return (np.asarray(indices, np.int64).reshape(-1, 2), np.asarray(values, np.int64),
            np.asarray([batch, width], np.int64), score)


@export("nn.ctc_greedy_decoder")
def ctc_greedy_decoder(inputs: Any, sequence_length: Any, merge_repeated: bool = True,
                       blank_index: int | None = None) -> tuple:
    """([decoded SparseTensor], negative sum of the best logits) of [time, batch, classes]
    logits: the best class each step, repeats merged, blanks (the last class) dropped."""
    indices, values, shape, score = apply(
        _ctc_greedy, _tensor(inputs), _tensor(sequence_length), merge=bool(merge_repeated),
        blank=None if blank_index is None else int(blank_index))
    return [SparseTensor(indices, values, shape)], score


def _combine(rows: Any, segment: Any, weights: Any, combiner: str, count: Any) -> Any:
    """Rows summed per segment, weighted, and normalized as `combiner` says."""
    if weights is None:
        weights = array_ops.ones_like(segment, dtype=rows.dtype)
    w = math_ops.cast(weights, rows.dtype)
    weighted = rows * array_ops.expand_dims(w, -1)
    total = segment_ops.unsorted_segment_sum(weighted, segment, count)
    if combiner == "sum":
        return total
    if combiner == "mean":
        norm = segment_ops.unsorted_segment_sum(w, segment, count)
    elif combiner == "sqrtn":
        norm = math_ops.sqrt(segment_ops.unsorted_segment_sum(w * w, segment, count))
    else:
        raise ValueError(f"combiner must be one of 'mean', 'sqrtn' or 'sum', got {combiner!r}")
    return math_ops.divide_no_nan(total, array_ops.expand_dims(norm, -1))


@export("nn.embedding_lookup_sparse")
def embedding_lookup_sparse(params: Any, sp_ids: SparseTensor, sp_weights: Any,
                            combiner: str | None = None, max_norm: Any = None,
                            name: str | None = None, allow_fast_lookup: bool = False) -> Any:
    """Per row of sp_ids ([batch, ids]), the combination of its ids' embeddings: 'sum',
    'mean' (the default) or 'sqrtn', weighted by sp_weights' values when given."""
    from tapeflow.ops.matrix_ops import embedding_lookup

    combiner = combiner or "mean"
    rows = embedding_lookup(params, sp_ids.values, max_norm=max_norm)
    segment = sp_ids.indices[:, 0]
    count = reduce_ops.reduce_max(segment) + 1
    weights = None if sp_weights is None else sp_weights.values
    return _combine(rows, segment, weights, combiner, count)


@export("nn.safe_embedding_lookup_sparse")
def safe_embedding_lookup_sparse(embedding_weights: Any, sparse_ids: SparseTensor,
                                 sparse_weights: Any = None, combiner: str = "mean",
                                 default_id: Any = None, max_norm: Any = None,
                                 name: str | None = None,
                                 allow_fast_lookup: bool = False) -> Any:
    """embedding_lookup_sparse that drops negative ids (and non-positive weights) and gives
    empty rows the default_id's embedding (zeros when None), for every row of dense_shape."""
    from tapeflow.ops.matrix_ops import embedding_lookup
    from tapeflow.sparse import ops as sparse_ops

    keep = math_ops.greater_equal(sparse_ids.values, 0)
    if sparse_weights is not None:
        keep = math_ops.logical_and(keep, math_ops.greater(sparse_weights.values, 0))
    ids = sparse_ops.retain(sparse_ids, keep)
    weights = None if sparse_weights is None else sparse_ops.retain(sparse_weights, keep).values
    table = embedding_weights[0] if isinstance(embedding_weights, (list, tuple)) and len(
        embedding_weights) == 1 else embedding_weights
    rows = embedding_lookup(table, ids.values, max_norm=max_norm)
    segment = ids.indices[:, 0]
    count = sparse_ids.dense_shape[0]
    out = _combine(rows, segment, weights, combiner, count)
    if default_id is not None:
        present = segment_ops.unsorted_segment_sum(array_ops.ones_like(segment), segment, count)
        empty = array_ops.expand_dims(math_ops.equal(present, 0), -1)
        default = gather_ops.gather(_tensor(table), default_id)
        out = math_ops.where(empty, array_ops.zeros_like(out) + default, out)
    return out

