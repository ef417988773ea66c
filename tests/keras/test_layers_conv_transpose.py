"""Conv2DTranspose: a scatter-add NumPy definition, PyTorch's ConvTranspose2d, gradients."""

import numpy as np
import pytest
from layer_checks import check_layer_grads

import tapeflow as tf
from tapeflow.keras import backend, layers


@pytest.fixture(autouse=True)
def _fresh_names():
    backend.clear_session()


def conv_transpose_reference(x, kernel, bias, strides, padding, dilation, out_hw):
    """Every input pixel scatters `x[i, j] @ kernel[a, b].T` into the full output, which is
    then cropped as TF's SAME/VALID forward convolution of size `out_hw` would pad it."""
    n, h, w, _ = x.shape
    kh, kw, cout, _ = kernel.shape
    (sh, sw), (dh, dw) = strides, dilation
    full_h, full_w = (h - 1) * sh + (kh - 1) * dh + 1, (w - 1) * sw + (kw - 1) * dw + 1
    full = np.zeros((n, max(full_h, out_hw[0]), max(full_w, out_hw[1]), cout))
    for i in range(h):
        for j in range(w):
            for a in range(kh):
                for b in range(kw):
                    full[:, i * sh + a * dh, j * sw + b * dw] += x[:, i, j] @ kernel[a, b].T
    top = max(full_h - out_hw[0], 0) // 2 if padding == "same" else 0
    left = max(full_w - out_hw[1], 0) // 2 if padding == "same" else 0
    return full[:, top:top + out_hw[0], left:left + out_hw[1]] + bias


