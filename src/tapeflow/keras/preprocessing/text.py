"""``tf.keras.preprocessing.text``: Keras 2's word-level text helpers in plain Python.

``Tokenizer`` counts words over a corpus (``fit_on_texts``) and numbers them by descending
count, ties in order of first appearance, from 1 (0 is never a word; an ``oov_token`` takes
1). ``texts_to_sequences`` maps texts to those numbers, keeping only the ``num_words - 1``
most frequent words; ``sequences_to_matrix`` gives one row per text in 'binary', 'count',
'freq' or 'tfidf' mode. ``to_json`` / ``tokenizer_from_json`` save and restore every count,
in tf-keras's JSON layout, so a tokenizer saved by tf-keras loads here and back.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np

DEFAULT_FILTERS = '!"#$%&()*+,-./:;<=>?@[\\]^_`{|}~\t\n'


def text_to_word_sequence(input_text: str, filters: str = DEFAULT_FILTERS, lower: bool = True,
                          split: str = " ") -> list[str]:
    """The words of `input_text`: lowercased (by default), every character of `filters`
    turned into `split`, split on `split`, empty pieces dropped.

    >>> text_to_word_sequence("This is a sample sentence.")
    ['this', 'is', 'a', 'sample', 'sentence']
    """
    if lower:
        input_text = input_text.lower()
    input_text = input_text.translate(str.maketrans({c: split for c in filters}))
    return [word for word in input_text.split(split) if word]


def hashing_trick(text: str, n: int, hash_function: Any = None,
                  filters: str = DEFAULT_FILTERS, lower: bool = True, split: str = " ",
                  analyzer: Callable | None = None) -> list[int]:
    """Each word of `text` as ``hash_function(word) % (n - 1) + 1``: indices in [1, n - 1],
    0 never used, collisions possible. `hash_function`: None (Python's ``hash``, which
    differs between runs for strings), 'md5' (stable) or any str -> int function."""
    if hash_function is None:
        hash_function = hash
    elif hash_function == "md5":
        def hash_function(word: str) -> int:
            return int(hashlib.md5(word.encode()).hexdigest(), 16)
    words = analyzer(text) if analyzer is not None else \
        text_to_word_sequence(text, filters=filters, lower=lower, split=split)
    return [hash_function(word) % (n - 1) + 1 for word in words]


def one_hot(input_text: str, n: int, filters: str = DEFAULT_FILTERS, lower: bool = True,
            split: str = " ", analyzer: Callable | None = None) -> list[int]:
    """``hashing_trick`` with Python's ``hash``: a word index in [1, n - 1] per word."""
    return hashing_trick(input_text, n, hash_function=hash, filters=filters, lower=lower,
                         split=split, analyzer=analyzer)


_MODES = ("binary", "count", "tfidf", "freq")


