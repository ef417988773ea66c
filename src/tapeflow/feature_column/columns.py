"""The ``tf.feature_column`` column objects: what each column reads from the feature dict and
the dense tensor (or the categorical ids) it makes, with TF's names, orders and id layouts.

Dense columns have ``dense(features, layer)`` giving ``[batch, n]`` float32. Categorical
columns have ``ids(features)`` giving ``(ids [batch, k] int64, valid [batch, k] bool)``: TF's
sparse id tensor written densely, where ``valid`` is False for the entries TF drops (empty
strings and -1 in the raw input, out-of-vocabulary ids with ``default_value=-1``).
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

import tapeflow as tf
from tapeflow.strings.hashing import fingerprint64

_MASK = (1 << 64) - 1
_MUL = 0xC6A4A7935BD1E995
DEFAULT_HASH_KEY = 0xDECAFCAFFE   # TF's hash_key for crossed_column when none is given


def raw_feature(features: Any, key: str) -> Any:
    """The feature tensor for `key`, at least 2-D ([batch, ...]) as TF reads it."""
    if key not in features:
        raise ValueError(f"The feature dict has no feature {key!r} (feature columns need it); "
                         f"it has {sorted(features)}")
    x = tf.convert_to_tensor(features[key])
    return tf.expand_dims(x, -1) if x.shape.rank == 1 else x


def _preprocessing() -> Any:
    """Keras's preprocessing layers (imported late: tf.keras imports after this package)."""
    from tapeflow.keras.layers import preprocessing

    return preprocessing


def _flat2d(x: Any) -> Any:
    return tf.reshape(x, [tf.shape(x)[0], -1])


def _present(x: Any) -> Any:
    """TF's dense-to-sparse rule: '' (strings) and -1 (integers) are missing values."""
    if x.dtype == tf.string:
        return tf.not_equal(x, tf.constant(""))
    return tf.not_equal(x, tf.constant(-1, x.dtype))


class FeatureColumn:
    """Common base: `name` orders columns in DenseFeatures; `get_config` round-trips."""

    name: str

    def get_config(self) -> dict:
        raise NotImplementedError(f"{type(self).__name__} must implement get_config")

    def _config_entry(self) -> dict:
        return {"class_name": type(self).__name__, "config": self.get_config()}

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"



class NumericColumn(FeatureColumn):
    def __init__(self, key: str, shape: Any = (1,), default_value: Any = None,
                 dtype: Any = "float32", normalizer_fn: Any = None):
        self.key, self.name = key, key
        self.shape = (int(shape),) if isinstance(shape, int) else tuple(int(s) for s in shape)
        self.default_value, self.dtype = default_value, tf.as_dtype(dtype)
        if not self.dtype.is_floating and not self.dtype.is_integer:
            raise ValueError(f"numeric_column {key!r}: dtype must be convertible to float, "
                             f"got {self.dtype.name}")
        if normalizer_fn is not None and not callable(normalizer_fn):
            raise TypeError(f"numeric_column {key!r}: normalizer_fn must be a callable, got "
                            f"{normalizer_fn!r}")
        self.normalizer_fn = normalizer_fn

    @property
    def variable_shape(self) -> int:
        return int(np.prod(self.shape))

    def values(self, features: Any) -> Any:
        x = tf.cast(raw_feature(features, self.key), tf.float32)
        if self.normalizer_fn is not None:
            x = self.normalizer_fn(x)
        return tf.reshape(tf.cast(x, tf.float32), [tf.shape(x)[0], self.variable_shape])

    def dense(self, features: Any, layer: Any) -> Any:
        return self.values(features)

    def get_config(self) -> dict:
        if self.normalizer_fn is not None:
            raise ValueError(f"numeric_column {self.key!r}: a config cannot hold normalizer_fn "
                             f"{self.normalizer_fn!r} (tapeflow does not serialize functions)")
        return {"key": self.key, "shape": list(self.shape), "default_value": self.default_value,
                "dtype": self.dtype.name, "normalizer_fn": None}


class CategoricalColumn(FeatureColumn):
    num_buckets: int

    def ids(self, features: Any) -> tuple:
        raise NotImplementedError(f"{type(self).__name__} must implement ids")


