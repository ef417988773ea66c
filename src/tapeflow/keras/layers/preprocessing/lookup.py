"""StringLookup and IntegerLookup: tokens to indices (and back, with ``invert``) as Keras 2 lays
them out: [mask token] [OOV indices] [vocabulary], the vocabulary learned by ``adapt`` in order of
frequency (ties: the larger token first, as tf-keras sorts). Lookups run through
``tf.lookup.StaticHashTable``, so they trace; several OOV indices hash with FarmHash as TF does.
"""

from __future__ import annotations

import collections
from typing import Any

import numpy as np

import tapeflow as tf
from tapeflow.keras.layers.preprocessing.numeric import PreprocessingLayer, adapt_array
from tapeflow.keras.layers.utils import layer_error

OUTPUT_MODES = ("int", "one_hot", "multi_hot", "count", "tf_idf")


def _flat_tokens(values: np.ndarray) -> list:
    return [v.decode() if isinstance(v, bytes) else v for v in np.asarray(values).reshape(-1)]


class IndexLookup(PreprocessingLayer):
    """The shared engine of StringLookup and IntegerLookup (not exported by Keras either)."""

    _key_dtype: Any = None

    def __init__(self, max_tokens: int | None, num_oov_indices: int, mask_token: Any,
                 oov_token: Any, vocabulary: Any = None, idf_weights: Any = None,
                 invert: bool = False, output_mode: str = "int", sparse: bool = False,
                 pad_to_max_tokens: bool = False, **kwargs: Any):
        super().__init__(**kwargs)
        if output_mode not in OUTPUT_MODES:
            raise layer_error(f"{type(self).__name__}: unknown output_mode {output_mode!r}; "
                              f"expected one of {OUTPUT_MODES}")
        if invert and output_mode != "int":
            raise layer_error(f"{type(self).__name__}: invert=True needs output_mode='int'")
        if num_oov_indices < 0:
            raise layer_error(f"{type(self).__name__}: num_oov_indices must be >= 0, got "
                              f"{num_oov_indices}")
        self.max_tokens, self.num_oov_indices = max_tokens, num_oov_indices
        self.mask_token, self.oov_token, self.invert = mask_token, oov_token, invert
        self.output_mode, self.sparse, self.pad_to_max_tokens = output_mode, sparse, \
            pad_to_max_tokens
        self._vocab: list = []
        self._idf: np.ndarray | None = None
        self._tables: tuple | None = None
        if vocabulary is not None:
            self.set_vocabulary(vocabulary, idf_weights)

    # --- vocabulary ---------------------------------------------------------------------------
    def _start(self) -> int:
        return (self.mask_token is not None) + self.num_oov_indices

    def set_vocabulary(self, vocabulary: Any, idf_weights: Any = None) -> None:
        """Use `vocabulary` (a list or array of tokens, no special tokens) as is."""
        tokens = _flat_tokens(vocabulary.numpy() if hasattr(vocabulary, "numpy") else vocabulary)
        if len(set(tokens)) != len(tokens):
            repeated = sorted({t for t in tokens if tokens.count(t) > 1})
            raise layer_error(f"{type(self).__name__}: the vocabulary contains repeated tokens "
                              f"{repeated}")
        if self.mask_token is not None and self.mask_token in tokens:
            raise layer_error(f"{type(self).__name__}: the vocabulary holds the mask token "
                              f"{self.mask_token!r}")
        self._vocab = tokens
        self._idf = None if idf_weights is None else np.asarray(idf_weights, np.float32)
        self._tables = None

    def adapt(self, data: Any, batch_size: int | None = None, steps: int | None = None) -> None:
        """Learn the vocabulary: tokens by count, most frequent first, up to max_tokens."""
        values = adapt_array(data, batch_size, steps)
        self._adapt_tokens([_flat_tokens(values)])

    def _adapt_tokens(self, documents: list[list]) -> None:
        counts: collections.Counter = collections.Counter()
        in_documents: collections.Counter = collections.Counter()
        for doc in documents:
            counts.update(doc)
            in_documents.update(set(doc))
        for special in (self.mask_token, self.oov_token):
            counts.pop(special, None)
        ranked = sorted(counts, key=lambda t: (counts[t], t), reverse=True)
        if self.max_tokens:
            ranked = ranked[:max(0, self.max_tokens - self._start())]
        idf = None
        if self.output_mode == "tf_idf":
            n = len(documents)
            idf = np.log(1.0 + n / (1.0 + np.array([in_documents[t] for t in ranked])))
        self.set_vocabulary(ranked, idf)

    def get_vocabulary(self, include_special_tokens: bool = True) -> list:
        special = ([] if self.mask_token is None else [self.mask_token]) + \
            [self.oov_token] * self.num_oov_indices
        return (special if include_special_tokens else []) + list(self._vocab)

    def vocabulary_size(self) -> int:
        return len(self.get_vocabulary())

    # --- lookups ------------------------------------------------------------------------------
    def _key(self, values: list) -> Any:
        return tf.constant(np.asarray(values, dtype=object if self._key_dtype == tf.string
                                      else np.int64), dtype=self._key_dtype)

    def _table(self) -> tuple:
        if self._tables is None:
            ids = np.arange(self._start(), self._start() + len(self._vocab), dtype=np.int64)
            keys = self._vocab + ([] if self.mask_token is None else [self.mask_token])
            values = list(ids) + ([] if self.mask_token is None else [0])
            init = tf.lookup.KeyValueTensorInitializer(self._key(keys),
                                                       tf.constant(np.array(values, np.int64)))
            self._tables = (tf.lookup.StaticHashTable(init, default_value=-1),)
        return self._tables[0]

    def _ids(self, x: Any) -> Any:
        found = self._table().lookup(x)
        if self.num_oov_indices == 0:
            return found
        oov_start = int(self.mask_token is not None)
        if self.num_oov_indices == 1:
            oov = tf.fill(tf.shape(found), tf.constant(oov_start, tf.int64))
        else:
            text = x if x.dtype == tf.string else tf.strings.as_string(x)
            oov = tf.strings.to_hash_bucket_fast(text, self.num_oov_indices) + oov_start
        return tf.where(found < 0, oov, found)

    def _tokens(self, ids: Any) -> Any:
        vocab = self.get_vocabulary()
        init = tf.lookup.KeyValueTensorInitializer(
            tf.constant(np.arange(len(vocab), dtype=np.int64)), self._key(vocab))
        default = self.oov_token if self.oov_token is not None else ""
        table = tf.lookup.StaticHashTable(init, default_value=default)
        return table.lookup(tf.cast(ids, tf.int64))

    def call(self, inputs: Any) -> Any:
        if isinstance(inputs, tf.RaggedTensor):
            if self.invert or self.output_mode == "int":
                return inputs.with_flat_values(self.call(inputs.flat_values))  # id per token
            return self._encode_rows(inputs)
        x = tf.convert_to_tensor(inputs)
        if self.invert:
            return self._tokens(x)
        if x.dtype != self._key_dtype:
            x = tf.cast(x, self._key_dtype)
        ids = self._ids(x)
        if self.output_mode == "int":
            return ids
        return self._encode(ids)

    def _depth(self) -> int:
        """Output width of the encoded modes: the vocabulary without the mask token."""
        if self.pad_to_max_tokens and self.max_tokens:
            return self.max_tokens
        return self.vocabulary_size() - (self.mask_token is not None)

    def _columns(self, ids: Any) -> Any:
        """Indices as encoded columns: the mask token's slot is dropped (its ids become -1,
        which one_hot leaves empty)."""
        return ids - 1 if self.mask_token is not None else ids

    def _encode(self, ids: Any) -> Any:
        ids = self._columns(ids)
        if self.output_mode == "one_hot":
            return tf.one_hot(ids, self._depth(), dtype=self.compute_dtype)
        if ids.shape.rank == 1:
            ids = tf.expand_dims(ids, -1)
        counts = tf.reduce_sum(tf.one_hot(ids, self._depth(), dtype=self.compute_dtype), axis=-2)
        return self._encode_counts(counts)

    def _encode_rows(self, inputs: Any) -> Any:
        """multi_hot / count / tf_idf of each ragged row: [rows, depth], as Keras."""
        if self.output_mode == "one_hot":
            raise layer_error(f"{type(self).__name__} {self.name!r}: output_mode 'one_hot' "
                              f"needs dense inputs, got a RaggedTensor of shape {inputs.shape}")
        flat = inputs.flat_values
        if flat.dtype != self._key_dtype:
            flat = tf.cast(flat, self._key_dtype)
        columns = tf.one_hot(self._columns(self._ids(flat)), self._depth(),
                             dtype=self.compute_dtype)
        counts = tf.math.unsorted_segment_sum(columns, inputs.value_rowids(), inputs.nrows())
        return self._encode_counts(counts)

    def _encode_counts(self, counts: Any) -> Any:
        """Token counts per row to the output mode: multi_hot clips, tf_idf weighs by the idf
        (OOV columns by the mean idf)."""
        out = tf.minimum(counts, 1.0) if self.output_mode == "multi_hot" else counts
        if self.output_mode != "tf_idf":
            return out
        weights = np.zeros(self._depth(), np.float64)
        start = self.num_oov_indices
        idf = self._idf if self._idf is not None else np.ones(len(self._vocab))
        weights[start:start + len(idf)] = idf
        weights[:start] = np.mean(idf) if len(idf) else 0.0
        return out * tf.constant(weights.astype(self.compute_dtype))

    def compute_output_shape(self, input_shape: Any) -> tf.TensorShape:
        return tf.TensorShape(input_shape)

    def get_config(self) -> dict:
        return {**super().get_config(), "max_tokens": self.max_tokens,
                "num_oov_indices": self.num_oov_indices, "mask_token": self.mask_token,
                "oov_token": self.oov_token, "invert": self.invert,
                "output_mode": self.output_mode, "sparse": self.sparse,
                "pad_to_max_tokens": self.pad_to_max_tokens,
                "vocabulary": list(self._vocab) or None,
                "idf_weights": None if self._idf is None else self._idf.tolist()}


