"""layers.experimental.preprocessing.PreprocessingLayer: a user's adaptable layer through the
base class's adapt loop (reset, build, update_state per batch, finalize), is_adapted."""

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.keras import layers

PreprocessingLayer = layers.experimental.preprocessing.PreprocessingLayer


class RunningMax(PreprocessingLayer):
    def build(self, input_shape):
        self.peak = self.add_weight("peak", shape=(input_shape[-1],), initializer="zeros",
                                    trainable=False)
        self.batches = []

    def update_state(self, data):
        self.batches.append(int(data.shape[0]))
        self.peak.assign(tf.maximum(self.peak, tf.reduce_max(data, axis=0)))

    def reset_state(self):
        self.peak.assign(tf.zeros_like(self.peak))
        self.batches = []

    def finalize_state(self):
        self.final = self.peak.numpy().copy()

    def call(self, x):
        return x / self.peak


def test_adapt_loop_over_arrays_and_datasets():
    data = np.arange(150, dtype=np.float32).reshape(75, 2)
    layer = RunningMax()
    assert not layer.is_adapted
    layer.adapt(data)
    assert layer.batches == [32, 32, 11] and layer.is_adapted  # 32 rows a batch, as tf-keras
    np.testing.assert_array_equal(layer.final, [148, 149])
    np.testing.assert_allclose(layer(data).numpy(), data / [148, 149])
    layer.adapt(data[:10], batch_size=4, steps=2)  # reset first, then only two batches
    assert layer.batches == [4, 4]
    np.testing.assert_array_equal(layer.peak.numpy(), [14, 15])
    ds = tf.data.Dataset.from_tensor_slices(data).batch(50)
    layer.adapt(ds)
    assert layer.batches == [50, 25]
    np.testing.assert_allclose(tf.function(layer)(tf.constant(data)).numpy(), data / [148, 149])


def test_built_in_layers_report_is_adapted_and_base_requires_update_state():
    norm = layers.Normalization()
    assert not norm.is_adapted
    norm.adapt(np.array([[1.0], [3.0]]))
    assert norm.is_adapted and isinstance(norm, PreprocessingLayer)
    lookup = layers.StringLookup()
    lookup.adapt(["a", "b", "a"])
    assert lookup.is_adapted

    class Empty(PreprocessingLayer):
        pass

    with pytest.raises(NotImplementedError, match="Empty does not implement update_state"):
        Empty().adapt(np.ones((2, 2)))
