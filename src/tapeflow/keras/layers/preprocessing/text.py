"""TextVectorization: standardize, split on whitespace, look tokens up (StringLookup with the
mask token "" for output_mode='int'), and pad/encode, as Keras 2 does."""

from __future__ import annotations

from typing import Any

import tapeflow as tf
from tapeflow.keras.layers.preprocessing.lookup import StringLookup
from tapeflow.keras.layers.preprocessing.numeric import PreprocessingLayer, adapt_array
from tapeflow.keras.layers.utils import layer_error

STRIP_PUNCTUATION = r'[!"#$%&()\*\+,-\./:;<=>?@\[\\\]^_`{|}~\']'


def _ngram_widths(ngrams: Any) -> tuple[int, ...] | None:
    """Keras's `ngrams`: None, n (widths 1..n) or a tuple of widths."""
    if ngrams is None:
        return None
    widths = tuple(range(1, int(ngrams) + 1)) if isinstance(ngrams, int) else tuple(
        int(n) for n in ngrams)
    if not widths or min(widths) < 1:
        raise layer_error(f"TextVectorization: `ngrams` must be None, a positive int or a "
                          f"tuple of positive ints, got {ngrams!r}")
    return widths


def ngram_tokens(tokens: Any, widths: tuple[int, ...]) -> Any:
    """Each row's n-grams of the split `tokens` (a RaggedTensor of strings), joined by a
    space, for every width in `widths` in turn (tf.strings.ngrams's order)."""
    flat, starts, lengths = tokens.flat_values, tokens.row_starts(), tokens.row_lengths()
    pieces = []
    for n in widths:
        count = tf.maximum(lengths - (n - 1), 0)
        first = tf.ragged.range(starts, starts + count).flat_values
        grams = tf.gather(flat, first)
        for k in range(1, n):
            grams = tf.strings.join([grams, tf.gather(flat, first + k)], separator=" ")
        pieces.append(tf.RaggedTensor.from_row_lengths(grams, count))
    return pieces[0] if len(pieces) == 1 else tf.concat(pieces, axis=1)


class TextVectorization(PreprocessingLayer):
    """Strings to token indices (padded to the longest text or output_sequence_length) or to
    multi_hot / count / tf_idf vectors over the vocabulary."""

    def __init__(self, max_tokens: int | None = None,
                 standardize: Any = "lower_and_strip_punctuation", split: Any = "whitespace",
                 ngrams: Any = None, output_mode: str = "int",
                 output_sequence_length: int | None = None, pad_to_max_tokens: bool = False,
                 vocabulary: Any = None, idf_weights: Any = None, sparse: bool = False,
                 ragged: bool = False, encoding: str = "utf-8", **kwargs: Any):
        super().__init__(**kwargs)
        if standardize not in (None, "lower_and_strip_punctuation", "lower",
                               "strip_punctuation") and not callable(standardize):
            raise layer_error(f"TextVectorization: unknown standardize {standardize!r}")
        if split not in (None, "whitespace", "character") and not callable(split):
            raise layer_error(f"TextVectorization: unknown split {split!r}")
        self._widths = _ngram_widths(ngrams)
        if self._widths is not None and split is None:
            raise layer_error("TextVectorization: `ngrams` needs a `split` (ngrams join split "
                              "tokens); got split=None")
        if output_sequence_length is not None and output_mode != "int":
            raise layer_error("TextVectorization: output_sequence_length needs output_mode='int'")
        self.standardize, self.split, self.ngrams = standardize, split, ngrams
        self.output_mode, self.output_sequence_length = output_mode, output_sequence_length
        self.max_tokens, self.pad_to_max_tokens = max_tokens, pad_to_max_tokens
        self.sparse, self.ragged, self.encoding = sparse, ragged, encoding
        self._lookup = StringLookup(max_tokens=max_tokens, num_oov_indices=1,
                                    mask_token="" if output_mode == "int" else None,
                                    output_mode=output_mode, vocabulary=vocabulary,
                                    idf_weights=idf_weights, pad_to_max_tokens=pad_to_max_tokens,
                                    name=f"{self.name}_lookup")

    def _standardize(self, x: Any) -> Any:
        if callable(self.standardize):
            return self.standardize(x)
        if self.standardize in ("lower", "lower_and_strip_punctuation"):
            x = tf.strings.lower(x)
        if self.standardize in ("strip_punctuation", "lower_and_strip_punctuation"):
            x = tf.strings.regex_replace(x, STRIP_PUNCTUATION, "")
        return x

    def _split(self, x: Any) -> Any:
        if callable(self.split):
            return self.split(x)
        if self.split == "whitespace":
            return tf.strings.split(x)
        if self.split == "character":
            return tf.strings.unicode_split(x, "UTF-8")
        return x

    def _tokens(self, inputs: Any) -> Any:
        x = tf.convert_to_tensor(inputs)
        if x.shape.rank == 2 and x.shape.as_list()[-1] == 1:
            x = tf.squeeze(x, [-1])
        tokens = self._split(self._standardize(x))
        return tokens if self._widths is None else ngram_tokens(tokens, self._widths)

    def adapt(self, data: Any, batch_size: int | None = None, steps: int | None = None) -> None:
        texts = adapt_array(data, batch_size, steps).reshape(-1)
        rows = self._tokens(tf.constant(texts)).to_list()
        self._lookup._adapt_tokens([[t.decode() if isinstance(t, bytes) else t for t in row]
                                    for row in rows])

    def get_vocabulary(self, include_special_tokens: bool = True) -> list:
        return self._lookup.get_vocabulary(include_special_tokens)

    def set_vocabulary(self, vocabulary: Any, idf_weights: Any = None) -> None:
        self._lookup.set_vocabulary(vocabulary, idf_weights)

    def vocabulary_size(self) -> int:
        return self._lookup.vocabulary_size()

    def call(self, inputs: Any) -> Any:
        tokens = self._tokens(inputs)
        if self.output_mode != "int":
            ids = tf.ragged.map_flat_values(self._lookup._ids, tokens)
            rows = self._lookup._columns(ids.to_tensor(default_value=-1))
            counts = tf.reduce_sum(tf.one_hot(rows, self._lookup._depth(),
                                              dtype=self.compute_dtype), axis=-2)
            return self._lookup._encode_counts(counts)
        ids = tf.ragged.map_flat_values(self._lookup._ids, tokens)
        if self.ragged:
            return ids
        if self.output_sequence_length is None:
            return ids.to_tensor(default_value=0)
        return ids.to_tensor(default_value=0, shape=[None, self.output_sequence_length])

    def get_config(self) -> dict:
        vocab = self.get_vocabulary(include_special_tokens=False)
        return {**super().get_config(), "max_tokens": self.max_tokens,
                "standardize": self.standardize if not callable(self.standardize) else None,
                "split": self.split if not callable(self.split) else None,
                "ngrams": self.ngrams, "output_mode": self.output_mode,
                "output_sequence_length": self.output_sequence_length,
                "pad_to_max_tokens": self.pad_to_max_tokens, "sparse": self.sparse,
                "ragged": self.ragged, "encoding": self.encoding,
                "vocabulary": vocab or None,
                "idf_weights": None if self._lookup._idf is None else self._lookup._idf.tolist()}

