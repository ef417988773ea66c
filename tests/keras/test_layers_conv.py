"""Conv2D and the pooling layers: NumPy references, PyTorch with matched weights, gradients."""

import numpy as np
import pytest
from layer_checks import check_layer_grads

import tapeflow as tf
from tapeflow.keras import backend, layers


@pytest.fixture(autouse=True)
def _fresh_names():
    backend.clear_session()


def _pad_same(x, window, stride, dilation):
    """TF's SAME padding: total = max((ceil(n/s) - 1) * s + span - n, 0), extra at the end."""
    pads = []
    for n, k, s, d in zip(x.shape[1:3], window, stride, dilation):
        span = (k - 1) * d + 1
        total = max((-(-n // s) - 1) * s + span - n, 0)
        pads.append((total // 2, total - total // 2))
    return pads


def conv2d_reference(x, kernel, bias, strides, padding, dilation):
    """Direct-loop NHWC convolution (the definition, no im2col)."""
    kh, kw, _, cout = kernel.shape
    if padding == "same":
        (t, b), (left, r) = _pad_same(x, (kh, kw), strides, dilation)
        x = np.pad(x, ((0, 0), (t, b), (left, r), (0, 0)))
    n, h, w, _ = x.shape
    sh, sw = strides
    dh, dw = dilation
    oh = (h - (kh - 1) * dh - 1) // sh + 1
    ow = (w - (kw - 1) * dw - 1) // sw + 1
    out = np.zeros((n, oh, ow, cout))
    for i in range(oh):
        for j in range(ow):
            patch = x[:, i * sh:i * sh + (kh - 1) * dh + 1:dh, j * sw:j * sw + (kw - 1) * dw + 1:dw]
            out[:, i, j] = np.tensordot(patch, kernel, axes=([1, 2, 3], [0, 1, 2]))
    return out + bias


CONV_CASES = [
    dict(filters=4, kernel_size=3, strides=1, padding="valid", dilation_rate=1),
    dict(filters=3, kernel_size=(3, 2), strides=(2, 1), padding="same", dilation_rate=1),
    dict(filters=2, kernel_size=3, strides=2, padding="valid", dilation_rate=1),
    dict(filters=2, kernel_size=3, strides=1, padding="same", dilation_rate=2),
    dict(filters=5, kernel_size=1, strides=1, padding="valid", dilation_rate=1),
]


@pytest.mark.parametrize("case", CONV_CASES, ids=lambda c: str(tuple(c.values())))
def test_conv2d_matches_direct_loop_reference(case):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 7, 6, 3)).astype(np.float32)
    layer = layers.Conv2D(bias_initializer="random_normal", **case)
    out = layer(x).numpy()
    kernel, bias = layer.get_weights()
    kh, kw = layer.kernel_size
    assert kernel.shape == (kh, kw, 3, case["filters"])
    ref = conv2d_reference(x.astype(np.float64), kernel, bias, layer.strides,
                           case["padding"], layer.dilation_rate)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)
    assert tuple(layer.compute_output_shape(x.shape)) == out.shape


def test_conv2d_names_activation_and_parameter_count():
    layer = layers.Conv2D(8, 3, activation="relu", use_bias=True)
    out = layer(np.random.default_rng(1).standard_normal((1, 5, 5, 2)).astype(np.float32))
    assert [v.name for v in layer.weights] == ["conv2d/kernel:0", "conv2d/bias:0"]
    assert layer.count_params() == 3 * 3 * 2 * 8 + 8
    assert out.numpy().min() >= 0
    no_bias = layers.Conv2D(8, 3, use_bias=False)
    no_bias(np.zeros((1, 5, 5, 2), np.float32))
    assert [v.name for v in no_bias.weights] == ["conv2d_1/kernel:0"]


@pytest.mark.parametrize("padding,strides,dilation", [("same", 1, 1), ("valid", 2, 1),
                                                      ("same", 1, 2)])
def test_conv2d_gradients_match_finite_differences(padding, strides, dilation):
    layer = layers.Conv2D(2, 3, strides=strides, padding=padding, dilation_rate=dilation,
                          bias_initializer="random_normal", dtype="float64")
    check_layer_grads(layer, np.random.default_rng(2).standard_normal((1, 5, 5, 2)))


@pytest.mark.parametrize("padding,strides,dilation", [("same", 1, 1), ("valid", 2, 1),
                                                      ("valid", 1, 2)])
def test_conv2d_matches_torch_with_matched_weights(padding, strides, dilation):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 9, 9, 3))
    layer = layers.Conv2D(4, 3, strides=strides, padding=padding, dilation_rate=dilation,
                          bias_initializer="random_normal", dtype="float64")
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        out = layer(xt)
        loss = tf.reduce_sum(out * out)
    gx, gk, gb = tape.gradient(loss, [xt, layer.kernel, layer.bias])
    kernel, bias = layer.get_weights()
    tx = torch.tensor(x.transpose(0, 3, 1, 2), requires_grad=True)
    tk = torch.tensor(kernel.transpose(3, 2, 0, 1), requires_grad=True)
    tb = torch.tensor(bias, requires_grad=True)
    if padding == "same":
        tout = torch.nn.functional.conv2d(tx, tk, tb, stride=strides, padding="same",
                                          dilation=dilation)
    else:
        tout = torch.nn.functional.conv2d(tx, tk, tb, stride=strides, dilation=dilation)
    (tout * tout).sum().backward()
    np.testing.assert_allclose(out.numpy(), tout.detach().numpy().transpose(0, 2, 3, 1),
                               rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(gx.numpy(), tx.grad.numpy().transpose(0, 2, 3, 1), rtol=1e-9)
    np.testing.assert_allclose(gk.numpy(), tk.grad.numpy().transpose(2, 3, 1, 0), rtol=1e-9)
    np.testing.assert_allclose(gb.numpy(), tb.grad.numpy(), rtol=1e-9)


def test_conv2d_argument_errors():
    with pytest.raises(ValueError, match="kernel_size"):
        layers.Conv2D(2, (3, 3, 3))
    with pytest.raises(ValueError, match="padding"):
        layers.Conv2D(2, 3, padding="full")
    with pytest.raises(ValueError, match="dilation"):
        layers.Conv2D(2, 3, strides=2, dilation_rate=2)
    with pytest.raises(ValueError, match="channels_last"):
        layers.Conv2D(2, 3, data_format="channels_first")
    # tf-keras 2.21's InputSpec message
    with pytest.raises(ValueError, match=r'layer "conv2d(_\d+)?" is incompatible with the layer: '
                                         r"expected min_ndim=4, found ndim=3"):
        layers.Conv2D(2, 3)(np.zeros((4, 4, 3), np.float32))
    built = layers.Conv2D(2, 3)
    built(np.zeros((1, 4, 4, 3), np.float32))
    assert repr(built.input_spec) == "InputSpec(min_ndim=4, axes={-1: 3})"
    with pytest.raises(ValueError, match=r"expected axis -1 of input shape to have value 3, "
                                         r"but received input with shape \(1, 4, 4, 2\)"):
        built(np.zeros((1, 4, 4, 2), np.float32))


def _pool_reference(x, size, stride, padding, reduce):
    n, h, w, c = x.shape
    if padding == "same":
        (t, b), (left, r) = _pad_same(x, size, stride, (1, 1))
        x = np.pad(x, ((0, 0), (t, b), (left, r), (0, 0)), constant_values=np.nan)
        h, w = x.shape[1:3]
    oh, ow = (h - size[0]) // stride[0] + 1, (w - size[1]) // stride[1] + 1
    out = np.zeros((n, oh, ow, c))
    for i in range(oh):
        for j in range(ow):
            win = x[:, i * stride[0]:i * stride[0] + size[0], j * stride[1]:j * stride[1] + size[1]]
            out[:, i, j] = reduce(win, axis=(1, 2))
    return out


@pytest.mark.parametrize("cls,reduce", [(layers.MaxPooling2D, np.nanmax),
                                        (layers.AveragePooling2D, np.nanmean)])
@pytest.mark.parametrize("pool,strides,padding", [(2, None, "valid"), (3, 2, "same"),
                                                  ((2, 3), (1, 2), "valid")])
def test_pooling_matches_reference(cls, reduce, pool, strides, padding):
    x = np.random.default_rng(4).standard_normal((2, 7, 7, 3))
    layer = cls(pool_size=pool, strides=strides, padding=padding, dtype="float64")
    out = layer(x).numpy()
    ref = _pool_reference(x, layer.pool_size, layer.strides, padding, reduce)
    np.testing.assert_allclose(out, ref, rtol=1e-12)
    assert tuple(layer.compute_output_shape(x.shape)) == out.shape


@pytest.mark.parametrize("cls", [layers.MaxPooling2D, layers.AveragePooling2D])
def test_pooling_gradients(cls):
    layer = cls(pool_size=2, strides=1, padding="same", dtype="float64")
    check_layer_grads(layer, np.random.default_rng(5).standard_normal((1, 4, 4, 2)))


def test_global_pooling():
    x = np.random.default_rng(6).standard_normal((2, 3, 4, 5)).astype(np.float32)
    np.testing.assert_allclose(layers.GlobalAveragePooling2D()(x).numpy(), x.mean(axis=(1, 2)),
                               rtol=1e-5)
    np.testing.assert_allclose(layers.GlobalMaxPooling2D()(x).numpy(), x.max(axis=(1, 2)))
    kept = layers.GlobalAveragePooling2D(keepdims=True)(x)
    assert kept.shape == (2, 1, 1, 5)
    check_layer_grads(layers.GlobalAveragePooling2D(dtype="float64"), x[:1].astype(np.float64))


def test_seed_003_mnist_convnet_shapes_and_params():
    model = tf.keras.Sequential([
        layers.Conv2D(32, 3, activation="relu", input_shape=(28, 28, 1)),
        layers.MaxPooling2D(),
        layers.Flatten(),
        layers.Dense(10, activation="softmax"),
    ])
    assert model.output_shape == (None, 10)
    assert model.count_params() == 320 + 13 * 13 * 32 * 10 + 10
    probs = model(np.zeros((2, 28, 28, 1), np.float32)).numpy()
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-6)
