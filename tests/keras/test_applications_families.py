"""The applications added to the first eight (ResNet101/152 and their V2s, DenseNet169/201,
EfficientNetB1..B7, VGG19, MobileNet, MobileNetV3Small/Large, EfficientNetV2B0..B3/S/M/L,
ConvNeXtTiny..XLarge, InceptionResNetV2) against tf-keras 2.21: per case
recorded by reference/make_applications_families_reference.py, the model's name, every
layer's name, class, parameter count and weight shapes in model order, the weight names, the
totals and the output shape. One model per family also runs eagerly and under tf.function,
and loads a tf-keras-written weight file (reference/make_applications_families_weights.py),
after which it computes what tf-keras computed. Each model is built once, on a small input."""

import gzip
import json
import os

import numpy as np
import pytest

import tapeflow as tf
from tapeflow import keras
from tapeflow.keras import applications

HERE = os.path.join(os.path.dirname(__file__), "reference")
REF = json.load(gzip.open(os.path.join(HERE, "applications_families_reference.json.gz"), "rt"))
WEIGHTS = os.path.join(HERE, "applications_families")
OUTPUTS = np.load(os.path.join(WEIGHTS, "outputs.npz"))
# one case per family: run eagerly and traced; load tf-keras's file, compare up to this layer
FAMILY = {
    "ResNet101/top32": None,
    "ResNet152V2/top32": "conv2_block3_out",
    "DenseNet169/top32": "conv2_block1_concat",
    "EfficientNetB1/top32": "block2a_project_bn",
    "VGG19/notop_avg": "block1_pool",
    "MobileNet/alpha0.25_dm2_classes7": "conv_pw_6_relu",
    "MobileNetV3Small/top32": "expanded_conv_4/Add",
    "MobileNetV3Large/minimalistic_nodropout_linear": None,
    "EfficientNetV2B0/top32": "block2b_add",
    "EfficientNetV2S/notop_max": None,
    "ConvNeXtTiny/top32": "convnext_tiny_stage_0_block_1_layer_scale",
    "InceptionResNetV2/notop_avg": "activation_3",
}
# VGG19 at 224x224 (143.7M parameters), ConvNeXt Base/Large/XLarge (89M-350M: 4-16 s each)
SLOW = {"VGG19/top", "ConvNeXtBase/top32", "ConvNeXtLarge/top32", "ConvNeXtXLarge/top32"}


def _build(key):
    ref = REF[key]
    kwargs = dict(ref["kwargs"])
    if "input_shape" in kwargs:
        kwargs["input_shape"] = tuple(kwargs["input_shape"])
    keras.backend.clear_session()
    tf.random.set_seed(0)
    return getattr(applications, ref["model"])(weights=None, **kwargs)


def _check_architecture(model, ref):
    assert model.name == ref["name"]
    assert [[layer.name, type(layer).__name__, layer.count_params(),
             [w.shape.as_list() for w in layer.weights]] for layer in model.layers] == \
        ref["layers"]
    assert sorted([w.name, w.shape.as_list()] for w in model.weights) == sorted(ref["weights"])
    assert model.count_params() == ref["params"]
    assert sum(int(np.prod(w.shape.as_list())) for w in model.trainable_weights) == \
        ref["trainable"]
    assert list(model.output_shape) == ref["output_shape"]


def _check_eager_equals_traced(model):
    shape = [2] + [d or 32 for d in model.input_shape[1:]]
    x = np.random.default_rng(0).uniform(0, 255, shape).astype("float32")
    eager = model(x, training=False).numpy()
    traced = tf.function(lambda t: model(t, training=False))(tf.constant(x)).numpy()
    assert np.isfinite(eager).all()
    np.testing.assert_allclose(traced, eager, rtol=1e-5, atol=1e-5)


def _check_keras_weight_file(model, key, last):
    slug = key.replace("/", "_")
    before = [w.numpy() for w in model.get_layer(last).weights] if \
        model.get_layer(last).weights else None
    model.load_weights(os.path.join(WEIGHTS, slug + ".h5"), by_name=True)
    if before is not None:
        assert any(not np.array_equal(b, w.numpy())
                   for b, w in zip(before, model.get_layer(last).weights))
    sub = keras.Model(model.input, model.get_layer(last).output)
    y, expected = sub(OUTPUTS[slug + "/x"], training=False).numpy(), OUTPUTS[slug + "/y"]
    # 1e-4 of the output's scale (VGG19's caffe-preprocessed block1 reaches 216)
    np.testing.assert_allclose(y, expected, rtol=1e-4,
                               atol=1e-4 * max(1.0, float(np.abs(expected).max())))


