"""tf.keras.constraints: Keras 2's formulas, applied after each optimizer update, by name."""

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.keras import constraints

rng = np.random.default_rng(4)
EPS = 1e-7


def _norms(w, axis):
    return np.sqrt(np.sum(w * w, axis=axis, keepdims=True))


@pytest.mark.parametrize("axis", [0, [0, 1, 2]])
def test_constraints_match_keras_formulas(axis):
    w = rng.standard_normal((3, 3, 2, 4)) * 2
    n = _norms(w, tuple(axis) if isinstance(axis, list) else axis)
    expected = {
        constraints.MaxNorm(1.5, axis=axis): w * np.clip(n, 0, 1.5) / (EPS + n),
        constraints.UnitNorm(axis=axis): w / (EPS + n),
        constraints.MinMaxNorm(0.5, 1.0, rate=0.7, axis=axis):
            w * (0.7 * np.clip(n, 0.5, 1.0) + 0.3 * n) / (EPS + n),
        constraints.NonNeg(): w * (w >= 0),
    }
    for constraint, want in expected.items():
        np.testing.assert_allclose(constraint(tf.constant(w)).numpy(), want, rtol=1e-12,
                                   err_msg=repr(constraint))


def test_max_norm_holds_through_fit_and_binds():
    x = rng.standard_normal((64, 5)).astype(np.float32)
    y = (x @ rng.standard_normal((5, 3)) * 4).astype(np.float32)

    def trained(constraint):
        tf.random.set_seed(1)
        model = tf.keras.Sequential([tf.keras.layers.Dense(3, input_shape=(5,),
                                                           kernel_constraint=constraint)])
        model.compile(tf.keras.optimizers.SGD(0.1), "mse")
        model.fit(x, y, batch_size=16, epochs=5, verbose=0)
        return _norms(model.layers[0].kernel.numpy(), 0)

    assert trained(None).max() > 1.0  # without it the columns grow past the bound
    assert trained(constraints.MaxNorm(1.0)).max() <= 1.0 + 1e-5


def test_constraints_by_name_in_layers():
    layer = tf.keras.layers.Dense(4, kernel_constraint="non_neg")
    layer.build((None, 3))
    layer.kernel.assign(-tf.ones((3, 4)))
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(layer(tf.ones((2, 3))))
    opt = tf.keras.optimizers.SGD(0.1)
    opt.apply_gradients(zip(tape.gradient(loss, layer.trainable_variables),
                            layer.trainable_variables))
    np.testing.assert_array_equal(layer.kernel.numpy(), 0.0)
    assert isinstance(constraints.get("max_norm"), constraints.MaxNorm)
    with pytest.raises(ValueError, match="Unknown constraint: 'maxnorm'"):
        tf.keras.layers.Dense(2, kernel_constraint="maxnorm").build((None, 3))


def test_constraint_configs_round_trip():
    for c in (constraints.MaxNorm(3, axis=[0, 1]), constraints.MinMaxNorm(0.1, 2.0, 0.5),
              constraints.UnitNorm(1), constraints.NonNeg()):
        clone = constraints.deserialize(constraints.serialize(c))
        assert type(clone) is type(c) and clone.get_config() == c.get_config()
