"""ZeroPadding2D, Cropping2D, UpSampling2D, RepeatVector, Permute: PyTorch/NumPy, gradients."""

import numpy as np
import pytest
from layer_checks import check_layer_grads

import tapeflow as tf
from tapeflow.keras import backend, layers


@pytest.fixture(autouse=True)
def _fresh_names():
    backend.clear_session()


X = np.random.default_rng(0).standard_normal((2, 5, 4, 3))


def _nchw(a):
    return a.transpose(0, 3, 1, 2)


@pytest.mark.parametrize("padding,pairs", [(1, ((1, 1), (1, 1))), ((2, 0), ((2, 2), (0, 0))),
                                           (((1, 2), (0, 3)), ((1, 2), (0, 3)))])
def test_zero_padding2d_matches_torch(padding, pairs):
    torch = pytest.importorskip("torch")
    layer = layers.ZeroPadding2D(padding, dtype="float64")
    out = layer(X).numpy()
    (top, bottom), (left, right) = pairs
    ref = torch.nn.functional.pad(torch.tensor(_nchw(X)), (left, right, top, bottom)).numpy()
    np.testing.assert_array_equal(out, ref.transpose(0, 2, 3, 1))
    assert layer.padding == pairs
    assert tuple(layer.compute_output_shape(X.shape)) == out.shape


@pytest.mark.parametrize("cropping,pairs", [(1, ((1, 1), (1, 1))), ((2, 0), ((2, 2), (0, 0))),
                                            (((0, 2), (1, 0)), ((0, 2), (1, 0)))])
def test_cropping2d_matches_numpy_slicing(cropping, pairs):
    layer = layers.Cropping2D(cropping, dtype="float64")
    out = layer(X).numpy()
    (top, bottom), (left, right) = pairs
    np.testing.assert_array_equal(out, X[:, top:5 - bottom, left:4 - right])
    assert tuple(layer.compute_output_shape(X.shape)) == out.shape


@pytest.mark.parametrize("size", [2, (3, 1), (1, 2)])
def test_upsampling2d_matches_torch_nearest_with_gradients(size):
    torch = pytest.importorskip("torch")
    layer = layers.UpSampling2D(size, dtype="float64")
    xt = tf.constant(X)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        out = layer(xt)
        loss = tf.reduce_sum(out * out * out)
    grad = tape.gradient(loss, xt)
    tx = torch.tensor(_nchw(X), requires_grad=True)
    tout = torch.nn.functional.interpolate(tx, scale_factor=layer.size, mode="nearest")
    (tout ** 3).sum().backward()
    np.testing.assert_array_equal(out.numpy(), tout.detach().numpy().transpose(0, 2, 3, 1))
    np.testing.assert_allclose(grad.numpy(), tx.grad.numpy().transpose(0, 2, 3, 1),
                               rtol=1e-12)
    assert tuple(layer.compute_output_shape(X.shape)) == out.shape


def test_repeat_vector_and_permute_match_numpy():
    v = X[:, 0, 0]
    out = layers.RepeatVector(4, dtype="float64")(v).numpy()
    np.testing.assert_array_equal(out, np.repeat(v[:, None], 4, axis=1))
    permute = layers.Permute((3, 1, 2), dtype="float64")
    np.testing.assert_array_equal(permute(X).numpy(), X.transpose(0, 3, 1, 2))
    assert tuple(permute.compute_output_shape((None, 5, 4, 3))) == (None, 3, 5, 4)
    assert tuple(layers.RepeatVector(4).compute_output_shape((None, 3))) == (None, 4, 3)


@pytest.mark.parametrize("make", [
    lambda: layers.ZeroPadding2D(((1, 0), (0, 2)), dtype="float64"),
    lambda: layers.Cropping2D(((1, 0), (0, 1)), dtype="float64"),
    lambda: layers.UpSampling2D((2, 1), dtype="float64"),
    lambda: layers.Permute((2, 3, 1), dtype="float64"),
], ids=["zero_padding", "cropping", "upsampling", "permute"])
def test_gradients_match_finite_differences(make):
    check_layer_grads(make(), X[:1, :3, :3, :2])


def test_repeat_vector_gradient():
    check_layer_grads(layers.RepeatVector(3, dtype="float64"), X[:, 0, 0])


def test_functional_model_summary_fit_graph_and_configs(capsys):
    inputs = tf.keras.Input(shape=(6, 6, 2))
    h = layers.ZeroPadding2D(1)(inputs)
    h = layers.Conv2D(3, 3)(h)
    h = layers.UpSampling2D()(h)
    h = layers.Cropping2D(((1, 1), (2, 2)))(h)
    h = layers.Permute((2, 1, 3))(h)
    outputs = layers.Dense(1)(layers.GlobalAveragePooling2D()(h))
    vec = layers.RepeatVector(2)(outputs)
    model = tf.keras.Model(inputs, [outputs, vec])
    model.summary()
    text = capsys.readouterr().out
    for shape in ["(None, 8, 8, 2)", "(None, 6, 6, 3)", "(None, 12, 12, 3)", "(None, 10, 8, 3)",
                  "(None, 8, 10, 3)", "(None, 2, 1)"]:
        assert shape in text
    assert "Total params: 61" in text  # conv 3*3*2*3 + 3, dense 3 + 1
    x = np.random.default_rng(1).standard_normal((5, 6, 6, 2)).astype(np.float32)
    y = x.mean(axis=(1, 2, 3))[:, None]
    single = tf.keras.Model(inputs, outputs)
    single.compile(optimizer="sgd", loss="mse")
    single.fit(x, y, batch_size=3, epochs=2, verbose=0)
    graph = tf.function(lambda v: model(v))(tf.constant(x))
    for g, e in zip(graph, model(x)):
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-6, atol=1e-7)
    for layer in model.layers[1:]:
        config = layer.get_config()
        clone = type(layer).from_config({**config, "name": layer.name + "_copy"})
        assert {k: v for k, v in clone.get_config().items() if k != "name"} == \
            {k: v for k, v in config.items() if k != "name"}


def test_errors_name_layer_and_shape():
    with pytest.raises(ValueError, match=r"ZeroPadding2D 'zero_padding2d'.*\(5, 4, 3\)"):
        layers.ZeroPadding2D()(X[0])
    with pytest.raises(ValueError, match=r"Cropping2D 'cropping2d'.*leaves nothing.*height"):
        layers.Cropping2D(((3, 2), (0, 0)))(X)
    with pytest.raises(ValueError, match=r"UpSampling2D.*\(2, 5\)"):
        layers.UpSampling2D()(X[:, :, 0, 0])
    with pytest.raises(ValueError, match="bilinear"):
        layers.UpSampling2D(interpolation="bilinear")
    with pytest.raises(ValueError, match=r"RepeatVector 'repeat_vector'.*\(2, 5, 4\)"):
        layers.RepeatVector(2)(X[..., 0])
    with pytest.raises(ValueError, match="permutation"):
        layers.Permute((1, 3))
    with pytest.raises(ValueError, match=r"Permute 'permute_1'.*\(2, 5, 4, 3\)"):
        layers.Permute((2, 1))(X)
    with pytest.raises(ValueError, match="non-negative"):
        layers.ZeroPadding2D(-1)