class Tokenizer:
    """Numbers the words of a corpus by frequency and turns texts into index sequences or
    bag-of-words matrices.

    >>> t = Tokenizer(num_words=3, oov_token="<unk>")
    >>> t.fit_on_texts(["the cat sat", "the dog"])
    >>> t.word_index
    {'<unk>': 1, 'the': 2, 'cat': 3, 'sat': 4, 'dog': 5}
    >>> t.texts_to_sequences(["the bird sat"])
    [[2, 1, 1]]
    """

    def __init__(self, num_words: int | None = None, filters: str = DEFAULT_FILTERS,
                 lower: bool = True, split: str = " ", char_level: bool = False,
                 oov_token: str | None = None, analyzer: Callable | None = None,
                 **kwargs: Any):
        if "nb_words" in kwargs:  # Keras 1's name
            num_words = kwargs.pop("nb_words")
        document_count = kwargs.pop("document_count", 0)
        if kwargs:
            raise TypeError("Unrecognized keyword arguments: " + str(kwargs))
        self.word_counts: OrderedDict[str, int] = OrderedDict()
        self.word_docs: defaultdict[str, int] = defaultdict(int)
        self.filters = filters
        self.split = split
        self.lower = lower
        self.num_words = num_words
        self.document_count = document_count
        self.char_level = char_level
        self.oov_token = oov_token
        self.index_docs: defaultdict[int, int] = defaultdict(int)
        self.word_index: dict[str, int] = {}
        self.index_word: dict[int, str] = {}
        self.analyzer = analyzer

    def _tokens(self, text: Any) -> Any:
        """A text's tokens: its characters (char_level) or the items of a list of tokens
        (lowercased if `lower`), else its words."""
        if self.char_level or isinstance(text, list):
            if self.lower:
                text = [t.lower() for t in text] if isinstance(text, list) else text.lower()
            return text
        if self.analyzer is not None:
            return self.analyzer(text)
        return text_to_word_sequence(text, filters=self.filters, lower=self.lower,
                                     split=self.split)

    def fit_on_texts(self, texts: Iterable) -> None:
        """Count words (and the documents holding each) over `texts` (strings, or lists of
        tokens), then renumber the vocabulary by descending count."""
        for text in texts:
            self.document_count += 1
            tokens = self._tokens(text)
            for word in tokens:
                self.word_counts[word] = self.word_counts.get(word, 0) + 1
            for word in set(tokens):
                self.word_docs[word] += 1
        # a stable sort: equal counts keep the order in which words first appeared
        ranked = sorted(self.word_counts.items(), key=lambda item: item[1], reverse=True)
        vocabulary = ([] if self.oov_token is None else [self.oov_token]) + \
            [word for word, _ in ranked]
        self.word_index = dict(zip(vocabulary, range(1, len(vocabulary) + 1)))
        self.index_word = {index: word for word, index in self.word_index.items()}
        for word, count in list(self.word_docs.items()):
            self.index_docs[self.word_index[word]] = count

    def fit_on_sequences(self, sequences: Iterable) -> None:
        """Count documents per index over index sequences (what 'tfidf' mode needs when
        only sequences are at hand)."""
        sequences = list(sequences)
        self.document_count += len(sequences)
        for seq in sequences:
            for index in set(seq):
                self.index_docs[index] += 1

    def texts_to_sequences(self, texts: Iterable) -> list[list[int]]:
        """Each text as the indices of its known words (words ranked ``num_words`` or later,
        and unknown words, become the oov index, or are dropped without an oov_token)."""
        return list(self.texts_to_sequences_generator(texts))

    def texts_to_sequences_generator(self, texts: Iterable) -> Iterator[list[int]]:
        """`texts_to_sequences`, one text at a time."""
        oov = self.word_index.get(self.oov_token)
        for text in texts:
            out = []
            for word in self._tokens(text):
                index = self.word_index.get(word)
                if index is not None and not (self.num_words and index >= self.num_words):
                    out.append(index)
                elif oov is not None or (index is None and self.oov_token is not None):
                    out.append(oov)
            yield out

    def sequences_to_texts(self, sequences: Iterable) -> list[str]:
        """Each index sequence back to space-joined words (the inverse of
        `texts_to_sequences` up to filtering and the vocabulary limit)."""
        return list(self.sequences_to_texts_generator(sequences))

    def sequences_to_texts_generator(self, sequences: Iterable) -> Iterator[str]:
        """`sequences_to_texts`, one sequence at a time."""
        oov = self.word_index.get(self.oov_token)
        for seq in sequences:
            words = []
            for index in seq:
                word = self.index_word.get(index)
                if word is not None and not (self.num_words and index >= self.num_words):
                    words.append(word)
                elif oov is not None or (word is None and self.oov_token is not None):
                    words.append(self.index_word[oov])
            yield " ".join(words)

    def texts_to_matrix(self, texts: Iterable, mode: str = "binary") -> np.ndarray:
        """`sequences_to_matrix` of `texts_to_sequences(texts)`."""
        return self.sequences_to_matrix(self.texts_to_sequences(texts), mode=mode)

    def sequences_to_matrix(self, sequences: list, mode: str = "binary") -> np.ndarray:
        """A [len(sequences), num_words] float64 matrix: per row, for each index below
        num_words, 1 ('binary'), its count ('count'), count / len(seq) ('freq'), or
        ``(1 + log count) * log(1 + documents / (1 + documents with the index))``
        ('tfidf')."""
        if self.num_words:
            num_words = self.num_words
        elif self.word_index:
            num_words = len(self.word_index) + 1
        else:
            raise ValueError("Specify a dimension (`num_words` argument), or fit on some text "
                             "data first.")
        if mode not in _MODES:
            raise ValueError(f"Unknown vectorization mode: {mode!r} (expected one of "
                             f"{', '.join(_MODES)})")
        if mode == "tfidf" and not self.document_count:
            raise ValueError("Fit the Tokenizer on some data before using tfidf mode.")
        x = np.zeros((len(sequences), num_words))
        for row, seq in enumerate(sequences):
            if not seq:
                continue
            counts: dict[int, int] = {}
            for index in seq:
                if index < num_words:
                    counts[index] = counts.get(index, 0) + 1
            for index, count in counts.items():
                if mode == "count":
                    x[row, index] = count
                elif mode == "freq":
                    x[row, index] = count / len(seq)
                elif mode == "binary":
                    x[row, index] = 1
                else:
                    idf = np.log(1 + self.document_count / (1 + self.index_docs.get(index, 0)))
                    x[row, index] = (1 + np.log(count)) * idf
        return x

    def get_config(self) -> dict:
        """The arguments and every count (the dicts as JSON strings, as tf-keras stores them;
        a custom `analyzer` is not saved)."""
        return {"num_words": self.num_words, "filters": self.filters, "lower": self.lower,
                "split": self.split, "char_level": self.char_level,
                "oov_token": self.oov_token, "document_count": self.document_count,
                "word_counts": json.dumps(self.word_counts),
                "word_docs": json.dumps(self.word_docs),
                "index_docs": json.dumps(self.index_docs),
                "index_word": json.dumps(self.index_word),
                "word_index": json.dumps(self.word_index)}

    def to_json(self, **kwargs: Any) -> str:
        """``{"class_name": "Tokenizer", "config": get_config()}`` as a JSON string
        (`kwargs` go to ``json.dumps``); `tokenizer_from_json` reads it back."""
        return json.dumps({"class_name": type(self).__name__, "config": self.get_config()},
                          **kwargs)


def tokenizer_from_json(json_string: str) -> Tokenizer:
    """The `Tokenizer` a `Tokenizer.to_json` string (tapeflow's or tf-keras's) describes."""
    config = dict(json.loads(json_string).get("config"))
    word_counts = json.loads(config.pop("word_counts"))
    word_docs = json.loads(config.pop("word_docs"))
    index_docs = {int(k): v for k, v in json.loads(config.pop("index_docs")).items()}
    index_word = {int(k): v for k, v in json.loads(config.pop("index_word")).items()}
    word_index = json.loads(config.pop("word_index"))
    tokenizer = Tokenizer(**config)
    tokenizer.word_counts = OrderedDict(word_counts)
    tokenizer.word_docs = defaultdict(int, word_docs)
    tokenizer.index_docs = defaultdict(int, index_docs)
    tokenizer.word_index = word_index
    tokenizer.index_word = index_word
    return tokenizer
