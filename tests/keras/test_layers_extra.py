"""Depthwise/separable convs, Conv1DTranspose, Dot, PReLU, ThresholdedReLU, Unit/Group
normalization, 1-D padding/cropping/upsampling, ActivityRegularization and AlphaDropout:
outputs and gradients vs values recorded from tf-keras 2.21
(reference/make_extra_layer_values.py), float64 finite differences, eager vs tf.function."""

import importlib.util
import os

import numpy as np
import pytest
from layer_checks import check_layer_grads

import tapeflow as tf

_spec = importlib.util.spec_from_file_location(
    "make_extra_layer_values", os.path.join(os.path.dirname(__file__), "reference",
                                            "make_extra_layer_values.py"))
_ref = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_ref)
CASES, PATH = _ref.CASES, _ref.PATH

L = tf.keras.layers
REF = np.load(PATH)


def _build(name, dtype="float32"):
    cls, kwargs, shapes = CASES[name]
    multi = isinstance(shapes, list)
    xs = [REF[f"{name}/x{i}"].astype(dtype) for i in range(len(shapes) if multi else 1)]
    layer = getattr(L, cls)(**kwargs, dtype=dtype)
    layer.build([x.shape for x in xs] if multi else xs[0].shape)
    layer.set_weights([REF[f"{name}/w{i}"].astype(dtype)
                       for i in range(len(layer.get_weights()))])
    return layer, xs, multi


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_tf_keras(name):
    layer, xs, multi = _build(name)
    ts = [tf.constant(x) for x in xs]
    with tf.GradientTape() as tape:
        for t in ts:
            tape.watch(t)
        y = layer(ts if multi else ts[0])
        s = tf.reduce_sum(y * tf.constant(REF[f"{name}/cot"]))
    grads = tape.gradient(s, ts + layer.trainable_weights)
    np.testing.assert_allclose(y.numpy(), REF[f"{name}/y"], rtol=1e-4, atol=1e-5)
    assert tuple(layer.compute_output_shape([x.shape for x in xs] if multi else xs[0].shape)) \
        == REF[f"{name}/y"].shape
    for i in range(len(xs)):
        np.testing.assert_allclose(grads[i].numpy(), REF[f"{name}/dx{i}"], rtol=1e-4, atol=1e-5)
    for i, g in enumerate(grads[len(xs):]):
        np.testing.assert_allclose(g.numpy(), REF[f"{name}/dw{i}"], rtol=1e-4, atol=1e-5)
    fn = tf.function(lambda *a: layer(list(a) if multi else a[0]))
    np.testing.assert_allclose(fn(*ts).numpy(), y.numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", ["depthwise_same_stride", "depthwise_dilated", "separable1d",
                                  "conv1d_transpose_same", "group_norm", "prelu_shared",
                                  "conv3d_same_stride", "conv3d_dilated",
                                  "conv3d_transpose_same", "maxpool3d_same", "avgpool3d_same",
                                  "conv_lstm2d_seq"])
def test_float64_finite_differences(name):
    layer, xs, multi = _build(name, "float64")
    check_layer_grads(layer, xs[0], atol=1e-6, rtol=1e-5)


def test_dot_float64_finite_differences():
    layer, (x, y), _ = _build("dot_3d_mixed", "float64")
    cot = np.random.default_rng(1).standard_normal((2, 4, 5))

    def value(a, b):
        return float(np.sum(layer([tf.constant(a), tf.constant(b)]).numpy() * cot))

    tx, ty = tf.constant(x), tf.constant(y)
    with tf.GradientTape() as tape:
        tape.watch(tx)
        tape.watch(ty)
        s = tf.reduce_sum(layer([tx, ty]) * cot)
    gx, gy = tape.gradient(s, [tx, ty])
    for arr, grad, which in ((x, gx, 0), (y, gy, 1)):
        num = np.zeros_like(arr)
        for j in np.ndindex(arr.shape):
            up, down = arr.copy(), arr.copy()
            up[j] += 1e-6
            down[j] -= 1e-6
            pair_up = (up, y) if which == 0 else (x, up)
            pair_down = (down, y) if which == 0 else (x, down)
            num[j] = (value(*pair_up) - value(*pair_down)) / 2e-6
        np.testing.assert_allclose(grad.numpy(), num, atol=1e-6, rtol=1e-5)


def test_weight_names_and_shapes_follow_keras():
    tf.keras.backend.clear_session()
    sep = L.SeparableConv2D(4, 3, depth_multiplier=2)
    sep(np.zeros((1, 8, 8, 3), np.float32))
    assert [(w.name, tuple(w.shape)) for w in sep.weights] == [
        ("separable_conv2d/depthwise_kernel:0", (3, 3, 3, 2)),
        ("separable_conv2d/pointwise_kernel:0", (1, 1, 6, 4)),
        ("separable_conv2d/bias:0", (4,))]
    gn = L.GroupNormalization(groups=2)
    gn(np.zeros((1, 4), np.float32))
    assert [w.name for w in gn.weights] == ["group_normalization/gamma:0",
                                            "group_normalization/beta:0"]


