"""Dense attention layers: Attention (Luong-style dot product) and AdditiveAttention
(Bahdanau-style), as in Keras 2.

Both take ``[query, value]`` or ``[query, value, key]`` ([batch, Tq, dim], [batch, Tv, dim]),
score every query step against every key step, and return the softmax-weighted sum of the
values, [batch, Tq, dim]. ``mask=[query_mask, value_mask]`` ([batch, Tq], [batch, Tv], True =
keep): value steps that are masked out get -1e9 added to their scores; query steps that are
masked out give zero outputs. ``use_causal_mask=True`` lets query step i see value steps <= i.
"""

from __future__ import annotations

from typing import Any

import tapeflow as tf
from tapeflow.keras.engine.base_layer import Layer
from tapeflow.keras.layers.activation import large_negative
from tapeflow.keras.layers.utils import layer_error, static_shape


def causal_mask(query_length: Any, value_length: Any) -> Any:
    """[Tq, Tv] booleans, True where value step j <= query step i (lengths may be tensors)."""
    rows = tf.expand_dims(tf.range(query_length), 1)
    cols = tf.expand_dims(tf.range(value_length), 0)
    return tf.greater_equal(rows, cols)


class _DenseAttention(Layer):
    """The shared call: scores from the subclass, masks, softmax, dropout, weighted sum."""

    def __init__(self, dropout: float = 0.0, **kwargs: Any):
        super().__init__(**kwargs)
        if not 0.0 <= float(dropout) < 1.0:
            raise layer_error(f"{type(self).__name__}: `dropout` must be in [0, 1), got "
                             f"{dropout}")
        self.dropout = float(dropout)
        self.supports_masking = True

    def _scores(self, query: Any, key: Any) -> Any:
        """[batch, Tq, Tv] scores; each subclass defines its own (dot, additive)."""
        raise NotImplementedError(f"{type(self).__name__} must implement _scores(query, key)")

    def _check(self, inputs: Any, mask: Any) -> None:
        cls = type(self).__name__
        if not isinstance(inputs, (list, tuple)) or not 2 <= len(inputs) <= 3:
            raise layer_error(f"{cls} {self.name!r} must be called on a list [query, value] or "
                             f"[query, value, key], got {inputs!r}")
        shapes = [static_shape(x) for x in inputs]
        query, value, key = shapes[0], shapes[1], shapes[-1]
        where = f"{cls} {self.name!r}: query {tuple(query)}, value {tuple(value)}"
        if len(inputs) == 3:
            where += f", key {tuple(key)}"
        if len(query) < 3 or len(value) != len(query) or len(key) != len(query):
            raise layer_error(f"{where}: inputs must be [batch, steps, dim] tensors of one rank")
        if None not in (query[-1], key[-1]) and query[-1] != key[-1]:
            raise layer_error(f"{where}: the query and key last dims must be equal")
        if None not in (value[-2], key[-2]) and value[-2] != key[-2]:
            raise layer_error(f"{where}: value and key must have the same number of steps")
        if mask is None:
            return
        if not isinstance(mask, (list, tuple)) or not 2 <= len(mask) <= len(inputs):
            raise layer_error(f"{cls} {self.name!r}: `mask` must be a list [query_mask, "
                             f"value_mask], got {mask!r}")
        for name, m, shape in (("query_mask", mask[0], query), ("value_mask", mask[1], value)):
            if m is None:
                continue
            got = static_shape(tf.convert_to_tensor(m))
            if len(got) != len(shape) - 1 or any(None not in (a, b) and a != b
                                                 for a, b in zip(got, shape)):
                raise layer_error(f"{where}: {name} must have shape {tuple(shape[:-1])}, got "
                                 f"{tuple(got)}")

    def call(self, inputs: Any, mask: Any = None, training: Any = None,
             return_attention_scores: bool = False, use_causal_mask: bool = False):
        if any(isinstance(t, tf.RaggedTensor) for t in inputs):
            return self._call_ragged(inputs, mask, training, return_attention_scores,
                                     use_causal_mask)
        self._check(inputs, mask)
        query = tf.convert_to_tensor(inputs[0])
        value = tf.convert_to_tensor(inputs[1])
        key = tf.convert_to_tensor(inputs[2]) if len(inputs) > 2 else value
        scores = self._scores(query, key)  # [batch, Tq, Tv]
        query_mask, value_mask = (list(mask) + [None])[:2] if mask is not None else (None, None)
        keep = None
        if value_mask is not None:
            keep = tf.expand_dims(tf.cast(value_mask, tf.bool), -2)  # [batch, 1, Tv]
        if use_causal_mask:
            causal = causal_mask(_steps(query), _steps(value))
            keep = causal if keep is None else tf.logical_and(keep, causal)
        if keep is not None:
            scores = scores + (1.0 - tf.cast(keep, scores.dtype)) * large_negative(scores.dtype)
        weights = tf.nn.softmax(scores)
        used = weights
        if training and self.dropout > 0:
            used = tf.nn.dropout(weights, rate=self.dropout)
        result = tf.matmul(used, value)
        if query_mask is not None:
            result = result * tf.expand_dims(tf.cast(query_mask, result.dtype), -1)
        return (result, weights) if return_attention_scores else result

    def _call_ragged(self, inputs: Any, mask: Any, training: Any,
                     return_attention_scores: bool, use_causal_mask: bool) -> Any:
        """Ragged query/value: each query row attends to its own value row only (padded, with
        the row lengths as masks), and the output has the query's rows, as tf-keras gives."""
        if mask is not None:
            raise layer_error(f"{type(self).__name__} {self.name!r}: a mask cannot be given "
                              f"with RaggedTensor inputs (their row lengths are the mask)")
        dense, masks = [], []
        for t in inputs:
            if isinstance(t, tf.RaggedTensor):
                x = t.to_tensor()
                masks.append(tf.sequence_mask(t.row_lengths(), maxlen=tf.shape(x)[1]))
                dense.append(x)
            else:
                x = tf.convert_to_tensor(t)
                masks.append(tf.ones(tf.shape(x)[:2], tf.bool))
                dense.append(x)
        out = self.call(dense, mask=masks[:2], training=training,
                        return_attention_scores=return_attention_scores,
                        use_causal_mask=use_causal_mask)
        if not isinstance(inputs[0], tf.RaggedTensor):
            return out
        lengths = inputs[0].row_lengths()
        if return_attention_scores:
            return tf.RaggedTensor.from_tensor(out[0], lengths=lengths), out[1]
        return tf.RaggedTensor.from_tensor(out, lengths=lengths)

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """The output keeps the query's mask."""
        if mask is None or mask[0] is None:
            return None
        return tf.convert_to_tensor(mask[0])

    def compute_output_shape(self, input_shape: Any) -> tf.TensorShape:
        query = tf.TensorShape(input_shape[0]).as_list()
        value = tf.TensorShape(input_shape[1]).as_list()
        return tf.TensorShape(query[:-1] + value[-1:])

    def get_config(self) -> dict:
        return {**super().get_config(), "dropout": self.dropout}


