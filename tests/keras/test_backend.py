"""``tf.keras.backend`` (issue 19 item 8): session state and the tensor functions, against values
recorded with tf-keras 2.21 by reference/make_backend_values.py (same inputs, same expressions)."""

import importlib.util
import os

import numpy as np
import pytest

import tapeflow as tf
from tapeflow import keras

K = keras.backend
_spec = importlib.util.spec_from_file_location(
    "make_backend_values", os.path.join(os.path.dirname(__file__), "reference",
                                        "make_backend_values.py"))
REF = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(REF)

TF_VALUES = {
    'mean_axis1': [0.5, 0.333333],
    'sum_keep': [[2.0, -0.75, 1.25]],
    'max_all': 2.0,
    'std_axis0': [0.5, 0.625, 1.375],
    'var_all': 1.180556,
    'sqrt_neg': [[0.707107, 0.0, 1.414214], [1.224745, 0.5, 0.0]],
    'clip': [[0.5, -0.5, 1.0], [1.0, 0.25, -0.5]],
    'clip_inverted': [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]],
    'pow': [[0.353553, 1.0, 2.828427], [1.837117, 0.125, 0.649519]],
    'relu_all': [[0.5, -0.13, 1.2], [1.2, -0.005, -0.105]],
    'softmax': [[0.17529, 0.039113, 0.785597], [0.71844, 0.205837, 0.075723]],
    'l2_normalize': [[0.218218, -0.436436, 0.872872], [0.884652, 0.147442, -0.442326]],
    'binary_ce': [[0.223143, 0.356675, 0.10536], [0.510825, 0.356675, 0.10536]],
    'categorical_ce': [0.356675, 0.510826],
    'sparse_ce': [0.356675, 0.510826],
    'batch_flatten': [[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]],
    'switch': [[0.5, 0.0, 2.0], [1.5, 0.25, 0.0]],
    'dot': [[5.25, -1.0], [-1.0, 2.875]],
    'concatenate': [[0.5, -1.0, 2.0, 0.2, 0.7, 0.1], [1.5, 0.25, -0.75, 0.6, 0.3, 0.1]],
    'softsign': [[0.333333, -0.5, 0.666667], [0.6, 0.2, -0.428571]],
    'hard_sigmoid': [[0.9, 0.0, 1.0], [1.0, 0.7, 0.0]],
    'cos_sin': [[1.076252, 1.18452, -0.316313], [0.63538, 1.264433, 0.831522]],
    'cumsum': [[0.5, -0.5, 1.5], [1.5, 1.75, 1.0]],
    'cumprod': [[0.5, -1.0, 2.0], [0.75, -0.25, -1.5]],
    'batch_dot_2d': [[-0.4], [0.9]],
    'batch_dot_3d': (
        [[[0.1, 0.35, 0.05], [-0.2, -0.7, -0.1], [0.4, 1.4, 0.2]],
         [[0.9, 0.45, 0.15], [0.15, 0.075, 0.025], [-0.45, -0.225, -0.075]]]),
    'batch_dot_axes': [[[-0.4]], [[0.9]]],
    'permute': [[[0.5, -1.0, 2.0]], [[1.5, 0.25, -0.75]]],
    'repeat': [[[0.5, -1.0, 2.0], [0.5, -1.0, 2.0]], [[1.5, 0.25, -0.75], [1.5, 0.25, -0.75]]],
    'repeat_elements': [[0.5, 0.5, -1.0, -1.0, 2.0, 2.0], [1.5, 1.5, 0.25, 0.25, -0.75, -0.75]],
    'reverse': [[2.0, -1.0, 0.5], [-0.75, 0.25, 1.5]],
    'tile': [[0.5, -1.0, 2.0], [1.5, 0.25, -0.75], [0.5, -1.0, 2.0], [1.5, 0.25, -0.75]],
    'temporal_padding': (
        [[[0.0], [0.5], [-1.0], [2.0], [0.0], [0.0]],
         [[0.0], [1.5], [0.25], [-0.75], [0.0], [0.0]]]),
    'spatial_2d_padding': (
        [[[[0.0], [0.0], [0.0], [0.0], [0.0]], [[0.0], [0.5], [-1.0], [2.0], [0.0]],
          [[0.0], [1.5], [0.25], [-0.75], [0.0]], [[0.0], [0.0], [0.0], [0.0], [0.0]]]]),
    'one_hot': [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]],
    'arange': [1.0, 3.0, 5.0],
    'in_top_k': [1.0, 1.0],
    'bias_add': [[1.5, 1.0, 5.0], [2.5, 2.25, 2.25]],
    'conv2d': [[[[1.25], [0.5], [1.25]], [[1.75], [-0.5], [-0.75]]]],
    'pool2d': [[[[0.3125], [0.125], [0.625]], [[0.875], [-0.25], [-0.75]]]],
    'batch_norm': [[-0.398804, 0.400383, 0.199974], [0.798804, 0.999617, 2.6e-05]],
    'resize_images': (
        [[[[0.5], [-1.0], [2.0]], [[0.5], [-1.0], [2.0]], [[1.5], [0.25], [-0.75]],
          [[1.5], [0.25], [-0.75]]]]),
    'greater_equal': [[1.0, 0.0, 1.0], [1.0, 0.0, 0.0]],
}


