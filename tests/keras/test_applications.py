"""tf.keras.applications: Keras's layer names, classes, parameter counts and weight shapes
(recorded from tf-keras 2.21 by reference/make_applications_reference.py), weight files loaded
by layer name (one made by tf-keras: reference/make_applications_fixture.py), preprocessing and
decode_predictions. The small builds run in CI; the full-size ones are slow-marked."""

import gzip
import json
import os

import numpy as np
import pytest

import tapeflow as tf
from tapeflow import keras
from tapeflow.keras import applications

HERE = os.path.join(os.path.dirname(__file__), "reference")
REF = json.load(gzip.open(os.path.join(HERE, "applications_reference.json.gz"), "rt"))
SMALL = {"Xception": (71, 71, 3), "InceptionV3": (75, 75, 3)}
FAST = ["VGG16/notop_avg", "MobileNetV2/alpha0.35_classes7", "EfficientNetB0/notop_avg"]
ALL = sorted(REF)


def _build(key):
    name, case = key.split("/")
    keras.backend.clear_session()
    if case == "top":
        kwargs = {}
    elif case == "notop_avg":
        kwargs = {"include_top": False, "pooling": "avg",
                  "input_shape": SMALL.get(name, (32, 32, 3))}
    else:
        kwargs = {"alpha": 0.35, "classes": 7, "input_shape": (96, 96, 3)}
    return getattr(applications, name)(weights=None, **kwargs)


def _check_matches_keras(key):
    model, ref = _build(key), REF[key]
    assert model.name == ref["name"]
    assert [[layer.name, type(layer).__name__, layer.count_params()]
            for layer in model.layers] == ref["layers"]
    assert sorted([w.name, w.shape.as_list()] for w in model.weights) == sorted(ref["weights"])
    assert model.count_params() == ref["params"]
    assert sum(int(np.prod(w.shape.as_list())) for w in model.trainable_weights) == \
        ref["trainable"]
    assert list(model.output_shape) == ref["output_shape"]
    return model


@pytest.mark.parametrize("key", FAST)
def test_architecture_matches_keras(key):
    _check_matches_keras(key)


@pytest.mark.slow
@pytest.mark.parametrize("key", [k for k in ALL if k not in FAST])
def test_architecture_matches_keras_full(key):
    _check_matches_keras(key)


def test_keras_made_weight_file_loads_by_layer_name():
    """tf-keras's own HDF5 file (the MobileNetV2 stem) loads by name, and the stem then
    computes what tf-keras computed (conv, batch norm in inference, ReLU6, depthwise conv)."""
    ref = np.load(os.path.join(HERE, "mobilenetv2_stem_output.npz"))
    keras.backend.clear_session()
    model = applications.MobileNetV2(alpha=0.35, include_top=False, input_shape=(32, 32, 3),
                                     weights=os.path.join(HERE, "mobilenetv2_stem.h5"))
    stem = keras.Model(model.input, model.get_layer("expanded_conv_project_BN").output)
    assert sorted(layer.name for layer in stem.layers if layer.weights) == \
        sorted(ref["layers"].tolist())
    y = stem(ref["x"], training=False).numpy()
    np.testing.assert_allclose(y, ref["y"], rtol=1e-4, atol=1e-4)


