"""``tf.feature_column``: TF2's (deprecated) feature columns, consumed by
``tf.keras.layers.DenseFeatures``. Each constructor logs TF 2.21's deprecation notice once."""

from __future__ import annotations

from typing import Any

import tapeflow as tf
from tapeflow.feature_column import columns as _c
from tapeflow.feature_column.deprecation import warn_deprecated as _warn


def numeric_column(key: str, shape: Any = (1,), default_value: Any = None,
                   dtype: Any = "float32", normalizer_fn: Any = None) -> _c.NumericColumn:
    """A real-valued feature, reshaped to ``[batch, prod(shape)]`` after `normalizer_fn`."""
    _warn("numeric_column")
    return _c.NumericColumn(key, shape, default_value, dtype, normalizer_fn)


def bucketized_column(source_column: Any, boundaries: Any) -> _c.BucketizedColumn:
    """One-hot buckets of a numeric column: bucket i holds ``boundaries[i-1] <= x <
    boundaries[i]``."""
    _warn("bucketized_column")
    return _c.BucketizedColumn(source_column, boundaries)


def categorical_column_with_vocabulary_list(
        key: str, vocabulary_list: Any, dtype: Any = None, default_value: int = -1,
        num_oov_buckets: int = 0) -> _c.VocabularyListCategoricalColumn:
    """Ids by position in an in-memory vocabulary."""
    _warn("categorical_column_with_vocabulary_list")
    return _c.VocabularyListCategoricalColumn(key, vocabulary_list, dtype, default_value,
                                              num_oov_buckets)


def categorical_column_with_hash_bucket(key: str, hash_bucket_size: int,
                                        dtype: Any = "string") -> _c.HashedCategoricalColumn:
    """Ids by FarmHash of the value, as ``tf.strings.to_hash_bucket_fast``."""
    _warn("categorical_column_with_hash_bucket")
    return _c.HashedCategoricalColumn(key, hash_bucket_size, dtype)


def categorical_column_with_identity(key: str, num_buckets: int,
                                     default_value: int | None = None
                                     ) -> _c.IdentityCategoricalColumn:
    """Integer features that already are ids in ``[0, num_buckets)``."""
    _warn("categorical_column_with_identity")
    return _c.IdentityCategoricalColumn(key, num_buckets, default_value)


def crossed_column(keys: Any, hash_bucket_size: int,
                   hash_key: int | None = None) -> _c.CrossedColumn:
    """Hashed combinations of several categorical features."""
    _warn("crossed_column")
    return _c.CrossedColumn(keys, hash_bucket_size, hash_key)


def indicator_column(categorical_column: Any) -> _c.IndicatorColumn:
    """Multi-hot representation of a categorical column."""
    _warn("indicator_column")
    return _c.IndicatorColumn(categorical_column)


def embedding_column(categorical_column: Any, dimension: int, combiner: str = "mean",
                     initializer: Any = None, ckpt_to_load_from: Any = None,
                     tensor_name_in_ckpt: Any = None, max_norm: Any = None,
                     trainable: bool = True, use_safe_embedding_lookup: bool = True
                     ) -> _c.EmbeddingColumn:
    """Dense trainable embedding of a categorical column, combined per row."""
    _warn("embedding_column")
    if ckpt_to_load_from is not None or tensor_name_in_ckpt is not None:
        raise NotImplementedError("embedding_column: ckpt_to_load_from / tensor_name_in_ckpt "
                                  "are not supported by tapeflow")
    return _c.EmbeddingColumn(categorical_column, dimension, combiner, initializer, max_norm,
                              trainable)


__all__ = ["bucketized_column", "categorical_column_with_hash_bucket",
           "categorical_column_with_identity", "categorical_column_with_vocabulary_list",
           "crossed_column", "embedding_column", "indicator_column", "numeric_column"]