class BucketizedColumn(CategoricalColumn):
    """Both dense (one-hot of each value's bucket) and categorical (bucket ids, offset by
    ``i * (len(boundaries) + 1)`` for the i-th value of a multi-value source)."""

    def __init__(self, source_column: NumericColumn, boundaries: Any):
        if not isinstance(source_column, NumericColumn):
            raise ValueError(f"bucketized_column: source_column must be a numeric_column, got "
                             f"{source_column!r}")
        boundaries = [float(b) for b in boundaries]
        if not boundaries or any(b >= c for b, c in zip(boundaries, boundaries[1:])):
            raise ValueError(f"bucketized_column: boundaries must be a sorted list, got "
                             f"{boundaries}")
        self.source_column, self.boundaries = source_column, boundaries
        self.name = f"{source_column.name}_bucketized"
        self.num_buckets = (len(boundaries) + 1) * source_column.variable_shape
        self.variable_shape = self.num_buckets
        self._discretize = _preprocessing().Discretization(bin_boundaries=self.boundaries)

    def _buckets(self, features: Any) -> Any:
        return self._discretize(_flat2d(tf.cast(raw_feature(features, self.source_column.key),
                                     tf.float64)))

    def dense(self, features: Any, layer: Any) -> Any:
        buckets = self._buckets(features)
        one_hot = tf.one_hot(buckets, len(self.boundaries) + 1, dtype=tf.float32)
        return tf.reshape(one_hot, [tf.shape(buckets)[0], self.num_buckets])

    def ids(self, features: Any) -> tuple:
        buckets = self._buckets(features)
        width = self.source_column.variable_shape
        offsets = tf.constant(np.arange(width, dtype=np.int64) * (len(self.boundaries) + 1))
        ids = buckets + offsets
        return ids, tf.fill(tf.shape(ids), True)

    def get_config(self) -> dict:
        return {"source_column": self.source_column._config_entry(),
                "boundaries": list(self.boundaries)}


class VocabularyListCategoricalColumn(CategoricalColumn):
    """Ids 0..n-1 for the vocabulary, n..n+num_oov_buckets-1 for hashed unknowns (FarmHash,
    as TF's lookup table), else `default_value` (-1: dropped)."""

    def __init__(self, key: str, vocabulary_list: Any, dtype: Any = None,
                 default_value: int = -1, num_oov_buckets: int = 0):
        vocabulary_list = list(vocabulary_list)
        if not vocabulary_list:
            raise ValueError(f"categorical_column_with_vocabulary_list {key!r}: "
                             f"vocabulary_list must not be empty")
        if len(set(vocabulary_list)) != len(vocabulary_list):
            raise ValueError(f"categorical_column_with_vocabulary_list {key!r}: duplicate keys "
                             f"in vocabulary_list {vocabulary_list}")
        if num_oov_buckets and default_value != -1:
            raise ValueError(f"categorical_column_with_vocabulary_list {key!r}: can't specify "
                             f"both default_value and num_oov_buckets")
        is_str = isinstance(vocabulary_list[0], (str, bytes))
        self.dtype = tf.as_dtype(dtype) if dtype is not None else (
            tf.string if is_str else tf.int64)
        self.key, self.name, self.vocabulary_list = key, key, vocabulary_list
        self.default_value, self.num_oov_buckets = int(default_value), int(num_oov_buckets)
        self.num_buckets = len(vocabulary_list) + self.num_oov_buckets
        layers = _preprocessing()
        if self.dtype == tf.string:
            self._lookup = layers.StringLookup(vocabulary=vocabulary_list, mask_token=None,
                                               num_oov_indices=self.num_oov_buckets)
        else:
            self._lookup = layers.IntegerLookup(vocabulary=[int(v) for v in vocabulary_list],
                                                mask_token=None,
                                                num_oov_indices=self.num_oov_buckets)
        self._lookup._table()   # the lookup table is built now, eagerly, not inside a trace

    def ids(self, features: Any) -> tuple:
        x = raw_feature(features, self.key)
        if self.dtype != tf.string:
            x = tf.cast(x, tf.int64)
        found = self._lookup(x)     # Keras layout: OOV buckets first, then the vocabulary
        n, oov = len(self.vocabulary_list), self.num_oov_buckets
        if oov:
            ids = tf.where(found < oov, found + n, found - oov)
        else:
            ids = tf.where(found < 0, tf.fill(tf.shape(found), tf.constant(
                self.default_value, tf.int64)), found)
        return ids, tf.logical_and(_present(x), ids >= 0)

    def get_config(self) -> dict:
        return {"key": self.key, "vocabulary_list": list(self.vocabulary_list),
                "dtype": self.dtype.name, "default_value": self.default_value,
                "num_oov_buckets": self.num_oov_buckets}