@pytest.mark.parametrize("name", sorted(TF_VALUES))
def test_tensor_functions_match_tf_keras(name):
    X, P, T = (K.constant(a) for a in (REF.X, REF.P, REF.T))  # noqa: F841 (used by eval)
    got = np.asarray(eval(REF.CASES[name]))
    np.testing.assert_allclose(got, np.asarray(TF_VALUES[name]), rtol=1e-5, atol=2e-6)


def test_session_state_functions():
    # recorded with tf-keras 2.21: floatx float32, epsilon 1e-07, channels_last, phase 0
    assert (K.floatx(), K.epsilon(), K.image_data_format()) == ("float32", 1e-7,
                                                                "channels_last")
    assert K.learning_phase() == 0 and K.int_shape(K.zeros((2, 3))) == (2, 3)
    K.set_learning_phase(1)
    assert K.learning_phase() == 1
    K.clear_session()
    assert K.learning_phase() == 0
    try:
        K.set_floatx("float64")
        assert keras.layers.Dense(2).dtype == "float64" and K.zeros((1,)).dtype.name == "float64"
    finally:
        K.set_floatx("float32")
    v = K.variable([1.0, 2.0])
    K.set_value(v, [3.0, 4.0])
    assert K.get_value(v).tolist() == [3.0, 4.0] and K.eval(v * 2).tolist() == [6.0, 8.0]
    assert K.is_keras_tensor(keras.Input((2,))) and not K.is_keras_tensor(v)
    assert K.ndim(v) == 1 and K.dtype(v) == "float32" and K.shape(v).numpy().tolist() == [2]


def test_backend_functions_in_a_custom_loss_trace_and_differentiate():
    def loss(y_true, y_pred):
        return K.mean(K.square(y_pred - y_true), axis=-1) + K.epsilon()

    x = np.random.default_rng(0).normal(size=(16, 3)).astype(np.float32)
    model = keras.Sequential([keras.layers.Dense(1, input_shape=(3,), kernel_initializer="ones")])
    model.compile(keras.optimizers.SGD(0.0), loss=loss)
    y = np.zeros((16, 1), np.float32)
    expected = np.mean(x.sum(1) ** 2) + 1e-7
    assert model.evaluate(x, y, verbose=0) == pytest.approx(expected, rel=1e-5)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        K.nope  # noqa: B018
    assert tf.keras.backend is K


def test_phase_uid_and_update_functions():
    K.reset_uids()
    assert [K.get_uid("dense"), K.get_uid("dense"), K.get_uid("conv")] == [1, 2, 1]
    with K.learning_phase_scope(1):
        assert K.learning_phase() == 1
        assert K.in_train_phase(lambda: "train", "test") == "train"
    assert K.learning_phase() == 0 and K.in_test_phase("test", "train") == "test"
    v = K.variable([1.0, 2.0])
    K.moving_average_update(v, [3.0, 4.0], 0.75)
    np.testing.assert_allclose(K.get_value(v), [1.5, 2.5])
    K.update_add(v, [1.0, 1.0])
    K.update_sub(v, [0.5, 0.5])
    np.testing.assert_allclose(K.get_value(v), [2.0, 3.0])
    np.testing.assert_array_equal(K.get_value(K.eye(2)), np.eye(2, dtype=np.float32))
    assert K.cast_to_floatx([1, 2]).dtype == np.float32
    tf.random.set_seed(0)
    draws = K.get_value(K.random_bernoulli((4000,), p=0.25))
    assert set(np.unique(draws)) == {0.0, 1.0} and abs(draws.mean() - 0.25) < 0.03
    with pytest.raises(ValueError, match="rank >= 2"):
        K.batch_dot(K.constant([1.0]), K.constant([[1.0]]))
