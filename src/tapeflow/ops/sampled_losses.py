"""``tf.nn.sampled_softmax_loss`` and ``tf.nn.nce_loss``: a softmax (or per-class logistic
regression) over the true classes plus a few sampled ones instead of every class.

Both build the same logits, as TensorFlow documents them: each example's dot products with its
true classes' weight rows and with the shared sampled rows, plus biases; sampled candidates that
are also a true class get -FLT_MAX added (remove_accidental_hits); and log(expected count) is
subtracted from every logit (the sampling correction). Compositions of differentiable ops, so
gradients reach weights, biases and inputs; the sampled values are constants."""

from __future__ import annotations

from typing import Any

from tapeflow._api import export
from tapeflow.framework import dtypes as _dtypes
from tapeflow.ops import array_ops, math_ops, nn_ops, reduce_ops, scatter_ops
from tapeflow.ops.array_ops import _tensor
from tapeflow.ops.candidate_sampling import compute_accidental_hits, log_uniform_candidate_sampler
from tapeflow.ops.linalg_ops import matmul
from tapeflow.ops.matrix_ops import embedding_lookup


def _sampled_logits(weights: Any, biases: Any, labels: Any, inputs: Any, num_sampled: int,
                    num_classes: int, num_true: int, sampled_values: Any,
                    remove_accidental_hits: bool, seed: int | None) -> tuple:
    """(logits [batch, num_true + num_sampled], labels with 1/num_true on the true columns)."""
    inputs = _tensor(inputs)
    labels = math_ops.cast(_tensor(labels), _dtypes.int64)
    flat = array_ops.reshape(labels, [-1])
    if sampled_values is None:
        sampled_values = log_uniform_candidate_sampler(labels, num_true, num_sampled, True,
                                                       num_classes, seed=seed)
    sampled, true_count, sampled_count = (array_ops.stop_gradient(_tensor(v))
                                          for v in sampled_values)
    sampled = math_ops.cast(sampled, _dtypes.int64)
    all_ids = array_ops.concat([flat, sampled], 0)
    all_w = math_ops.cast(embedding_lookup(weights, all_ids), inputs.dtype)
    all_b = math_ops.cast(embedding_lookup(biases, all_ids), inputs.dtype)
    # the true rows come first, then the num_sampled sampled ones (the batch may be unknown)
    true_w, sampled_w = array_ops.split(all_w, [-1, int(num_sampled)], 0)
    true_b, sampled_b = array_ops.split(all_b, [-1, int(num_sampled)], 0)
    dim = array_ops.shape(true_w)[1:2]
    true_w = array_ops.reshape(true_w, array_ops.concat([[-1, int(num_true)], dim], 0))
    true_logits = reduce_ops.reduce_sum(array_ops.expand_dims(inputs, 1) * true_w, -1)
    true_logits += array_ops.reshape(true_b, [-1, int(num_true)])
    sampled_logits = matmul(inputs, sampled_w, transpose_b=True) + sampled_b
    if remove_accidental_hits:
        rows, ids, hit = compute_accidental_hits(labels, sampled, num_true)
        where = array_ops.stack([math_ops.cast(rows, _dtypes.int64), ids], 1)
        shape = array_ops.stack([math_ops.cast(array_ops.shape(labels)[0], _dtypes.int64),
                                 math_ops.cast(int(num_sampled), _dtypes.int64)])
        sampled_logits += scatter_ops.scatter_nd(where, math_ops.cast(hit, inputs.dtype), shape)
    true_logits -= math_ops.log(math_ops.cast(true_count, inputs.dtype))
    sampled_logits -= math_ops.log(math_ops.cast(sampled_count, inputs.dtype))
    logits = array_ops.concat([true_logits, sampled_logits], 1)
    targets = array_ops.concat([array_ops.ones_like(true_logits) / float(num_true),
                                array_ops.zeros_like(sampled_logits)], 1)
    return logits, targets


@export("nn.sampled_softmax_loss")
def sampled_softmax_loss(weights: Any, biases: Any, labels: Any, inputs: Any, num_sampled: int,
                         num_classes: int, num_true: int = 1, sampled_values: Any = None,
                         remove_accidental_hits: bool = True, seed: int | None = None,
                         name: str = "sampled_softmax_loss") -> Any:
    """Per example ([batch]), softmax cross-entropy over the true and `num_sampled` sampled
    classes (log-uniform by default): a training-time stand-in for the full softmax."""
    logits, targets = _sampled_logits(weights, biases, labels, inputs, num_sampled,
                                      num_classes, num_true, sampled_values,
                                      remove_accidental_hits, seed)
    return nn_ops.softmax_cross_entropy_with_logits(
        labels=array_ops.stop_gradient(targets), logits=logits)


@export("nn.nce_loss")
def nce_loss(weights: Any, biases: Any, labels: Any, inputs: Any, num_sampled: int,
             num_classes: int, num_true: int = 1, sampled_values: Any = None,
             remove_accidental_hits: bool = False, name: str = "nce_loss") -> Any:
    """Per example ([batch]), noise-contrastive estimation: the summed logistic losses of the
    true classes (target 1/num_true) and the sampled ones (target 0)."""
    logits, targets = _sampled_logits(weights, biases, labels, inputs, num_sampled,
                                      num_classes, num_true, sampled_values,
                                      remove_accidental_hits, None)
    losses = nn_ops.sigmoid_cross_entropy_with_logits(labels=targets, logits=logits)
    return reduce_ops.reduce_sum(losses, 1)