class HashedCategoricalColumn(CategoricalColumn):
    """FarmHash Fingerprint64 of the string (integers as their decimal text) mod buckets."""

    def __init__(self, key: str, hash_bucket_size: int, dtype: Any = "string"):
        if hash_bucket_size is None or int(hash_bucket_size) < 1:
            raise ValueError(f"categorical_column_with_hash_bucket {key!r}: hash_bucket_size "
                             f"must be at least 1, got {hash_bucket_size}")
        self.key, self.name, self.dtype = key, key, tf.as_dtype(dtype)
        self.num_buckets = self.hash_bucket_size = int(hash_bucket_size)
        self._hashing = _preprocessing().Hashing(self.hash_bucket_size)

    def ids(self, features: Any) -> tuple:
        x = raw_feature(features, self.key)
        return self._hashing(x), _present(x)

    def get_config(self) -> dict:
        return {"key": self.key, "hash_bucket_size": self.hash_bucket_size,
                "dtype": self.dtype.name}


class IdentityCategoricalColumn(CategoricalColumn):
    """The integer input is the id; out-of-range ids become `default_value` or an error."""

    def __init__(self, key: str, num_buckets: int, default_value: int | None = None):
        if int(num_buckets) < 1:
            raise ValueError(f"categorical_column_with_identity {key!r}: num_buckets must be "
                             f"at least 1, got {num_buckets}")
        if default_value is not None and not 0 <= default_value < num_buckets:
            raise ValueError(f"categorical_column_with_identity {key!r}: default_value "
                             f"{default_value} not in range [0, {num_buckets})")
        self.key, self.name = key, key
        self.num_buckets, self.default_value = int(num_buckets), default_value

    def ids(self, features: Any) -> tuple:
        x = raw_feature(features, self.key)
        if not x.dtype.is_integer:
            raise ValueError(f"categorical_column_with_identity {self.key!r}: input must be "
                             f"integer, got {x.dtype.name}")
        ids = tf.cast(x, tf.int64)
        present = _present(ids)
        bad = tf.logical_and(present, tf.logical_or(ids < 0, ids >= self.num_buckets))
        if self.default_value is None:
            if tf.executing_eagerly() and bool(tf.reduce_any(bad)):
                raise ValueError(f"categorical_column_with_identity {self.key!r}: ids must be "
                                 f"in [0, {self.num_buckets}), got {ids.numpy().ravel()}")
            return ids, tf.logical_and(present, tf.logical_not(bad))
        ids = tf.where(bad, tf.fill(tf.shape(ids), tf.constant(self.default_value, tf.int64)),
                       ids)
        return ids, present

    def get_config(self) -> dict:
        return {"key": self.key, "number_buckets": self.num_buckets,
                "default_value": self.default_value}


def fingerprint_cat64(fp1: int, fp2: int) -> int:
    """TF's FingerprintCat64 (tensorflow/core/platform/fingerprint.h) on uint64 values."""
    def shift_mix(v: int) -> int:
        return v ^ (v >> 47)

    result = fp1 ^ _MUL
    result ^= (shift_mix((fp2 * _MUL) & _MASK) * _MUL) & _MASK
    result = (result * _MUL) & _MASK
    result = (shift_mix(result) * _MUL) & _MASK
    return shift_mix(result)


