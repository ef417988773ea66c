"""``tf.lookup``: static hash tables from key/value tensors or text files, and vocabularies
with out-of-vocabulary buckets (hashed with TensorFlow's Fingerprint64, so OOV ids match TF).

A lookup is one op holding the table as an attribute: it runs eagerly, in ``tf.function`` and in
``tf.data`` maps; RaggedTensor keys keep their rows.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tapeflow._api import export
from tapeflow.framework import dtypes as _dtypes
from tapeflow.framework.constant import convert_to_tensor
from tapeflow.framework.dispatch import apply, op
from tapeflow.framework.tensor import Tensor


def _key(k: Any) -> Any:
    return k if isinstance(k, bytes) else (k.encode() if isinstance(k, str) else k.item()
                                           if hasattr(k, "item") else k)


@export("lookup.TextFileIndex")
class TextFileIndex:
    WHOLE_LINE = -2
    LINE_NUMBER = -1


@export("lookup.KeyValueTensorInitializer")
class KeyValueTensorInitializer:
    """A table's contents from two tensors of keys and values."""

    def __init__(self, keys: Any, values: Any, key_dtype: Any = None, value_dtype: Any = None,
                 name: str | None = None):
        k = convert_to_tensor(keys, key_dtype)
        v = convert_to_tensor(values, value_dtype)
        self.key_dtype, self.value_dtype = k.dtype, v.dtype
        self._pairs = list(zip(k.numpy().reshape(-1).tolist(), v.numpy().reshape(-1).tolist()))

    def items(self) -> list:
        return self._pairs


@export("lookup.TextFileInitializer")
class TextFileInitializer:
    """A table's contents from a text file: one entry per line, columns split by `delimiter`
    (or the whole line / the line number, TextFileIndex)."""

    def __init__(self, filename: Any, key_dtype: Any, key_index: int, value_dtype: Any,
                 value_index: int, vocab_size: int | None = None, delimiter: str = "\t",
                 name: str | None = None, value_index_offset: int = 0):
        self.key_dtype = _dtypes.as_dtype(key_dtype)
        self.value_dtype = _dtypes.as_dtype(value_dtype)
        path = filename.numpy() if isinstance(filename, Tensor) else filename
        path = path.decode() if isinstance(path, bytes) else str(path)
        with open(path, "rb") as f:
            lines = f.read().decode().splitlines()
        if vocab_size is not None:
            lines = lines[:vocab_size]
        self._pairs = []
        for i, line in enumerate(lines):
            key = self._column(line, i, key_index, self.key_dtype, delimiter)
            value = self._column(line, i, value_index, self.value_dtype, delimiter)
            if value_index == TextFileIndex.LINE_NUMBER:
                value += value_index_offset
            self._pairs.append((key, value))

    @staticmethod
    def _column(line: str, number: int, index: int, dtype: Any, delimiter: str) -> Any:
        if index == TextFileIndex.LINE_NUMBER:
            return number
        text = line if index == TextFileIndex.WHOLE_LINE else line.split(delimiter)[index]
        if dtype is _dtypes.string:
            return text.encode()
        return int(text) if dtype.is_integer else float(text)

    def items(self) -> list:
        return self._pairs


# FarmHash's Fingerprint64 for out-of-vocabulary buckets, installed by tapeflow.strings (above)
fingerprint64: Callable[[bytes], int] | None = None


@op("LookupTableFind", shape=lambda keys, default, *, table, oov, dtype, base: (keys[0], dtype))
def _find(keys, default, *, table, oov, dtype, base):
    out = np.empty(keys.shape, dtype=object if dtype is _dtypes.string else dtype._np)
    flat_out = out.reshape(-1)
    fallback = default.reshape(-1)
    for i, k in enumerate(keys.reshape(-1)):
        value = table.get(_key(k))
        if value is None:
            if oov:
                data = _key(k) if isinstance(_key(k), bytes) else str(_key(k)).encode()
                value = base + fingerprint64(data) % oov
            else:
                value = fallback[i if fallback.size > 1 else 0]
        flat_out[i] = value
    return out


class _Table:
    def __init__(self, initializer: Any, default_value: Any, oov: int = 0):
        self._init = initializer
        self.key_dtype = initializer.key_dtype
        self.value_dtype = _dtypes.int64 if oov else initializer.value_dtype
        self._table = {_key(k): v for k, v in initializer.items()}
        self._oov = oov
        self._default = default_value

    def lookup(self, keys: Any, name: str | None = None) -> Any:
        """The value of each key (default / an OOV bucket for missing keys)."""
        if hasattr(keys, "with_flat_values"):
            return keys.with_flat_values(self.lookup(keys.flat_values))
        if hasattr(keys, "indices") and hasattr(keys, "dense_shape"):
            return keys.with_values(self.lookup(keys.values))
        k = keys if isinstance(keys, Tensor) else convert_to_tensor(keys, self.key_dtype)
        default = convert_to_tensor(-1 if self._default is None else self._default,
                                    self.value_dtype)
        return apply(_find, k, default, table=_Frozen(self._table), oov=self._oov,
                     dtype=self.value_dtype, base=len(self._table))

    def __getitem__(self, keys: Any) -> Any:
        return self.lookup(keys)

    def size(self, name: str | None = None) -> Any:
        return convert_to_tensor(len(self._table) + self._oov, _dtypes.int64)

    def export(self, name: str | None = None) -> tuple:
        keys = list(self._table)
        return (convert_to_tensor(keys, self.key_dtype),
                convert_to_tensor([self._table[k] for k in keys], self.value_dtype))

    @property
    def resource_handle(self) -> Any:
        return self


class _Frozen(dict):
    """A dict usable as an op attribute (hashable by identity)."""

    __hash__ = object.__hash__

    def __eq__(self, other: Any) -> bool:
        return self is other


@export("lookup.StaticHashTable", "lookup.experimental.StaticHashTable")
class StaticHashTable(_Table):
    """An immutable key -> value table (missing keys give `default_value`)."""

    def __init__(self, initializer: Any, default_value: Any, name: str | None = None,
                 experimental_is_anonymous: bool = False):
        super().__init__(initializer, default_value)


@export("lookup.StaticVocabularyTable")
class StaticVocabularyTable(_Table):
    """Vocabulary ids for known keys; unknown keys go to one of `num_oov_buckets` buckets
    after the vocabulary (Fingerprint64(key) % num_oov_buckets, as TensorFlow)."""

    def __init__(self, initializer: Any, num_oov_buckets: int, lookup_key_dtype: Any = None,
                 name: str | None = None, experimental_is_anonymous: bool = False):
        if num_oov_buckets <= 0:
            raise ValueError("num_oov_buckets must be > 0")
        super().__init__(initializer, None, oov=int(num_oov_buckets))