def test_own_weight_file_round_trips(tmp_path):
    keras.backend.clear_session()
    tf.random.set_seed(0)
    kwargs = {"alpha": 0.35, "include_top": True, "classes": 3, "input_shape": (32, 32, 3)}
    model = applications.MobileNetV2(weights=None, **kwargs)
    path = str(tmp_path / "mobilenet.h5")
    model.save_weights(path)
    x = np.random.default_rng(0).uniform(0, 255, (2, 32, 32, 3)).astype("float32")
    keras.backend.clear_session()
    tf.random.set_seed(1)
    again = applications.MobileNetV2(weights=path, **kwargs)
    for a, b in zip(model.weights, again.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    np.testing.assert_allclose(again(x, training=False).numpy(),
                               model(x, training=False).numpy(), rtol=1e-6)


def test_arguments_are_checked_as_keras_checks_them():
    with pytest.raises(ValueError, match="`weights` argument should be either"):
        applications.ResNet50(weights="/no/such/file.h5")
    with pytest.raises(ValueError, match="`classes` should be 1000"):
        applications.ResNet50(weights="imagenet", classes=10)
    with pytest.raises(ValueError, match="at least 32x32"):
        applications.VGG16(weights=None, include_top=False, input_shape=(16, 16, 3))
    with pytest.raises(ValueError, match="at least 71x71"):
        applications.Xception(weights=None, include_top=False, input_shape=(64, 64, 3))
    with pytest.raises(ValueError, match="classifier_activation"):
        applications.MobileNetV2(weights=__file__, classifier_activation="relu",
                                 input_shape=(32, 32, 3))


def test_input_tensor_and_pooling():
    keras.backend.clear_session()
    inp = keras.Input((32, 32, 3))
    model = applications.MobileNetV2(alpha=0.35, include_top=False, weights=None,
                                     input_tensor=inp, pooling="max")
    assert model.inputs[0] is inp
    assert type(model.layers[-1]).__name__ == "GlobalMaxPooling2D"
    assert model.output_shape == (None, 1280)
    features = model(np.zeros((2, 32, 32, 3), np.float32))
    assert features.shape == (2, 1280)


def test_preprocess_input_modes():
    x = np.array([[[[0.0, 127.5, 255.0]]]], np.float32)
    np.testing.assert_allclose(applications.resnet_v2.preprocess_input(x.copy()),
                               [[[[-1.0, 0.0, 1.0]]]])
    np.testing.assert_allclose(applications.vgg16.preprocess_input(x.copy()),  # BGR - mean
                               [[[[255.0 - 103.939, 127.5 - 116.779, 0.0 - 123.68]]]], rtol=1e-6)
    torch = (np.array([0.0, 0.5, 1.0]) - [0.485, 0.456, 0.406]) / [0.229, 0.224, 0.225]
    np.testing.assert_allclose(applications.densenet.preprocess_input(x.copy())[0, 0, 0], torch,
                               rtol=1e-5)
    np.testing.assert_array_equal(applications.efficientnet.preprocess_input(x), x)
    out = applications.mobilenet_v2.preprocess_input(tf.constant(x))
    assert isinstance(out, tf.Tensor)
    np.testing.assert_allclose(out.numpy(), [[[[-1.0, 0.0, 1.0]]]])
    ints = applications.resnet50.preprocess_input(np.full((1, 1, 1, 3), 255, np.uint8))
    assert ints.dtype == np.float32


def test_decode_predictions_reads_the_local_class_index(tmp_path, monkeypatch):
    from tapeflow.keras.applications import imagenet_utils

    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    monkeypatch.setattr(imagenet_utils, "_class_index", None)
    preds = np.zeros((1, 1000), np.float32)
    preds[0, [3, 7, 1]] = [0.5, 0.3, 0.2]
    with pytest.raises(FileNotFoundError, match="imagenet_class_index.json"):
        applications.resnet50.decode_predictions(preds)
    (tmp_path / "models").mkdir()
    index = {str(i): [f"n{i:08d}", f"class_{i}"] for i in range(1000)}
    (tmp_path / "models" / "imagenet_class_index.json").write_text(json.dumps(index))
    top = applications.resnet50.decode_predictions(preds, top=3)
    assert [(c, n) for c, n, _ in top[0]] == [("n00000003", "class_3"), ("n00000007", "class_7"),
                                              ("n00000001", "class_1")]
    np.testing.assert_allclose([s for _, _, s in top[0]], [0.5, 0.3, 0.2])
    with pytest.raises(ValueError, match="shape"):
        applications.resnet50.decode_predictions(np.zeros((2, 10)))
