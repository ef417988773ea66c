"""RandomRotation, RandomZoom, RandomTranslation: with fixed factors (lower == upper) the
output equals tf-keras 2.21's (recorded by tests/image/reference/make_projective_values.py);
random draws are seeded, per image, traceable, the identity at inference; configs round-trip."""

import importlib.util
import os

import numpy as np
import pytest

import tapeflow as tf

_spec = importlib.util.spec_from_file_location(
    "make_projective_values", os.path.join(os.path.dirname(__file__), "..", "image",
                                           "reference", "make_projective_values.py"))
ref = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ref)
REF = np.load(ref.PATH)
L = tf.keras.layers


@pytest.mark.parametrize("name", sorted(ref.LAYER_CASES))
def test_fixed_factors_match_tf_keras(name):
    cls, kwargs = ref.LAYER_CASES[name]
    layer = getattr(L, cls)(**kwargs)
    np.testing.assert_allclose(layer(ref.IMAGES, training=True).numpy(), REF[f"layer/{name}"],
                               rtol=1e-5, atol=1e-5)
    single = layer(ref.IMAGES[0], training=True)
    np.testing.assert_allclose(single.numpy(), REF[f"layer/{name}/single"], rtol=1e-5,
                               atol=1e-5)
    np.testing.assert_array_equal(layer(ref.IMAGES, training=False).numpy(), ref.IMAGES)
    clone = getattr(L, cls).from_config(layer.get_config())
    assert clone.get_config() == layer.get_config()


def test_random_draws_are_per_image_seeded_and_traceable():
    images = np.repeat(ref.IMAGES[:1], 4, axis=0)
    layer = L.RandomRotation(0.2, seed=5)
    tf.random.set_seed(1)
    out = layer(images).numpy()  # training defaults to True on a direct call
    assert not np.allclose(out[0], out[1])  # one angle per image
    tf.random.set_seed(1)
    np.testing.assert_array_equal(L.RandomRotation(0.2, seed=5)(images).numpy(), out)
    fn = tf.function(lambda x: L.RandomZoom(0.3, seed=2)(x, training=True),
                     input_signature=[tf.TensorSpec([None, ref.H, ref.W, 3])])
    assert fn(images).shape == images.shape
    ds = tf.data.Dataset.from_tensor_slices(images).batch(2).map(
        lambda x: L.RandomTranslation(0.2, 0.2, seed=3)(x, training=True))
    assert [b.shape for b in ds] == [(2, ref.H, ref.W, 3)] * 2


def test_in_a_model_and_with_fit():
    model = tf.keras.Sequential([L.Input((ref.H, ref.W, 3)), L.RandomRotation(0.1),
                                 L.RandomZoom(0.1), L.RandomTranslation(0.1, 0.1),
                                 L.Flatten(), L.Dense(1)])
    model.compile("sgd", "mse")
    model.fit(ref.IMAGES, np.zeros((2, 1), np.float32), epochs=1, verbose=0)
    np.testing.assert_allclose(model.predict(ref.IMAGES, verbose=0),
                               model(ref.IMAGES, training=False).numpy(), rtol=1e-6)


def test_transform_helpers_and_errors():
    from tapeflow.keras.layers.preprocessing import image_transform as t

    zoom = t.get_zoom_matrix([[2.0, 0.5]], ref.H, ref.W).numpy()
    np.testing.assert_allclose(zoom, [[2.0, 0, -2.5, 0, 0.5, 1.0, 0, 0]])
    moved = t.transform(ref.IMAGES, t.get_translation_matrix([[1.0, 0.0]]),
                        fill_mode="constant").numpy()
    np.testing.assert_allclose(moved[:, :, 1:], ref.IMAGES[:, :, :-1])
    np.testing.assert_array_equal(moved[:, :, 0], 0.0)
    with pytest.raises(ValueError, match="height_factor.*between"):
        L.RandomZoom(1.5)
    with pytest.raises(ValueError, match="upper bound below"):
        L.RandomRotation((0.3, 0.1))
    with pytest.raises(NotImplementedError, match="fill_mode"):
        L.RandomTranslation(0.1, 0.1, fill_mode="mirror")
