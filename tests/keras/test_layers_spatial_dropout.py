"""SpatialDropout2D: whole channels dropped per sample in training, identity otherwise."""

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.keras import backend, layers


@pytest.fixture(autouse=True)
def _fresh_names():
    backend.clear_session()


def test_spatial_dropout2d_drops_whole_channels_and_rescales():
    x = np.random.default_rng(0).uniform(1.0, 2.0, (8, 4, 5, 16))
    layer = layers.SpatialDropout2D(0.5, seed=3, dtype="float64")
    np.testing.assert_array_equal(layer(x).numpy(), x)  # inference: identity
    out = layer(x, training=True).numpy()
    ratio = out / x
    per_map = ratio.reshape(8, 20, 16)
    np.testing.assert_array_equal(per_map, np.broadcast_to(per_map[:, :1], per_map.shape))
    assert set(np.round(np.unique(per_map), 12)) == {0.0, 2.0}
    dropped = (per_map[:, 0] == 0).mean()
    assert 0.25 < dropped < 0.75
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        y = tf.reduce_sum(layer(xt, training=True))
    grad = tape.gradient(y, xt).numpy()
    assert set(np.round(np.unique(grad), 12)) <= {0.0, 2.0}


def test_spatial_dropout2d_in_fit_config_and_errors():
    inputs = tf.keras.Input(shape=(4, 4, 3))
    h = layers.SpatialDropout2D(0.3)(layers.Conv2D(4, 3, padding="same")(inputs))
    model = tf.keras.Model(inputs, layers.Dense(1)(layers.GlobalAveragePooling2D()(h)))
    assert model.count_params() == 3 * 3 * 3 * 4 + 4 + 5
    x = np.random.default_rng(1).standard_normal((5, 4, 4, 3)).astype(np.float32)
    model.compile(optimizer="sgd", loss="mse")
    model.fit(x, x.mean(axis=(1, 2, 3))[:, None], batch_size=2, epochs=1, verbose=0)
    graph = tf.function(lambda v: model(v))(tf.constant(x))  # inference: no dropout
    np.testing.assert_allclose(graph.numpy(), model(x).numpy(), rtol=1e-6, atol=1e-7)
    config = model.layers[2].get_config()
    assert config["rate"] == 0.3 and "noise_shape" not in config
    assert layers.SpatialDropout2D.from_config({**config, "name": "again"}).rate == 0.3
    with pytest.raises(ValueError, match=r"SpatialDropout2D 'spatial_dropout2d_1'.*\(2, 3\)"):
        layers.SpatialDropout2D(0.5)(np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match="rate"):
        layers.SpatialDropout2D(1.5)


@pytest.mark.parametrize("cls,shape", [(layers.SpatialDropout1D, (4, 6, 5)),
                                       (layers.SpatialDropout3D, (4, 2, 3, 2, 5))])
def test_spatial_dropout_1d_3d_drop_whole_channels(cls, shape):
    x = np.ones(shape, np.float32)
    out = cls(0.5, seed=1)(x, training=True).numpy()
    per_channel = out.reshape(shape[0], -1, shape[-1])
    assert np.all(per_channel == per_channel[:, :1])  # one draw per (sample, channel)
    assert set(np.unique(out)) <= {0.0, 2.0}
    np.testing.assert_array_equal(cls(0.5)(x, training=False).numpy(), x)
    with pytest.raises(ValueError, match="expected inputs of shape"):
        cls(0.5)(np.ones((2, 3), np.float32))