CASES = [  # (kernel_size, strides, padding, dilation_rate, output_padding, expected out h, w)
    (3, 1, "same", 1, None, (5, 4)),
    (3, 2, "same", 1, None, (10, 8)),
    (4, 2, "same", 1, None, (10, 8)),
    (3, 2, "valid", 1, None, (11, 9)),
    (2, 3, "valid", 1, None, (15, 12)),
    ((3, 2), (2, 1), "valid", 1, None, (11, 5)),
    (3, 1, "valid", 2, None, (9, 8)),
    (3, 2, "same", 1, 1, (10, 8)),
    (3, 2, "valid", 1, (1, 0), (12, 9)),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_conv2d_transpose_matches_scatter_definition(case):
    kernel_size, strides, padding, dilation, output_padding, expected = case
    x = np.random.default_rng(0).standard_normal((2, 5, 4, 3))
    layer = layers.Conv2DTranspose(2, kernel_size, strides=strides, padding=padding,
                                   dilation_rate=dilation, output_padding=output_padding,
                                   bias_initializer="random_normal", dtype="float64")
    out = layer(x).numpy()
    kernel, bias = layer.get_weights()
    assert kernel.shape == layer.kernel_size + (2, 3)  # (kh, kw, filters, in_channels)
    assert out.shape == (2, *expected, 2)
    ref = conv_transpose_reference(x, kernel, bias, layer.strides, padding,
                                   layer.dilation_rate, expected)
    np.testing.assert_allclose(out, ref, rtol=1e-10, atol=1e-12)
    assert tuple(layer.compute_output_shape(x.shape)) == out.shape


@pytest.mark.parametrize("kernel_size,strides,padding,torch_padding,torch_output_padding", [
    (3, 1, "same", 1, 0), (4, 2, "same", 1, 0), (3, 2, "valid", 0, 0), (2, 3, "valid", 0, 1)])
def test_conv2d_transpose_matches_torch_with_gradients(kernel_size, strides, padding,
                                                      torch_padding, torch_output_padding):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(1).standard_normal((2, 4, 5, 3))
    layer = layers.Conv2DTranspose(4, kernel_size, strides=strides, padding=padding,
                                   bias_initializer="random_normal", dtype="float64")
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        out = layer(xt)
        loss = tf.reduce_sum(out * out)
    gx, gk, gb = tape.gradient(loss, [xt, layer.kernel, layer.bias])
    kernel, bias = layer.get_weights()
    tx = torch.tensor(x.transpose(0, 3, 1, 2), requires_grad=True)
    tk = torch.tensor(kernel.transpose(3, 2, 0, 1), requires_grad=True)  # (in, out, kh, kw)
    tb = torch.tensor(bias, requires_grad=True)
    tout = torch.nn.functional.conv_transpose2d(tx, tk, tb, stride=strides,
                                                padding=torch_padding,
                                                output_padding=torch_output_padding)
    (tout * tout).sum().backward()
    np.testing.assert_allclose(out.numpy(), tout.detach().numpy().transpose(0, 2, 3, 1),
                               rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(gx.numpy(), tx.grad.numpy().transpose(0, 2, 3, 1), rtol=1e-9)
    np.testing.assert_allclose(gk.numpy(), tk.grad.numpy().transpose(2, 3, 1, 0), rtol=1e-9)
    np.testing.assert_allclose(gb.numpy(), tb.grad.numpy(), rtol=1e-9)


@pytest.mark.parametrize("padding,strides", [("same", 2), ("valid", 1)])
def test_conv2d_transpose_gradients_match_finite_differences(padding, strides):
    layer = layers.Conv2DTranspose(2, 3, strides=strides, padding=padding,
                                   bias_initializer="random_normal", dtype="float64")
    check_layer_grads(layer, np.random.default_rng(2).standard_normal((1, 3, 2, 2)))


def test_conv2d_transpose_names_count_config():
    layer = layers.Conv2DTranspose(8, 3, strides=2, padding="same", activation="relu")
    out = layer(np.random.default_rng(3).standard_normal((1, 4, 4, 5)).astype(np.float32))
    assert [v.name for v in layer.weights] == ["conv2d_transpose/kernel:0",
                                               "conv2d_transpose/bias:0"]
    assert layer.count_params() == 3 * 3 * 8 * 5 + 8
    assert out.shape == (1, 8, 8, 8) and out.numpy().min() >= 0
    config = layer.get_config()
    assert config["strides"] == (2, 2) and config["output_padding"] is None
    assert config["padding"] == "same" and config["activation"] == "relu"
    assert layers.Conv2DTranspose.from_config({**config, "name": "t2"}).filters == 8


def test_conv2d_transpose_decoder_functional_summary_fit_and_graph(capsys):
    inputs = tf.keras.Input(shape=(8, 8, 1))
    h = layers.Conv2D(4, 3, strides=2, padding="same", activation="relu")(inputs)
    h = layers.Conv2DTranspose(3, 3, strides=2, padding="same", activation="relu")(h)
    outputs = layers.Conv2DTranspose(1, 2, padding="valid", use_bias=False)(h)
    model = tf.keras.Model(inputs, outputs)
    model.summary()
    text = capsys.readouterr().out
    assert "(None, 4, 4, 4)" in text and "(None, 8, 8, 3)" in text
    assert "(None, 9, 9, 1)" in text
    total = (3 * 3 * 1 * 4 + 4) + (3 * 3 * 3 * 4 + 3) + 2 * 2 * 1 * 3
    assert f"Total params: {total:,}" in text
    x = np.random.default_rng(4).standard_normal((6, 8, 8, 1)).astype(np.float32)
    y = np.random.default_rng(5).standard_normal((6, 9, 9, 1)).astype(np.float32)
    model.compile(optimizer="sgd", loss="mse")
    model.fit(x, y, batch_size=4, epochs=2, verbose=0)
    graph = tf.function(lambda v: model(v))(tf.constant(x))
    np.testing.assert_allclose(graph.numpy(), model(x).numpy(), rtol=1e-5, atol=1e-6)


def test_conv2d_transpose_errors():
    with pytest.raises(ValueError, match=r'layer "conv2d_transpose" .*expected min_ndim=4.*'
                                         r"\(2, 4, 3\)"):  # tf-keras's message
        layers.Conv2DTranspose(2, 3)(np.zeros((2, 4, 3), np.float32))
    with pytest.raises(ValueError, match="output_padding"):
        layers.Conv2DTranspose(2, 3, strides=2, output_padding=2)
    with pytest.raises(ValueError, match="dilation"):
        layers.Conv2DTranspose(2, 3, strides=2, dilation_rate=2)
