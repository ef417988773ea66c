"""MultiHeadAttention (Vaswani et al., 2017) with Keras 2's weights, names and masking.

Four EinsumDense sub-layers hold the weights, named as in Keras (``multi_head_attention/
query/kernel:0``): ``query``, ``key`` and ``value`` project [batch, seq, dim] to [batch, seq,
heads, key_dim] (kernel [dim, heads, key_dim], bias [heads, key_dim]); ``attention_output``
maps [batch, seq, heads, value_dim] back to [batch, seq, out] (kernel [heads, value_dim, out]).
The heads stay a separate axis throughout, so no reshape or transpose is needed: the score and
combine products are einsums, as are the projections.

The sub-layers are made on the first call, when the query, value and key shapes are all known
(a layer's ``build`` only sees its first input).
"""

from __future__ import annotations

import math
import string
from collections.abc import Sequence
from typing import Any

import tapeflow as tf
from tapeflow.keras import initializers, regularizers
from tapeflow.keras.engine.base_layer import Layer
from tapeflow.keras.layers.activation import Softmax
from tapeflow.keras.layers.attention import causal_mask
from tapeflow.keras.layers.core import Dropout
from tapeflow.keras.layers.einsum_dense import EinsumDense
from tapeflow.keras.layers.recurrent import _serialize
from tapeflow.keras.layers.utils import layer_error, static_shape

_LETTERS = string.ascii_lowercase


def projection_equation(free_dims: int, bound_dims: int, output_dims: int) -> tuple[str, str]:
    """(equation, bias axes) of a projection keeping `free_dims` axes, contracting
    `bound_dims` and adding `output_dims`: (2, 1, 2) -> ('abc,cde->abde', 'de')."""
    free = _LETTERS[:free_dims]
    bound = _LETTERS[free_dims:free_dims + bound_dims]
    new = _LETTERS[free_dims + bound_dims:free_dims + bound_dims + output_dims]
    return f"{free}{bound},{bound}{new}->{free}{new}", new


def attention_equations(rank: int, attention_axes: tuple[int, ...]) -> tuple[str, str, int]:
    """(score equation key,query->scores, combine equation scores,value->out, scores' rank)
    for projected tensors of `rank` (last axis the per-head features).

    Rank 4 over axis 1: 'aecd,abcd->acbe' and 'acbe,aecd->abcd': scores [batch, heads, T, S].
    """
    target = _LETTERS[:rank]
    batch = [i for i in range(rank - 1) if i not in attention_axes]  # includes the heads axis
    source, spare = "", iter(_LETTERS[rank:])
    for i in range(rank):
        source += target[i] if i in batch or i == rank - 1 else next(spare)
    product = ("".join(target[i] for i in batch) + "".join(target[i] for i in attention_axes)
               + "".join(source[i] for i in attention_axes))
    return f"{source},{target}->{product}", f"{product},{source}->{target}", len(product)


def _shape_list(shape: Any) -> list | None:
    return None if shape is None else tf.TensorShape(shape).as_list()