def test_in_a_fitted_model():
    model = tf.keras.Sequential([
        L.Input((8, 8, 3)), L.SeparableConv2D(4, 3, padding="same"),
        L.DepthwiseConv2D(3, strides=2), L.GroupNormalization(groups=2), L.PReLU(),
        L.Reshape((9, 4)), L.ZeroPadding1D(1), L.Conv1DTranspose(2, 2, strides=2),
        L.UpSampling1D(2), L.Cropping1D((1, 1)), L.GlobalAveragePooling1D(), L.Dense(1)])
    x = np.random.default_rng(0).standard_normal((16, 8, 8, 3)).astype(np.float32)
    y = x.mean(axis=(1, 2, 3))[:, None]
    model.compile("adam", "mse")
    history = model.fit(x, y, epochs=3, batch_size=8, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]


def test_volumetric_model_fits():
    model = tf.keras.Sequential([
        L.Input((4, 6, 6, 2)), L.Conv3D(3, 3, padding="same", activation="relu"),
        L.MaxPooling3D(2), L.Conv3DTranspose(2, 2, strides=2), L.ZeroPadding3D(1),
        L.Cropping3D(1), L.UpSampling3D((1, 2, 1)), L.AveragePooling3D((1, 2, 1)),
        L.GlobalAveragePooling3D(), L.Dense(1)])
    assert model.output_shape == (None, 1)
    x = np.random.default_rng(0).standard_normal((8, 4, 6, 6, 2)).astype(np.float32)
    y = x.mean(axis=(1, 2, 3, 4))[:, None]
    model.compile("adam", "mse")
    history = model.fit(x, y, epochs=3, batch_size=4, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]


def test_conv_lstm2d_mask_dropout_and_state():
    layer = L.ConvLSTM2D(2, 3, padding="same", return_state=True, dropout=0.5,
                         recurrent_dropout=0.5)
    x = np.random.default_rng(1).standard_normal((2, 3, 4, 4, 2)).astype(np.float32)
    out, h, c = layer(x)
    np.testing.assert_allclose(out.numpy(), h.numpy())
    masked = layer(x, mask=tf.constant([[True, True, False], [True, True, False]]))[0]
    np.testing.assert_allclose(masked.numpy(), layer(x[:, :2])[0].numpy(), rtol=1e-6)
    assert not np.allclose(layer(x, training=True)[0].numpy(), out.numpy())
    config = layer.get_config()
    assert L.ConvLSTM2D.from_config(config).get_config() == config
    assert layer.name.startswith("conv_lstm2d")


def test_activity_regularization_adds_its_loss():
    layer = L.ActivityRegularization(l1=0.1, l2=0.01)
    x = np.array([[1.0, -2.0], [3.0, 0.5]], np.float32)
    out = layer(tf.constant(x))
    np.testing.assert_array_equal(out.numpy(), x)
    expected = (0.1 * np.abs(x).sum() + 0.01 * (x ** 2).sum()) / 2  # per sample: batch of 2
    np.testing.assert_allclose(float(tf.add_n(layer.losses)), expected, rtol=1e-6)
    assert L.ActivityRegularization.from_config(layer.get_config()).l1 == 0.1


def test_alpha_dropout_keeps_mean_and_variance():
    layer = L.AlphaDropout(0.2, seed=3)
    x = np.random.default_rng(0).standard_normal((400, 500)).astype(np.float32)
    np.testing.assert_array_equal(layer(x, training=False), x)
    out = layer(tf.constant(x), training=True).numpy()
    assert abs(out.mean()) < 0.01 and abs(out.std() - 1.0) < 0.01
    alpha_p = -1.6732632423543772 * 1.0507009873554805
    a = (0.8 * (1 + 0.2 * alpha_p ** 2)) ** -0.5
    dropped = np.isclose(out, a * alpha_p - a * alpha_p * 0.2)
    assert 0.19 < dropped.mean() < 0.21


@pytest.mark.parametrize("make,shape,message", [
    (lambda: L.GroupNormalization(groups=3), (None, 4), "divisible by groups=3"),
    (lambda: L.Dot(axes=1), [(None, 3), (None, 4)], "dimension incompatibility 3 != 4"),
    (lambda: L.Cropping1D((2, 2)), (None, 4, 1), "leaves no steps"),
    (lambda: L.DepthwiseConv2D(3), (None, 5, 5), "expected inputs of shape"),
])
def test_bad_inputs_name_the_layer(make, shape, message):
    with pytest.raises(ValueError, match=message):
        make().build(shape)
