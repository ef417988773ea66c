"""Conv1D and the 1-D pooling layers: PyTorch with matched weights, gradients, shapes, modes."""

import numpy as np
import pytest
from layer_checks import check_layer_grads

import tapeflow as tf
from tapeflow.keras import backend, layers


@pytest.fixture(autouse=True)
def _fresh_names():
    backend.clear_session()


def _tf_pads(n, k, stride, dilation, padding):
    """(left, right) zeros that TF/Keras add along the steps axis before a VALID sweep."""
    span = (k - 1) * dilation + 1
    if padding == "causal":
        return span - 1, 0
    if padding == "same":
        total = max((-(-n // stride) - 1) * stride + span - n, 0)
        return total // 2, total - total // 2
    return 0, 0


CONV1D_CASES = [
    dict(kernel_size=3, strides=1, padding="valid", dilation_rate=1),
    dict(kernel_size=3, strides=1, padding="same", dilation_rate=1),
    dict(kernel_size=4, strides=2, padding="same", dilation_rate=1),
    dict(kernel_size=3, strides=2, padding="valid", dilation_rate=1),
    dict(kernel_size=3, strides=1, padding="same", dilation_rate=2),
    dict(kernel_size=2, strides=1, padding="causal", dilation_rate=1),
    dict(kernel_size=3, strides=1, padding="causal", dilation_rate=2),
    dict(kernel_size=3, strides=2, padding="causal", dilation_rate=1),
]


@pytest.mark.parametrize("case", CONV1D_CASES, ids=lambda c: str(tuple(c.values())))
def test_conv1d_matches_torch_forward_and_gradients(case):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(0).standard_normal((2, 9, 3))
    layer = layers.Conv1D(4, bias_initializer="random_normal", dtype="float64", **case)
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        out = layer(xt)
        loss = tf.reduce_sum(out * out)
    gx, gk, gb = tape.gradient(loss, [xt, layer.kernel, layer.bias])
    kernel, bias = layer.get_weights()
    assert kernel.shape == (case["kernel_size"], 3, 4)
    left, right = _tf_pads(9, case["kernel_size"], case["strides"], case["dilation_rate"],
                           case["padding"])
    tx = torch.tensor(x.transpose(0, 2, 1), requires_grad=True)
    tk = torch.tensor(kernel.transpose(2, 1, 0), requires_grad=True)
    tb = torch.tensor(bias, requires_grad=True)
    tout = torch.nn.functional.conv1d(torch.nn.functional.pad(tx, (left, right)), tk, tb,
                                      stride=case["strides"], dilation=case["dilation_rate"])
    (tout * tout).sum().backward()
    np.testing.assert_allclose(out.numpy(), tout.detach().numpy().transpose(0, 2, 1),
                               rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(gx.numpy(), tx.grad.numpy().transpose(0, 2, 1), rtol=1e-9,
                               atol=1e-10)
    np.testing.assert_allclose(gk.numpy(), tk.grad.numpy().transpose(2, 1, 0), rtol=1e-9)
    np.testing.assert_allclose(gb.numpy(), tb.grad.numpy(), rtol=1e-9)
    assert tuple(layer.compute_output_shape(x.shape)) == out.shape


def test_conv1d_causal_output_ignores_the_future():
    x = np.random.default_rng(1).standard_normal((1, 8, 2))
    layer = layers.Conv1D(3, 3, padding="causal", dilation_rate=2, dtype="float64")
    base = layer(x).numpy()
    later = x.copy()
    later[:, 5:] += 1.0
    moved = layer(later).numpy()
    np.testing.assert_array_equal(moved[:, :5], base[:, :5])
    assert np.abs(moved[:, 5:] - base[:, 5:]).max() > 0


@pytest.mark.parametrize("padding,strides,dilation", [("causal", 1, 2), ("same", 2, 1)])
def test_conv1d_gradients_match_finite_differences(padding, strides, dilation):
    layer = layers.Conv1D(2, 3, strides=strides, padding=padding, dilation_rate=dilation,
                          bias_initializer="random_normal", dtype="float64")
    check_layer_grads(layer, np.random.default_rng(2).standard_normal((1, 6, 2)))


def test_tf_nn_conv1d_is_conv2d_on_a_height_one_image():
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((2, 7, 3)), rng.standard_normal((3, 3, 5))
    out = tf.nn.conv1d(x, w, stride=2, padding="SAME").numpy()
    ref = tf.nn.conv2d(x[:, None], w[None], strides=[1, 2], padding="SAME").numpy()[:, 0]
    np.testing.assert_array_equal(out, ref)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Conv1D: input must be rank 3"):
        tf.nn.conv1d(x[None], w, stride=1, padding="VALID")


def test_conv1d_names_count_config_and_activation():
    layer = layers.Conv1D(8, 5, activation="relu")
    out = layer(np.random.default_rng(4).standard_normal((2, 10, 3)).astype(np.float32))
    assert [v.name for v in layer.weights] == ["conv1d/kernel:0", "conv1d/bias:0"]
    assert layer.count_params() == 5 * 3 * 8 + 8
    assert out.shape == (2, 6, 8) and out.numpy().min() >= 0
    config = layer.get_config()
    assert config["kernel_size"] == (5,) and config["padding"] == "valid"
    assert config["strides"] == (1,) and config["activation"] == "relu"
    no_bias = layers.Conv1D(2, 3, use_bias=False)
    no_bias(np.zeros((1, 4, 3), np.float32))
    assert [v.name for v in no_bias.weights] == ["conv1d_1/kernel:0"]
    again = layers.Conv1D.from_config({**config, "name": "again"})
    assert again.kernel_size == (5,) and again.filters == 8


def _pool_reference(x, size, stride, padding, reduce):
    n, steps, c = x.shape
    if padding == "same":
        left, right = _tf_pads(steps, size, stride, 1, "same")
        x = np.pad(x, ((0, 0), (left, right), (0, 0)), constant_values=np.nan)
    count = (x.shape[1] - size) // stride + 1
    return np.stack([reduce(x[:, i * stride:i * stride + size], axis=1) for i in range(count)],
                    axis=1)


@pytest.mark.parametrize("cls,reduce", [(layers.MaxPooling1D, np.nanmax),
                                        (layers.AveragePooling1D, np.nanmean)])
@pytest.mark.parametrize("pool,strides,padding", [(2, None, "valid"), (3, 2, "same"),
                                                  (3, 1, "valid"), (2, 3, "same")])
def test_pooling1d_matches_reference(cls, reduce, pool, strides, padding):
    x = np.random.default_rng(5).standard_normal((2, 8, 3))
    layer = cls(pool_size=pool, strides=strides, padding=padding, dtype="float64")
    out = layer(x).numpy()
    ref = _pool_reference(x, layer.pool_size[0], layer.strides[0], padding, reduce)
    np.testing.assert_allclose(out, ref, rtol=1e-12)
    assert tuple(layer.compute_output_shape(x.shape)) == out.shape


@pytest.mark.parametrize("cls,torch_name", [(layers.MaxPooling1D, "max_pool1d"),
                                            (layers.AveragePooling1D, "avg_pool1d")])
def test_pooling1d_matches_torch_with_gradients(cls, torch_name):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(6).standard_normal((2, 9, 3))
    layer = cls(pool_size=3, strides=2, dtype="float64")
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        out = layer(xt)
        loss = tf.reduce_sum(out * out)
    gx = tape.gradient(loss, xt)
    tx = torch.tensor(x.transpose(0, 2, 1), requires_grad=True)
    tout = getattr(torch.nn.functional, torch_name)(tx, 3, 2)
    (tout * tout).sum().backward()
    np.testing.assert_allclose(out.numpy(), tout.detach().numpy().transpose(0, 2, 1),
                               rtol=1e-12)
    np.testing.assert_allclose(gx.numpy(), tx.grad.numpy().transpose(0, 2, 1), rtol=1e-12)


@pytest.mark.parametrize("cls", [layers.MaxPooling1D, layers.AveragePooling1D])
def test_pooling1d_gradients_match_finite_differences(cls):
    layer = cls(pool_size=2, strides=1, padding="same", dtype="float64")
    check_layer_grads(layer, np.random.default_rng(7).standard_normal((1, 5, 2)))


def test_global_pooling1d():
    x = np.random.default_rng(8).standard_normal((2, 5, 3)).astype(np.float32)
    np.testing.assert_allclose(layers.GlobalAveragePooling1D()(x).numpy(), x.mean(axis=1),
                               rtol=1e-6)
    np.testing.assert_array_equal(layers.GlobalMaxPooling1D()(x).numpy(), x.max(axis=1))
    kept = layers.GlobalMaxPooling1D(keepdims=True)
    assert kept(x).shape == (2, 1, 3)
    assert tuple(kept.compute_output_shape((None, 5, 3))) == (None, 1, 3)
    check_layer_grads(layers.GlobalAveragePooling1D(dtype="float64"), x[:1].astype(np.float64))
    check_layer_grads(layers.GlobalMaxPooling1D(dtype="float64"), x[:1].astype(np.float64))


def test_conv1d_stack_functional_summary_fit_and_graph(capsys):
    inputs = tf.keras.Input(shape=(12, 2))
    h = layers.Conv1D(4, 3, padding="causal", activation="relu")(inputs)
    h = layers.MaxPooling1D()(h)
    h = layers.Conv1D(5, 3, strides=2, padding="same")(h)
    h = layers.AveragePooling1D(2, padding="same")(h)
    outputs = layers.Dense(1)(layers.GlobalAveragePooling1D()(h))
    model = tf.keras.Model(inputs, outputs)
    model.summary()
    text = capsys.readouterr().out
    for shape in ["(None, 12, 4)", "(None, 6, 4)", "(None, 3, 5)", "(None, 2, 5)", "(None, 5)"]:
        assert shape in text
    total = (3 * 2 * 4 + 4) + (3 * 4 * 5 + 5) + (5 + 1)
    assert f"Total params: {total:,}" in text
    x = np.random.default_rng(9).standard_normal((10, 12, 2)).astype(np.float32)
    y = x[:, :, 0].mean(axis=1, keepdims=True)
    model.compile(optimizer="adam", loss="mse")
    model.fit(x, y, batch_size=4, epochs=2, verbose=0)  # 4 + 4 + 2: a None-batch retrace
    graph = tf.function(lambda v: model(v))(tf.constant(x))
    np.testing.assert_allclose(graph.numpy(), model(x).numpy(), rtol=1e-5, atol=1e-6)


def test_conv1d_and_pooling1d_errors_name_layer_and_shape():
    with pytest.raises(ValueError, match=r'layer "conv1d" .*expected min_ndim=3, found ndim=2. '
                                         r"Full shape received: \(2, 5\)"):  # tf-keras's
        layers.Conv1D(2, 3)(np.zeros((2, 5), np.float32))
    with pytest.raises(ValueError, match="'causal'"):
        layers.Conv2D(2, 3, padding="causal")
    with pytest.raises(ValueError, match="kernel_size"):
        layers.Conv1D(2, (3, 3))
    with pytest.raises(ValueError, match=r"MaxPooling1D.*batch, steps, channels.*\(2, 4, 4, 1\)"):
        layers.MaxPooling1D()(np.zeros((2, 4, 4, 1), np.float32))
    with pytest.raises(ValueError, match=r"GlobalAveragePooling1D.*\(2, 4\)"):
        layers.GlobalAveragePooling1D()(np.zeros((2, 4), np.float32))