class MultiHeadAttention(Layer):
    """softmax(Q K^T / sqrt(key_dim)) V per head, with learned projections in and out.

    ``call(query, value, key=None, attention_mask=None, return_attention_scores=False,
    training=None, use_causal_mask=False)``: `key` defaults to `value`; `attention_mask`
    ([batch, T, S], 1 = attend) and the causal mask add -1e9 to the dropped scores before the
    softmax (a query row masked everywhere attends uniformly, as in Keras); dropout is applied
    to the attention probabilities in training. With `return_attention_scores` the call also
    returns the probabilities [batch, heads, T, S] (before dropout).
    """

    def __init__(self, num_heads: int, key_dim: int, value_dim: int | None = None,
                 dropout: float = 0.0, use_bias: bool = True, output_shape: Any = None,
                 attention_axes: Any = None, kernel_initializer: Any = "glorot_uniform",
                 bias_initializer: Any = "zeros", kernel_regularizer: Any = None,
                 bias_regularizer: Any = None, activity_regularizer: Any = None,
                 kernel_constraint: Any = None, bias_constraint: Any = None, **kwargs: Any):
        super().__init__(**kwargs)
        for arg, value in (("num_heads", num_heads), ("key_dim", key_dim),
                           ("value_dim", value_dim if value_dim else key_dim)):
            if not isinstance(value, int) or value <= 0:
                raise layer_error(f"MultiHeadAttention: `{arg}` must be a positive integer, "
                                 f"got {value!r}")
        if not 0.0 <= float(dropout) < 1.0:
            raise layer_error(f"MultiHeadAttention: `dropout` must be in [0, 1), got {dropout}")
        self.supports_masking = True
        self._num_heads, self._key_dim = num_heads, key_dim
        self._value_dim = value_dim if value_dim else key_dim
        self._dropout, self._use_bias = float(dropout), bool(use_bias)
        self._output_shape = output_shape
        if attention_axes is not None and not isinstance(attention_axes, Sequence):
            attention_axes = (attention_axes,)
        self._attention_axes = None if attention_axes is None else tuple(attention_axes)
        self._kernel_initializer = initializers.get(kernel_initializer)
        self._bias_initializer = initializers.get(bias_initializer)
        self._kernel_regularizer = regularizers.get(kernel_regularizer)
        self._bias_regularizer = regularizers.get(bias_regularizer)
        # Keras 2 gives the activity regularizer to the four projections, not to this layer.
        self._activity_regularizer = regularizers.get(activity_regularizer)
        self._kernel_constraint, self._bias_constraint = kernel_constraint, bias_constraint
        self._query_shape = self._key_shape = self._value_shape = None
        # assigned in this order so that `weights` lists query, key, value, output as Keras does
        self._query_dense = self._key_dense = self._value_dense = None
        self._output_dense = None
        self._built_from_signature = False

    @property
    def num_heads(self) -> int:
        return self._num_heads

    @property
    def key_dim(self) -> int:
        return self._key_dim

    @property
    def value_dim(self) -> int:
        return self._value_dim

    @property
    def dropout(self) -> float:
        return self._dropout

    @property
    def attention_axes(self) -> tuple | None:
        return self._attention_axes

    # --- building ----------------------------------------------------------------------------
    def _sublayer_kwargs(self) -> dict:
        """Each projection gets its own copy of the initializers (fresh draws from each)."""
        def fresh(init: Any) -> Any:
            return initializers.get(initializers.serialize(init)) \
                if isinstance(init, initializers.Initializer) else init

        return {"kernel_initializer": fresh(self._kernel_initializer),
                "bias_initializer": fresh(self._bias_initializer),
                "kernel_regularizer": self._kernel_regularizer,
                "bias_regularizer": self._bias_regularizer,
                "activity_regularizer": self._activity_regularizer,
                "kernel_constraint": self._kernel_constraint,
                "bias_constraint": self._bias_constraint, "dtype": self.dtype_policy}

    def _projection(self, name: str, shape: list, bound: int, features: Sequence) -> EinsumDense:
        equation, bias_axes = projection_equation(len(shape) - bound, bound, len(features))
        partial = [None] * (len(shape) - bound - 1) + list(features)
        layer = EinsumDense(equation, output_shape=partial, name=name,
                            bias_axes=bias_axes if self._use_bias else None,
                            **self._sublayer_kwargs())
        layer._maybe_build(_Shaped(shape))
        return layer

    def _build_from_signature(self, query: list, value: list, key: list | None) -> None:
        """Make the projections, softmax and dropout for these input shapes; runs in this
        layer's name scope (so the weights are named ``<this layer>/query/kernel:0``)."""
        key = value if key is None else key
        self._check_signature(query, value, key)
        self._query_shape, self._value_shape, self._key_shape = query, value, key
        self._query_dense = self._projection("query", query, 1, [self._num_heads, self._key_dim])
        self._key_dense = self._projection("key", key, 1, [self._num_heads, self._key_dim])
        self._value_dense = self._projection("value", value, 1,
                                             [self._num_heads, self._value_dim])
        rank = len(query) + 1  # the projected tensors have a heads axis
        axes = self._attention_axes
        axes = tuple(range(1, rank - 2)) if axes is None else tuple(a % (rank - 1) for a in axes)
        if any(not 0 < a < rank - 2 for a in axes):
            raise layer_error(f"MultiHeadAttention {self.name!r}: attention_axes "
                             f"{self._attention_axes} must be axes of the query {tuple(query)} "
                             "other than the batch and feature axes")
        self._attention_axes = axes
        self._score_equation, self._combine_equation, scores_rank = \
            attention_equations(rank, axes)
        self._softmax = Softmax(axis=tuple(range(scores_rank - len(axes), scores_rank)),
                                dtype=self.dtype_policy)
        self._dropout_layer = Dropout(rate=self._dropout, dtype=self.dtype_policy)
        out = self._output_shape
        out = [query[-1]] if not out else [out] if isinstance(out, int) else list(out)
        self._output_dense = self._projection("attention_output", query[:-1] +
                                              [self._num_heads, self._value_dim], 2, out)
        self._built_from_signature = True

    def _check_signature(self, query: list, value: list, key: list) -> None:
        where = (f"MultiHeadAttention {self.name!r}: query {tuple(query)}, value "
                 f"{tuple(value)}, key {tuple(key)}")
        if len(query) < 3 or len(value) != len(query) or len(key) != len(query):
            raise layer_error(f"{where}: query, value and key must have the same rank, at least "
                             "3 ([batch, seq, features])")
        for a, b in zip(key[:-1], value[:-1]):
            if None not in (a, b) and a != b:
                raise layer_error(f"{where}: key and value must have the same shape except "
                                 "for the last axis")
        for shape in (query, value, key):
            if shape[-1] is None:
                raise layer_error(f"{where}: the last (feature) axes must be known")

    def _check_built_for(self, query: list, value: list, key: list) -> None:
        """Calls after the first must bring the feature sizes the projections were made for."""
        for name, shape, built in (("query", query, self._query_shape),
                                   ("value", value, self._value_shape),
                                   ("key", key, self._key_shape)):
            if len(shape) != len(built) or shape[-1] not in (None, built[-1]):
                raise layer_error(f"MultiHeadAttention {self.name!r}: {name} has shape "
                                 f"{tuple(shape)}, but the layer was built for {name} "
                                 f"{tuple(built)} (last axis {built[-1]})")
        self._check_signature(query, value, key)

    # --- calling -----------------------------------------------------------------------------
    def call(self, query: Any, value: Any, key: Any = None, attention_mask: Any = None,
             return_attention_scores: bool = False, training: Any = None,
             use_causal_mask: bool = False):
        if any(isinstance(t, tf.RaggedTensor) for t in (query, value, key)):
            return self._call_ragged(query, value, key, attention_mask,
                                     return_attention_scores, training, use_causal_mask)
        attention_mask = _with_padding_masks(attention_mask, query, value, key)
        query = tf.convert_to_tensor(query)
        value = _like(value, query)
        key = value if key is None else _like(key, query)
        shapes = [static_shape(t) for t in (query, value, key)]
        if not self._built_from_signature:
            self._build_from_signature(*shapes)
        else:
            self._check_built_for(*shapes)
        mask = self._attention_mask(query, value, attention_mask, use_causal_mask)
        q = self._query_dense(query)  # [B, T, N, key_dim]
        k = self._key_dense(key)  # [B, S, N, key_dim]
        v = self._value_dense(value)  # [B, S, N, value_dim]
        q = q * (1.0 / math.sqrt(float(self._key_dim)))  # a Python float keeps q's dtype
        scores = tf.einsum(self._score_equation, k, q)  # [B, N, T, S]
        scores = self._softmax(scores, mask=mask)
        dropped = self._dropout_layer(scores, training=training)
        out = self._output_dense(tf.einsum(self._combine_equation, dropped, v))
        return (out, scores) if return_attention_scores else out

    def _call_ragged(self, query: Any, value: Any, key: Any, attention_mask: Any,
                     return_attention_scores: bool, training: Any,
                     use_causal_mask: bool) -> Any:
        """As tf-keras: ragged inputs are padded with zeros (the padding is not masked out of
        the attention) and a ragged query gives ragged outputs of its rows' lengths."""
        key = value if key is None else key
        lengths = query.row_lengths() if isinstance(query, tf.RaggedTensor) else None
        if lengths is not None:
            query = query.to_tensor()
        if isinstance(key, tf.RaggedTensor) and isinstance(value, tf.RaggedTensor):
            bound = tf.maximum(key.bounding_shape(), value.bounding_shape())
            key, value = key.to_tensor(shape=bound), value.to_tensor(shape=bound)
        elif isinstance(key, tf.RaggedTensor):
            key = key.to_tensor(shape=tf.shape(value))
        elif isinstance(value, tf.RaggedTensor):
            value = value.to_tensor(shape=tf.shape(key))
        out = self.call(query, value, key, attention_mask, return_attention_scores, training,
                        use_causal_mask)
        if lengths is None:
            return out
        if return_attention_scores:
            return tf.RaggedTensor.from_tensor(out[0], lengths=lengths), out[1]
        return tf.RaggedTensor.from_tensor(out, lengths=lengths)

    def _attention_mask(self, query: Any, value: Any, attention_mask: Any,
                        use_causal_mask: bool) -> Any:
        """The user's mask and the causal mask combined, shaped to broadcast over the scores
        (a heads axis inserted as Keras does), or None."""
        if use_causal_mask:
            causal = causal_mask(_length(query), _length(value))[None]  # [1, T, S]
            attention_mask = causal if attention_mask is None else tf.logical_and(
                tf.cast(attention_mask, tf.bool), causal)
        if attention_mask is None:
            return None
        mask = tf.convert_to_tensor(attention_mask)
        axes = self._attention_axes
        n = len(axes)
        q_shape, v_shape = static_shape(query), static_shape(value)
        expected = ([d for i, d in enumerate(q_shape[:-1]) if i not in axes] +
                    [q_shape[i] for i in axes] + [v_shape[i] for i in axes])
        mask_shape = static_shape(mask)
        lead = len(expected) - len(mask_shape)
        bad = lead < 0 or any(None not in (m, e) and m not in (1, e)
                              for m, e in zip(mask_shape, expected[lead:]))
        if bad or len(mask_shape) < 2 * n:
            raise layer_error(f"MultiHeadAttention {self.name!r}: attention_mask of shape "
                             f"{tuple(mask_shape)} does not broadcast to [batch, query axes, "
                             f"value axes] = {tuple(expected)} (query {tuple(q_shape)}, value "
                             f"{tuple(v_shape)})")
        for _ in range(len(expected) + 1 - len(mask_shape)):
            mask = tf.expand_dims(mask, axis=-2 * n - 1)  # the heads axis, then batch axes
        return mask

    # --- shapes and config -------------------------------------------------------------------
    def compute_output_shape(self, query_shape: Any, value_shape: Any = None,
                             key_shape: Any = None) -> tf.TensorShape:
        query = tf.TensorShape(query_shape).as_list()
        value = query if value_shape is None else tf.TensorShape(value_shape).as_list()
        self._check_signature(query, value, value if key_shape is None else
                              tf.TensorShape(key_shape).as_list())
        out = self._output_shape
        if out:
            return tf.TensorShape(query[:-1] + ([out] if isinstance(out, int) else list(out)))
        return tf.TensorShape(query)

    def get_config(self) -> dict:
        return {**super().get_config(), "num_heads": self._num_heads, "key_dim": self._key_dim,
                "value_dim": self._value_dim, "dropout": self._dropout,
                "use_bias": self._use_bias, "output_shape": self._output_shape,
                "attention_axes": self._attention_axes,
                "kernel_initializer": _serialize(self._kernel_initializer, initializers),
                "bias_initializer": _serialize(self._bias_initializer, initializers),
                "kernel_regularizer": _serialize(self._kernel_regularizer, regularizers),
                "bias_regularizer": _serialize(self._bias_regularizer, regularizers),
                "activity_regularizer": _serialize(self._activity_regularizer, regularizers),
                "kernel_constraint": self._kernel_constraint,
                "bias_constraint": self._bias_constraint,
                "query_shape": self._query_shape, "key_shape": self._key_shape,
                "value_shape": self._value_shape}

    @classmethod
    def from_config(cls, config: dict) -> MultiHeadAttention:
        """As Keras 2: a config with the input shapes comes back with its weights made."""
        config = dict(config)
        shapes = [_shape_list(config.pop(k, None))
                  for k in ("query_shape", "value_shape", "key_shape")]
        layer = cls(**config)
        if None not in shapes:
            with tf.name_scope(layer.name):
                layer._build_from_signature(*shapes)
            layer.built = True
        return layer


