"""HashedCrossing: bins from tf.sparse.cross_hashed (FarmHash, as TF), values recorded from
tf_keras 2.21, shapes, one-hot, eager vs tf.function, configs, errors."""

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.keras import backend, layers


@pytest.fixture(autouse=True)
def _fresh_names():
    backend.clear_session()


def test_bins_match_cross_hashed_and_tf_keras():
    layer = layers.HashedCrossing(num_bins=5)
    ints, strs = np.array([1, 2, 3]), np.array(["a", "b", "c"])
    got = layer((ints, strs))
    want = tf.sparse.to_dense(tf.sparse.cross_hashed(
        [tf.reshape(ints, [-1, 1]), tf.reshape(strs, [-1, 1])], 5))
    np.testing.assert_array_equal(got.numpy(), want.numpy()[:, 0])
    assert got.dtype == tf.int64 and got.numpy().tolist() == [0, 4, 3]  # tf_keras 2.21
    assert layer((np.array([[1], [2]]), np.array([[4], [5]]))).numpy().tolist() == [[0], [3]]
    assert int(layer((tf.constant(1), tf.constant("x")))) == 4  # tf_keras 2.21
    three = layers.HashedCrossing(num_bins=1000)((np.array([7, 8]), np.array([9, 10]),
                                                  np.array(["p", "q"])))
    assert three.numpy().tolist() == [869, 335]  # tf_keras 2.21


def test_one_hot_traced_and_config():
    layer = layers.HashedCrossing(num_bins=4, output_mode="one_hot")
    inputs = (np.array([1, 2, 3]), np.array(["a", "b", "c"]))
    got = layer(inputs)
    assert got.dtype == tf.float32 and got.shape == (3, 4)
    np.testing.assert_array_equal(got.numpy(), np.eye(4)[[1, 1, 3]])  # tf_keras 2.21
    np.testing.assert_array_equal(layer((tf.constant(1), tf.constant("x"))).numpy(),
                                  [0, 0, 0, 1])
    traced = tf.function(lambda a, b: layer((a, b)))
    np.testing.assert_array_equal(traced(tf.constant(inputs[0]), tf.constant(inputs[1])).numpy(),
                                  got.numpy())
    assert layer.compute_output_shape([(None, 1), (None, 1)]).as_list() == [None, 4]
    config = layer.get_config()
    assert config == {"name": "hashed_crossing", "trainable": True, "dtype": "float32",
                      "num_bins": 4, "output_mode": "one_hot", "sparse": False}
    assert layers.HashedCrossing.from_config(config).get_config() == config
    ds = tf.data.Dataset.from_tensor_slices(inputs).batch(3).map(lambda a, b: layer((a, b)))
    np.testing.assert_array_equal(next(iter(ds)).numpy(), got.numpy())


def test_errors_name_the_layer_and_inputs():
    layer = layers.HashedCrossing(3)
    with pytest.raises(ValueError, match="should be called on a list or tuple of inputs"):
        layer(np.array([1]))
    with pytest.raises(ValueError, match="should be called on at least two inputs"):
        layer([np.array([1])])
    with pytest.raises(ValueError, match="should have an integer or string dtype"):
        layer((np.array([1.0]), np.array([2.0])))
    with pytest.raises(ValueError, match=r"should have shape `\[\]`, `\[batch_size\]`"):
        layer((np.array([[1, 2]]), np.array([[1, 2]])))
    with pytest.raises(ValueError, match="should have equal shape"):
        layer((np.array([1, 2]), np.array([1])))
    with pytest.raises(ValueError, match="`dtype` should be an integer type"):
        layers.HashedCrossing(3, dtype="float32")
    with pytest.raises(ValueError, match="output_mode"):
        layers.HashedCrossing(3, output_mode="count")
