"""``tf.keras.layers.DenseFeatures``: a dict of feature tensors to one dense tensor, through
``tf.feature_column`` columns concatenated in TF's order (sorted by column name)."""

from __future__ import annotations

from typing import Any

import tapeflow as tf
from tapeflow.keras.engine.base_layer import Layer
from tapeflow.keras.layers.utils import layer_error


class DenseFeatures(Layer):
    """Dense feature columns (numeric, bucketized, indicator, embedding) side by side; the
    embedding columns' tables are this layer's trainable weights."""

    def __init__(self, feature_columns: Any, trainable: bool = True, name: str | None = None,
                 partitioner: Any = None, **kwargs: Any):
        from tapeflow.feature_column import columns

        super().__init__(trainable=trainable, name=name, **kwargs)
        feature_columns = ([feature_columns] if isinstance(feature_columns, columns.FeatureColumn)
                           else list(feature_columns))
        if not feature_columns:
            raise layer_error("DenseFeatures: feature_columns must not be empty")
        for column in feature_columns:
            if not hasattr(column, "dense"):
                raise layer_error(f"DenseFeatures: items of feature_columns must be dense "
                                  f"columns (numeric, bucketized, indicator, embedding); wrap "
                                  f"categorical columns in indicator_column or "
                                  f"embedding_column. Given: {column!r}")
        names = [c.name for c in feature_columns]
        if len(set(names)) != len(names):
            raise layer_error(f"DenseFeatures: duplicate feature column names {sorted(names)}")
        self.feature_columns = sorted(feature_columns, key=lambda c: c.name)
        self._tables: dict = {}

    def build(self, input_shape: Any) -> None:
        for column in self.feature_columns:
            if hasattr(column, "create_weights") and column.name not in self._tables:
                self._tables[column.name] = column.create_weights(self)
        self.built = True

    def embedding_weights(self, column: Any) -> Any:
        return self._tables[column.name]

    def call(self, features: Any, cols_to_output_tensors: dict | None = None,
             training: Any = None) -> Any:
        if not isinstance(features, dict):
            raise layer_error(f"DenseFeatures {self.name!r}: expects a dict of feature "
                              f"tensors keyed by feature name, got {type(features).__name__}")
        outputs = []
        for column in self.feature_columns:
            with tf.name_scope(column.name):
                tensor = column.dense(features, self)
            if cols_to_output_tensors is not None:
                cols_to_output_tensors[column] = tensor
            outputs.append(tensor)
        return tf.concat(outputs, axis=1)

    def compute_output_shape(self, input_shape: Any) -> tf.TensorShape:
        batch = next(iter(input_shape.values()))[0] if isinstance(input_shape, dict) else None
        return tf.TensorShape([batch, sum(c.variable_shape for c in self.feature_columns)])

    def get_config(self) -> dict:
        return {**super().get_config(), "partitioner": None,
                "feature_columns": [c._config_entry() for c in self.feature_columns]}

    @classmethod
    def from_config(cls, config: dict) -> DenseFeatures:
        from tapeflow.feature_column.columns import column_from_config

        config = dict(config)
        config["feature_columns"] = [column_from_config(c) for c in config["feature_columns"]]
        return cls(**config)