def _steps(x: Any) -> Any:
    n = static_shape(x)[-2]
    return tf.shape(x)[-2] if n is None else n


class Attention(_DenseAttention):
    """Dot-product attention: scores = query . key (times a learned scalar `scale` if
    `use_scale`); ``score_mode='concat'`` scores sum(tanh(query + key)) instead."""

    def __init__(self, use_scale: bool = False, score_mode: str = "dot", **kwargs: Any):
        super().__init__(**kwargs)
        if score_mode not in ("dot", "concat"):
            raise layer_error(f"Attention: `score_mode` must be 'dot' or 'concat', got "
                             f"{score_mode!r}")
        self.use_scale, self.score_mode = bool(use_scale), score_mode

    def build(self, input_shape: Any) -> None:
        self.scale = None
        if self.use_scale:
            self.scale = self.add_weight("scale", shape=(), initializer="ones")
        self.concat_score_weight = None
        if self.score_mode == "concat":
            self.concat_score_weight = self.add_weight("concat_score_weight", shape=(),
                                                       initializer="ones")
        self.built = True

    def _scores(self, query: Any, key: Any) -> Any:
        if self.score_mode == "dot":
            scores = tf.matmul(query, key, transpose_b=True)
            return scores * self.scale if self.scale is not None else scores
        pairs = tf.expand_dims(query, -2) + tf.expand_dims(key, -3)  # [batch, Tq, Tv, dim]
        if self.scale is not None:
            pairs = pairs * self.scale
        return self.concat_score_weight * tf.reduce_sum(tf.tanh(pairs), axis=-1)

    def get_config(self) -> dict:
        return {**super().get_config(), "use_scale": self.use_scale,
                "score_mode": self.score_mode}


class AdditiveAttention(_DenseAttention):
    """Additive attention: scores = sum(scale * tanh(query + key)) over the features, with a
    learned per-feature `scale` (glorot_uniform) if `use_scale`."""

    def __init__(self, use_scale: bool = True, **kwargs: Any):
        super().__init__(**kwargs)
        self.use_scale = bool(use_scale)

    def build(self, input_shape: Any) -> None:
        self.scale = None
        if self.use_scale:
            shapes = list(input_shape) if isinstance(input_shape, (list, tuple)) else []
            dim = tf.TensorShape(shapes[1]).as_list()[-1] if len(shapes) > 1 else None
            if dim is None:
                raise layer_error(f"AdditiveAttention {self.name!r}: needs [query, value] with "
                                 f"a known last dim, got input shapes {input_shape}")
            self.scale = self.add_weight("scale", shape=(dim,), initializer="glorot_uniform")
        self.built = True

    def _scores(self, query: Any, key: Any) -> Any:
        pairs = tf.tanh(tf.expand_dims(query, -2) + tf.expand_dims(key, -3))
        if self.scale is not None:
            pairs = pairs * self.scale
        return tf.reduce_sum(pairs, axis=-1)

    def get_config(self) -> dict:
        return {**super().get_config(), "use_scale": self.use_scale}
