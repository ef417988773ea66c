"""Model files written by TensorFlow 2.21 + tf-keras 2.21 (tests/fixtures/keras, made by
tests/fixtures/make_keras_fixtures.py) load in tapeflow and predict what tf-keras predicted."""

import os

import numpy as np
import pytest
import saving_fixtures  # registers fixtures>Scaled and fixtures>TwoLayer

import tapeflow as tf

pytest.importorskip("h5py")
HERE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "keras")
NAMES = ("sequential", "functional", "subclassed", "densenet", "lstm", "nested", "tf_ops",
         "auto_config")
SUBCLASSED = ("subclassed", "auto_config")  # Keras 2 writes no HDF5 file of these
CASES = [(name, ext) for name in NAMES
         for ext in (".keras", ".h5") if not (name in SUBCLASSED and ext == ".h5")]


def _data(name):
    d = np.load(os.path.join(HERE, f"{name}.npz"))
    xs = [d[k] for k in sorted(d.files) if k.startswith("x")]
    return (xs if len(xs) > 1 else xs[0]), d["y"]


@pytest.mark.parametrize("name,ext", CASES)
def test_tf_keras_file_predicts_the_same(name, ext):
    model = tf.keras.models.load_model(os.path.join(HERE, name + ext))
    x, want = _data(name)
    np.testing.assert_allclose(model(x, training=False).numpy(), want, atol=1e-6, rtol=0)
    assert model.optimizer is not None and model.optimizer.name.lower() == "adam"


@pytest.mark.parametrize("name", NAMES)
def test_tf_keras_weights_file_loads(name):
    model = tf.keras.models.load_model(os.path.join(HERE, f"{name}.keras"), compile=False)
    for w in model.weights:
        w.assign(np.zeros(w.shape.as_list(), w.dtype.as_numpy_dtype))
    model.load_weights(os.path.join(HERE, f"{name}.weights.h5"))
    x, want = _data(name)
    np.testing.assert_allclose(model(x, training=False).numpy(), want, atol=1e-6, rtol=0)


def test_layer_structure_matches_tf_keras():
    model = tf.keras.models.load_model(os.path.join(HERE, "densenet.keras"))
    kinds = [type(layer).__name__ for layer in model.layers]
    assert kinds.count("Concatenate") == 4 and kinds.count("BatchNormalization") == 5
    assert model.count_params() == 2941  # tf-keras's count for this model


def test_custom_class_needs_registration_or_custom_objects(tmp_path):
    from tapeflow.keras.saving import object_registration

    registry = object_registration.get_custom_objects()
    saved = registry.pop("fixtures>Scaled")
    try:
        with pytest.raises(ValueError, match="Unknown layer: 'Scaled'"):
            tf.keras.models.load_model(os.path.join(HERE, "functional.keras"))
        model = tf.keras.models.load_model(os.path.join(HERE, "functional.keras"),
                                           custom_objects={"Scaled": saving_fixtures.Scaled})
        with tf.keras.utils.custom_object_scope({"Scaled": saving_fixtures.Scaled}):
            tf.keras.models.load_model(os.path.join(HERE, "functional.h5"))
    finally:
        registry["fixtures>Scaled"] = saved
    x, want = _data("functional")
    np.testing.assert_allclose(model(x).numpy(), want, atol=1e-6)