class StringLookup(IndexLookup):
    """Strings to int64 indices: OOV at 0 (after the mask token, if any), then the vocabulary."""

    _key_dtype = tf.string

    def __init__(self, max_tokens: int | None = None, num_oov_indices: int = 1,
                 mask_token: str | None = None, oov_token: str = "[UNK]", vocabulary: Any = None,
                 idf_weights: Any = None, encoding: str = "utf-8", invert: bool = False,
                 output_mode: str = "int", sparse: bool = False, pad_to_max_tokens: bool = False,
                 **kwargs: Any):
        super().__init__(max_tokens, num_oov_indices, mask_token, oov_token, vocabulary,
                         idf_weights, invert, output_mode, sparse, pad_to_max_tokens, **kwargs)
        self.encoding = encoding

    def get_config(self) -> dict:
        return {**super().get_config(), "encoding": self.encoding}


class IntegerLookup(IndexLookup):
    """Integers to int64 indices, laid out as StringLookup's (OOV token -1 by default)."""

    _key_dtype = tf.int64

    def __init__(self, max_tokens: int | None = None, num_oov_indices: int = 1,
                 mask_token: int | None = None, oov_token: int = -1, vocabulary: Any = None,
                 vocabulary_dtype: str = "int64", idf_weights: Any = None, invert: bool = False,
                 output_mode: str = "int", sparse: bool = False, pad_to_max_tokens: bool = False,
                 **kwargs: Any):
        super().__init__(max_tokens, num_oov_indices, mask_token, oov_token, vocabulary,
                         idf_weights, invert, output_mode, sparse, pad_to_max_tokens, **kwargs)
        self.vocabulary_dtype = vocabulary_dtype

    def get_config(self) -> dict:
        return {**super().get_config(), "vocabulary_dtype": self.vocabulary_dtype}