def _cross_rows(hash_key: int, buckets: int, *arrays: np.ndarray) -> np.ndarray:
    """Every per-row combination of the keys' values, hashed as TF's SparseCrossHashed does:
    strings by Fingerprint64, integers as themselves, chained with FingerprintCat64."""
    n_keys = len(arrays) // 2
    keys = []
    for values, valid in zip(arrays[:n_keys], arrays[n_keys:]):
        if values.dtype.kind in "OSU":
            hashed = [[fingerprint64(v if isinstance(v, bytes) else str(v).encode())
                       for v in row] for row in values]
        else:
            hashed = (values.astype(np.int64).view(np.uint64)).tolist()
        keys.append([[h for h, ok in zip(row, ok_row) if ok]
                     for row, ok_row in zip(hashed, valid)])
    width = int(np.prod([a.shape[1] for a in arrays[:n_keys]]))
    out = np.full((arrays[0].shape[0], width), -1, np.int64)
    for r in range(out.shape[0]):
        for c, combo in enumerate(itertools.product(*(k[r] for k in keys))):
            h = hash_key
            for value in combo:
                h = fingerprint_cat64(h, int(value))
            out[r, c] = h % buckets
    return out


class CrossedColumn(CategoricalColumn):
    """Hashed cross of string keys and categorical columns, bit for bit TF's sparse_cross_hashed
    (checked against recorded TF 2.21 values)."""

    def __init__(self, keys: Any, hash_bucket_size: int, hash_key: int | None = None):
        keys = list(keys)
        if len(keys) < 2:
            raise ValueError(f"crossed_column: keys must have at least 2 elements, got {keys}")
        for key in keys:
            if isinstance(key, HashedCategoricalColumn):
                raise ValueError(f"crossed_column: categorical_column_with_hash_bucket is not "
                                 f"supported for crossing (hashing before crossing adds "
                                 f"collisions); use the feature name {key.key!r} as a string")
            if not isinstance(key, (str, CategoricalColumn)):
                raise ValueError(f"crossed_column: unsupported key {key!r}; keys must be "
                                 f"feature names or categorical columns")
        if int(hash_bucket_size) < 1:
            raise ValueError(f"crossed_column: hash_bucket_size must be > 1, got "
                             f"{hash_bucket_size}")
        self.keys, self.hash_key = keys, hash_key
        self.num_buckets = self.hash_bucket_size = int(hash_bucket_size)
        self.name = "_X_".join(sorted(k if isinstance(k, str) else k.name for k in keys))

    def _leaves(self) -> list:
        leaves = []
        for key in self.keys:
            leaves.extend(key._leaves() if isinstance(key, CrossedColumn) else [key])
        return leaves

    def ids(self, features: Any) -> tuple:
        values, valid = [], []
        leaves = self._leaves()   # TF's cross op takes the sparse (column) inputs first
        leaves = [k for k in leaves if not isinstance(k, str)] + [
            k for k in leaves if isinstance(k, str)]
        for key in leaves:
            if isinstance(key, str):
                x = _flat2d(raw_feature(features, key))
                values.append(x if x.dtype == tf.string else tf.cast(x, tf.int64))
                valid.append(tf.fill(tf.shape(x), True))
            else:
                ids, ok = key.ids(features)
                values.append(ids)
                valid.append(ok)
        key = DEFAULT_HASH_KEY if self.hash_key is None else self.hash_key
        ids = tf.numpy_function(
            lambda *a: _cross_rows(key, self.hash_bucket_size, *a), values + valid, tf.int64)
        ids = tf.reshape(ids, [tf.shape(values[0])[0], -1])
        return ids, ids >= 0

    def get_config(self) -> dict:
        return {"keys": [k if isinstance(k, str) else k._config_entry() for k in self.keys],
                "hash_bucket_size": self.hash_bucket_size, "hash_key": self.hash_key}


class IndicatorColumn(FeatureColumn):
    """Multi-hot counts of a categorical column's ids: ``[batch, num_buckets]``."""

    def __init__(self, categorical_column: CategoricalColumn):
        if not isinstance(categorical_column, CategoricalColumn):
            raise ValueError(f"indicator_column: expects a categorical column, got "
                             f"{categorical_column!r}")
        self.categorical_column = categorical_column
        self.name = f"{categorical_column.name}_indicator"
        self.variable_shape = categorical_column.num_buckets

    def dense(self, features: Any, layer: Any) -> Any:
        ids, valid = self.categorical_column.ids(features)
        ids = tf.where(valid, ids, tf.fill(tf.shape(ids), tf.constant(-1, tf.int64)))
        return tf.reduce_sum(tf.one_hot(ids, self.variable_shape, dtype=tf.float32), axis=1)

    def get_config(self) -> dict:
        return {"categorical_column": self.categorical_column._config_entry()}