@pytest.mark.parametrize("key", [k for k in sorted(REF) if k not in SLOW])
def test_model_matches_keras(key):
    model = _build(key)
    _check_architecture(model, REF[key])
    if key in FAMILY:
        _check_eager_equals_traced(model)
        if FAMILY[key] is not None:
            _check_keras_weight_file(model, key, FAMILY[key])


@pytest.mark.slow
@pytest.mark.parametrize("key", sorted(SLOW))
def test_model_matches_keras_full_size(key):
    _check_architecture(_build(key), REF[key])


def test_every_recorded_model_is_exported():
    names = {ref["model"] for ref in REF.values()}
    assert names <= set(dir(applications))
    assert applications.resnet.ResNet152 is applications.ResNet152
    assert applications.resnet_v2.ResNet101V2 is applications.ResNet101V2
    assert applications.densenet.DenseNet201 is applications.DenseNet201
    assert applications.efficientnet.EfficientNetB7 is applications.EfficientNetB7
    assert applications.EfficientNetB5.__name__ == "EfficientNetB5"
    assert applications.vgg19.VGG19 is applications.VGG19
    assert applications.mobilenet.MobileNet is applications.MobileNet
    assert applications.mobilenet_v3.MobileNetV3Large is applications.MobileNetV3Large
    assert applications.efficientnet_v2.EfficientNetV2S is applications.EfficientNetV2S
    assert applications.convnext.ConvNeXtXLarge.__name__ == "ConvNeXtXLarge"
    for module in ("mobilenet", "mobilenet_v3", "vgg19", "resnet", "resnet_v2", "convnext",
                   "efficientnet_v2", "inception_resnet_v2"):
        assert callable(getattr(applications, module).decode_predictions)


def test_preprocess_input_of_the_new_modules():
    x = np.array([[[[0.0, 127.5, 255.0]]]], np.float32)
    for module in (applications.mobilenet, applications.inception_resnet_v2):
        np.testing.assert_allclose(module.preprocess_input(x.copy()), [[[[-1.0, 0.0, 1.0]]]])
    np.testing.assert_allclose(applications.vgg19.preprocess_input(x.copy()),
                               [[[[255.0 - 103.939, 127.5 - 116.779, 0.0 - 123.68]]]], rtol=1e-6)
    assert applications.mobilenet_v3.preprocess_input(x) is x
    assert applications.efficientnet.preprocess_input(x) is x
    assert applications.efficientnet_v2.preprocess_input(x) is x
    assert applications.convnext.preprocess_input(x) is x


