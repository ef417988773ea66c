"""tf.experimental.dispatch_for_{unary,binary}_elementwise_apis with the MaskedTensor of
TensorFlow's extension-type guide (results as TF 2.21 prints them), and unregister_dispatch_for."""

from typing import Union

import numpy as np
import pytest

import tapeflow as tf


class MaskedTensor(tf.experimental.ExtensionType):
    values: tf.Tensor
    mask: tf.Tensor


def test_unary_and_binary_handlers_then_unregister():
    @tf.experimental.dispatch_for_unary_elementwise_apis(MaskedTensor)
    def unary(api_func, x):
        return MaskedTensor(api_func(x.values), x.mask)

    @tf.experimental.dispatch_for_binary_elementwise_apis(
        Union[MaskedTensor, tf.Tensor], MaskedTensor | tf.Tensor)  # noqa: UP007 (the guide's)
    def binary(api_func, x, y):
        if not isinstance(x, MaskedTensor):
            x = MaskedTensor(x, tf.ones_like(x, tf.bool))
        if not isinstance(y, MaskedTensor):
            y = MaskedTensor(y, tf.ones_like(y, tf.bool))
        return MaskedTensor(api_func(x.values, y.values), x.mask & y.mask)

    try:
        x = MaskedTensor([1.0, -2.0, 3.0], [True, False, True])
        np.testing.assert_array_equal(tf.abs(x).values.numpy(), [1.0, 2.0, 3.0])
        np.testing.assert_array_equal(tf.math.exp(x).mask.numpy(), [True, False, True])
        y = tf.add(x, MaskedTensor([10.0, 20.0, 30.0], [True, True, False]))
        np.testing.assert_array_equal(y.values.numpy(), [11.0, 18.0, 33.0])
        np.testing.assert_array_equal(y.mask.numpy(), [True, False, False])
        z = tf.math.maximum(x, tf.constant([0.0, 0.0, 5.0]))
        np.testing.assert_array_equal(z.values.numpy(), [1.0, 0.0, 5.0])
        np.testing.assert_array_equal(tf.abs(tf.constant([-1.0])).numpy(), [1.0])
        np.testing.assert_array_equal(tf.add(1.0, 2.0).numpy(), 3.0)
    finally:
        tf.experimental.unregister_dispatch_for(unary)
        tf.experimental.unregister_dispatch_for(binary)
    with pytest.raises((TypeError, ValueError)):
        tf.abs(x)
    with pytest.raises(ValueError, match="not registered"):
        tf.experimental.unregister_dispatch_for(unary)

