"""tf.experimental.ExtensionType: fields, validation, immutability, tf.function, dispatch."""

import numpy as np
import pytest

import tapeflow as tf


class MaskedTensor(tf.experimental.ExtensionType):
    values: tf.Tensor
    mask: tf.Tensor
    note: str = "m"

    def __validate__(self):
        if self.values.shape != self.mask.shape:
            raise ValueError("values and mask must have the same shape")


def test_fields_validation_and_immutability():
    mt = MaskedTensor([1.0, 2.0], [True, False])
    assert isinstance(mt.values, tf.Tensor) and mt.note == "m"
    assert mt == MaskedTensor([1.0, 2.0], [True, False])
    with pytest.raises(ValueError, match="same shape"):
        MaskedTensor([1.0], [True, False])
    with pytest.raises(AttributeError, match="immutable"):
        mt.values = tf.constant([0.0])
    with pytest.raises(TypeError, match="no field"):
        MaskedTensor([1.0], [True], other=1)


def test_through_tf_function_and_nest():
    calls = []

    @tf.function
    def masked_sum(mt):
        calls.append(1)
        return tf.reduce_sum(tf.where(mt.mask, mt.values, tf.zeros_like(mt.values)))

    @tf.function
    def double(mt):
        return MaskedTensor(mt.values * 2, mt.mask, note=mt.note)

    assert float(masked_sum(MaskedTensor([1.0, 2.0], [True, False]))) == 1.0
    assert float(masked_sum(MaskedTensor([5.0, 2.0], [True, True]))) == 7.0
    assert len(calls) == 1  # same spec: one trace
    out = double(MaskedTensor([1.0, 2.0], [True, False], note="x"))
    assert isinstance(out, MaskedTensor) and out.note == "x"
    assert out.values.numpy().tolist() == [2.0, 4.0]
    flat = tf.nest.flatten(out, expand_composites=True)
    assert len(flat) == 2
    back = tf.nest.pack_sequence_as(out, flat, expand_composites=True)
    assert back == out


def test_dispatch_for_api_on_extension_type():
    @tf.experimental.dispatch_for_api(tf.math.reduce_sum, {"input_tensor": MaskedTensor})
    def masked_reduce_sum(input_tensor, axis=None, keepdims=False, name=None):
        kept = tf.where(input_tensor.mask, input_tensor.values,
                        tf.zeros_like(input_tensor.values))
        return tf.math.reduce_sum(kept, axis)

    mt = MaskedTensor([[1.0, 2.0], [3.0, 4.0]], [[True, False], [True, True]])
    np.testing.assert_allclose(tf.math.reduce_sum(mt, 1).numpy(), [1.0, 7.0])
    np.testing.assert_allclose(tf.reduce_sum(tf.ones([2, 2]), 0).numpy(), [2.0, 2.0])