@pytest.mark.parametrize("build, expected", [
    (lambda: applications.ResNet152V2(include_top=False, input_shape=(32, 32, 3)),
     "resnet/resnet152v2_weights_tf_dim_ordering_tf_kernels_notop.h5"),
    (lambda: applications.ResNet101(include_top=False, input_shape=(32, 32, 3)),
     "resnet/resnet101_weights_tf_dim_ordering_tf_kernels_notop.h5"),
    (lambda: applications.DenseNet169(include_top=False, input_shape=(32, 32, 3)),
     "densenet/densenet169_weights_tf_dim_ordering_tf_kernels_notop.h5"),
    (lambda: applications.VGG19(include_top=False, input_shape=(32, 32, 3)),
     "vgg19/vgg19_weights_tf_dim_ordering_tf_kernels_notop.h5"),
    (lambda: applications.EfficientNetB2(include_top=False, input_shape=(32, 32, 3)),
     "keras-applications/efficientnetb2_notop.h5"),
    (lambda: applications.MobileNet(alpha=0.5, include_top=False, input_shape=(32, 32, 3)),
     "mobilenet/mobilenet_5_0_224_tf_no_top.h5"),
    (lambda: applications.MobileNet(alpha=0.25, input_shape=(160, 160, 3)),
     "mobilenet/mobilenet_2_5_160_tf.h5"),
    (lambda: applications.MobileNetV3Large(minimalistic=True, include_top=False),
     "mobilenet_v3/weights_mobilenet_v3_large_minimalistic_224_1.0_float_no_top_v2.h5"),
    (lambda: applications.MobileNetV3Small(alpha=0.75),
     "mobilenet_v3/weights_mobilenet_v3_small_224_0.75_float.h5"),
    (lambda: applications.EfficientNetV2B1(include_top=False, input_shape=(32, 32, 3)),
     "efficientnet_v2/efficientnetv2-b1_notop.h5"),
    (lambda: applications.ConvNeXtTiny(include_top=False, input_shape=(32, 32, 3)),
     "convnext/convnext_tiny_notop.h5"),
    (lambda: applications.InceptionResNetV2(include_top=False, input_shape=(75, 75, 3)),
     "inception_resnet_v2/inception_resnet_v2_weights_tf_dim_ordering_tf_kernels_notop.h5"),
])
def test_imagenet_weights_are_keras_files(build, expected, monkeypatch):
    """weights="imagenet" asks get_file for Keras's file name and address (nothing is
    downloaded here: get_file is replaced)."""
    from tapeflow.keras import utils

    asked = []

    class Asked(Exception):
        pass

    def get_file(name, url, cache_subdir):
        asked.append((name, url, cache_subdir))
        raise Asked

    monkeypatch.setattr(utils, "get_file", get_file)
    keras.backend.clear_session()
    with pytest.raises(Asked):
        build()
    name, url, subdir = asked[0]
    assert url.endswith(expected) and url.endswith("/" + name) and subdir == "models"


def test_arguments_are_checked_as_keras_checks_them():
    with pytest.raises(ValueError, match="depth multiplier must be 1"):
        applications.MobileNet(depth_multiplier=2, include_top=False)
    with pytest.raises(ValueError, match="alpha can be one of"):
        applications.MobileNet(alpha=0.3, include_top=False)
    with pytest.raises(ValueError, match="alpha can be one of `0.75`, `1.0`"):
        applications.MobileNetV3Small(alpha=0.75, minimalistic=True)
    with pytest.raises(ValueError, match="at least 32x32"):
        applications.MobileNetV3Small(weights=None, input_shape=(16, 16, 3))
    with pytest.raises(ValueError, match="Unknown argument"):
        applications.MobileNet(weights=None, depth=3)
    with pytest.raises(ValueError, match="at least 75x75"):
        applications.InceptionResNetV2(weights=None, include_top=False, input_shape=(64, 64, 3))


def test_mobilenet_v3_input_tensor_and_dynamic_size():
    keras.backend.clear_session()
    inp = keras.Input((40, 40, 3))
    model = applications.MobileNetV3Small(alpha=0.75, minimalistic=True, weights=None,
                                          input_tensor=inp, include_top=False, pooling="avg")
    assert model.inputs[0] is inp
    assert model.output_shape == (None, 432)
    keras.backend.clear_session()
    model = applications.MobileNetV3Small(alpha=0.75, minimalistic=True, weights=None,
                                          classes=3)  # the top is convolutional: any size
    assert model.input_shape == (None, None, None, 3)
    assert model(np.zeros((1, 64, 48, 3), np.float32)).shape == (1, 3)


def test_convnext_stochastic_depth_drops_whole_samples():
    from tapeflow.keras.applications.convnext import StochasticDepth

    x = np.ones((64, 3, 3, 4), np.float32)
    layer = StochasticDepth(0.25)
    np.testing.assert_array_equal(layer(x, training=False).numpy(), x)
    tf.random.set_seed(0)
    y = layer(x, training=True).numpy()
    per_sample = y.reshape(64, -1)
    assert set(np.unique(per_sample)) <= {0.0, np.float32(1 / 0.75)}
    assert (per_sample == per_sample[:, :1]).all()  # a sample is kept or dropped whole
    assert 0 < (per_sample[:, 0] == 0).sum() < 64
    keras.backend.clear_session()
    model = applications.convnext.build("tiny", "convnext_tiny", False, True, None, None,
                                        (32, 32, 3), None, 1000, None, drop_path_rate=0.1)
    names = [layer.name for layer in model.layers if isinstance(layer, StochasticDepth)]
    assert len(names) == 17 and names[0] == "convnext_tiny_stage_0_block_1_stochastic_depth"