class _Shaped:
    """A stand-in with only a `.shape`, for building a sub-layer from a shape alone."""

    def __init__(self, shape: list):
        self.shape = tf.TensorShape(shape)


def _length(x: Any) -> Any:
    """The sequence length of [batch, seq, ...]: static where known, else run time."""
    n = static_shape(x)[1]
    return tf.shape(x)[1] if n is None else n


def _like(x: Any, query: Any) -> Any:
    """`x` as a tensor, floats cast to the query's dtype (the layer casts only its first input)."""
    x = tf.convert_to_tensor(x)
    return tf.cast(x, query.dtype) if x.dtype.is_floating and x.dtype != query.dtype else x


def _with_padding_masks(attention_mask: Any, query: Any, value: Any, key: Any) -> Any:
    """`attention_mask` combined with the ``_keras_mask`` padding masks of query ([B, T, 1])
    and value/key ([B, 1, S]), as Keras's MultiHeadAttention does."""
    auto = None
    for x, axis in ((query, -1), (value, -2), (key, -2)):
        mask = getattr(x, "_keras_mask", None)
        if mask is not None:
            mask = tf.expand_dims(tf.cast(mask, tf.bool), axis)
            auto = mask if auto is None else tf.logical_and(auto, mask)
    if auto is None:
        return attention_mask
    if attention_mask is None:
        return auto
    return tf.logical_and(tf.cast(attention_mask, tf.bool), auto)