class EmbeddingColumn(FeatureColumn):
    """A trainable ``[num_buckets, dimension]`` table (made by DenseFeatures, named
    ``<name>/embedding_weights``) combined over each row's ids; rows without ids give zeros."""

    def __init__(self, categorical_column: CategoricalColumn, dimension: int,
                 combiner: str = "mean", initializer: Any = None, max_norm: Any = None,
                 trainable: bool = True):
        if not isinstance(categorical_column, CategoricalColumn):
            raise ValueError(f"embedding_column: expects a categorical column, got "
                             f"{categorical_column!r}")
        if dimension is None or int(dimension) < 1:
            raise ValueError(f"embedding_column: invalid dimension {dimension}")
        if combiner not in ("mean", "sqrtn", "sum"):
            raise ValueError(f"embedding_column: combiner must be 'mean', 'sqrtn' or 'sum', "
                             f"got {combiner!r}")
        if initializer is not None and not callable(initializer):
            raise ValueError("embedding_column: initializer must be callable if specified")
        if max_norm is not None:
            raise NotImplementedError("embedding_column: max_norm is not supported by tapeflow")
        self.categorical_column, self.dimension = categorical_column, int(dimension)
        self.combiner, self.trainable, self.max_norm = combiner, trainable, max_norm
        self.initializer = initializer if initializer is not None else (
            tf.keras.initializers.TruncatedNormal(stddev=1.0 / np.sqrt(self.dimension)))
        self.name = f"{categorical_column.name}_embedding"
        self.variable_shape = self.dimension

    def create_weights(self, layer: Any) -> Any:
        return layer.add_weight(name=f"{self.name}/embedding_weights",
                                shape=(self.categorical_column.num_buckets, self.dimension),
                                initializer=self.initializer, trainable=self.trainable)

    def dense(self, features: Any, layer: Any) -> Any:
        table = layer.embedding_weights(self)
        ids, valid = self.categorical_column.ids(features)
        weights = tf.cast(valid, tf.float32)                                 # [b, k]
        rows = tf.gather(table, tf.where(valid, ids, tf.zeros_like(ids)))   # [b, k, d]
        total = tf.reduce_sum(rows * tf.expand_dims(weights, -1), axis=1)
        if self.combiner == "sum":
            return total
        count = tf.reduce_sum(weights, axis=1, keepdims=True)
        scale = count if self.combiner == "mean" else tf.sqrt(count)
        return total / tf.maximum(scale, 1.0)

    def get_config(self) -> dict:
        return {"categorical_column": self.categorical_column._config_entry(),
                "dimension": self.dimension, "combiner": self.combiner,
                "initializer": tf.keras.initializers.serialize(self.initializer),
                "max_norm": None, "trainable": self.trainable}


_CLASSES = {cls.__name__: cls for cls in (
    NumericColumn, BucketizedColumn, VocabularyListCategoricalColumn, HashedCategoricalColumn,
    IdentityCategoricalColumn, CrossedColumn, IndicatorColumn, EmbeddingColumn)}


def column_from_config(entry: Any) -> Any:
    """Rebuild a column from its ``{"class_name", "config"}`` entry (or a raw string key)."""
    if isinstance(entry, str):
        return entry
    cls = _CLASSES.get(entry.get("class_name"))
    if cls is None:
        raise ValueError(f"Unknown feature column class {entry.get('class_name')!r}; known: "
                         f"{sorted(_CLASSES)}")
    config = dict(entry["config"])
    for field in ("source_column", "categorical_column"):
        if field in config:
            config[field] = column_from_config(config[field])
    if cls is CrossedColumn:
        config["keys"] = [column_from_config(k) for k in config["keys"]]
    if cls is IdentityCategoricalColumn:
        config["num_buckets"] = config.pop("number_buckets")
    if cls is EmbeddingColumn:
        config["initializer"] = tf.keras.initializers.deserialize(config["initializer"])
    return cls(**config)
