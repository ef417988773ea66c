"""BatchNormalization and LayerNormalization: NumPy, PyTorch, gradients, tf.function updates."""

import contextlib

import numpy as np
import pytest
from layer_checks import check_layer_grads

import tapeflow as tf
from tapeflow.keras import backend, layers
from tapeflow.keras.layers import normalization


@pytest.fixture(autouse=True)
def _fresh_names():
    backend.clear_session()


def _x(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape) * 2.0 + 0.5


def test_batch_norm_weights_names_defaults_and_counts():
    bn = layers.BatchNormalization()
    bn(np.zeros((2, 4, 4, 3), np.float32))
    assert [v.name for v in bn.weights] == [
        "batch_normalization/gamma:0", "batch_normalization/beta:0",
        "batch_normalization/moving_mean:0", "batch_normalization/moving_variance:0"]
    assert len(bn.trainable_weights) == 2 and len(bn.non_trainable_weights) == 2
    assert bn.count_params() == 12
    assert (bn.momentum, bn.epsilon) == (0.99, 1e-3)


def test_batch_norm_training_normalizes_with_batch_statistics_and_updates_moving():
    x = _x((8, 3, 3, 4))
    bn = layers.BatchNormalization(momentum=0.9, dtype="float64",
                                   gamma_initializer="random_normal",
                                   beta_initializer="random_normal")
    out = bn(x, training=True).numpy()
    gamma, beta, mm, mv = bn.get_weights()
    mean, var = x.mean(axis=(0, 1, 2)), x.var(axis=(0, 1, 2))
    np.testing.assert_allclose(out, gamma * (x - mean) / np.sqrt(var + 1e-3) + beta, rtol=1e-10)
    n = 8 * 3 * 3
    np.testing.assert_allclose(mm, 0.1 * mean, rtol=1e-12)
    np.testing.assert_allclose(mv, 0.9 + 0.1 * var * n / (n - 1), rtol=1e-12)


def test_batch_norm_inference_uses_moving_statistics():
    x = _x((4, 5))
    bn = layers.BatchNormalization(dtype="float64")
    bn.build((None, 5))
    mm, mv = np.arange(5.0), np.arange(1.0, 6.0)
    bn.set_weights([np.full(5, 2.0), np.full(5, -1.0), mm, mv])
    expected = 2.0 * (x - mm) / np.sqrt(mv + 1e-3) - 1.0
    np.testing.assert_allclose(bn(x).numpy(), expected, rtol=1e-12)
    np.testing.assert_allclose(bn(x, training=False).numpy(), expected, rtol=1e-12)
    np.testing.assert_array_equal(bn.moving_mean.numpy(), mm)


def test_batch_norm_moving_statistics_update_inside_tf_function():
    x = tf.constant(_x((6, 4)).astype(np.float32))
    eager = layers.BatchNormalization()
    traced = layers.BatchNormalization()

    @tf.function
    def step(inputs):
        return traced(inputs, training=True)

    for _ in range(3):
        expected = eager(x, training=True)
        got = step(x)
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(traced.moving_mean.numpy(), eager.moving_mean.numpy(), rtol=1e-6)
    np.testing.assert_allclose(traced.moving_variance.numpy(), eager.moving_variance.numpy(),
                               rtol=1e-6)
    assert np.abs(traced.moving_mean.numpy()).max() > 0


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_gradients_match_finite_differences(training):
    bn = layers.BatchNormalization(dtype="float64", gamma_initializer="random_normal",
                                   beta_initializer="random_normal",
                                   moving_variance_initializer=tf.keras.initializers.Constant(2.0))
    check_layer_grads(bn, _x((4, 2, 2, 3)), call_kwargs={"training": training})


def test_batch_norm_matches_torch_in_training_and_eval():
    torch = pytest.importorskip("torch")
    x = _x((6, 5, 5, 4), seed=1)
    bn = layers.BatchNormalization(dtype="float64", gamma_initializer="random_normal",
                                   beta_initializer="random_normal")
    bn.build((None, 5, 5, 4))
    gamma, beta = bn.gamma.numpy(), bn.beta.numpy()
    tbn = torch.nn.BatchNorm2d(4, eps=1e-3, momentum=0.01, dtype=torch.float64)
    with torch.no_grad():
        tbn.weight.copy_(torch.tensor(gamma))
        tbn.bias.copy_(torch.tensor(beta))
    xt = tf.constant(x)
    cot = _x((6, 5, 5, 4), seed=2)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        out = bn(xt, training=True)
        loss = tf.reduce_sum(out * tf.constant(cot))
    gx, gg, gb = tape.gradient(loss, [xt, bn.gamma, bn.beta])
    tx = torch.tensor(x.transpose(0, 3, 1, 2), requires_grad=True)
    tout = tbn.train()(tx)
    (tout * torch.tensor(cot.transpose(0, 3, 1, 2))).sum().backward()
    np.testing.assert_allclose(out.numpy(), tout.detach().numpy().transpose(0, 2, 3, 1),
                               rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(gx.numpy(), tx.grad.numpy().transpose(0, 2, 3, 1), rtol=1e-8,
                               atol=1e-10)
    np.testing.assert_allclose(gg.numpy(), tbn.weight.grad.numpy(), rtol=1e-9)
    np.testing.assert_allclose(gb.numpy(), tbn.bias.grad.numpy(), rtol=1e-9)
    np.testing.assert_allclose(bn.moving_mean.numpy(), tbn.running_mean.numpy(), rtol=1e-12)
    np.testing.assert_allclose(bn.moving_variance.numpy(), tbn.running_var.numpy(), rtol=1e-12)
    eval_out = tbn.eval()(torch.tensor(x.transpose(0, 3, 1, 2))).detach().numpy()
    np.testing.assert_allclose(bn(x, training=False).numpy(), eval_out.transpose(0, 2, 3, 1),
                               rtol=1e-9)


def test_batch_norm_non_default_axis_and_no_center_scale():
    x = _x((4, 3, 5))
    bn = layers.BatchNormalization(axis=1, center=False, scale=False, dtype="float64")
    out = bn(x, training=True).numpy()
    assert [v.name.split("/")[-1] for v in bn.weights] == ["moving_mean:0", "moving_variance:0"]
    mean = x.mean(axis=(0, 2), keepdims=True)
    var = x.var(axis=(0, 2), keepdims=True)
    np.testing.assert_allclose(out, (x - mean) / np.sqrt(var + 1e-3), rtol=1e-10)
    with pytest.raises(ValueError, match="axis"):
        layers.BatchNormalization(axis=5)(x)


def test_layer_norm_matches_numpy_torch_and_gradients():
    x = _x((3, 4, 6))
    ln = layers.LayerNormalization(dtype="float64", gamma_initializer="random_normal",
                                   beta_initializer="random_normal")
    out = ln(x).numpy()
    gamma, beta = ln.get_weights()
    mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    np.testing.assert_allclose(out, (x - mean) / np.sqrt(var + 1e-3) * gamma + beta, rtol=1e-10)
    assert [v.name for v in ln.weights] == ["layer_normalization/gamma:0",
                                            "layer_normalization/beta:0"]
    check_layer_grads(ln, x[:2, :2])
    torch = pytest.importorskip("torch")
    tln = torch.nn.LayerNorm(6, eps=1e-3, dtype=torch.float64)
    with torch.no_grad():
        tln.weight.copy_(torch.tensor(gamma))
        tln.bias.copy_(torch.tensor(beta))
    np.testing.assert_allclose(out, tln(torch.tensor(x)).detach().numpy(), rtol=1e-9)


def test_layer_norm_over_several_axes():
    x = _x((2, 3, 4))
    ln = layers.LayerNormalization(axis=[1, 2], dtype="float64")
    out = ln(x).numpy()
    mean, var = x.mean((1, 2), keepdims=True), x.var((1, 2), keepdims=True)
    np.testing.assert_allclose(out, (x - mean) / np.sqrt(var + 1e-3), rtol=1e-10)
    assert ln.gamma.shape == (3, 4)


def test_replayed_batch_statistics_normalize_and_leave_moving_averages_alone():
    """record_batch_statistics / replay_batch_statistics (RevNet's recompute): the replay pass
    normalizes with the recorded statistics, updates nothing, and a layer with nothing left to
    replay computes its own."""
    rng = np.random.default_rng(4)
    x = tf.constant(rng.standard_normal((6, 3, 3, 4)) * 2.0 + 1.0)
    layer = tf.keras.layers.BatchNormalization(dtype="float64")
    with normalization.record_batch_statistics() as statistics:
        recorded = layer(x, training=True)
    moved = [v.numpy().copy() for v in layer.non_trainable_variables]
    assert not np.allclose(moved[0], 0.0)  # the recording pass updated the moving mean
    shifted = x + 1.0  # normalized with x's statistics, so its output moves by 1 * gamma/std
    with normalization.replay_batch_statistics(statistics):
        replayed = layer(shifted, training=True)
        for v, before in zip(layer.non_trainable_variables, moved):
            np.testing.assert_array_equal(v.numpy(), before)  # the replay updated nothing
        own = layer(shifted, training=True)  # nothing left: its own statistics
    std = np.sqrt(x.numpy().reshape(-1, 4).var(axis=0) + layer.epsilon)
    np.testing.assert_allclose(replayed.numpy(), recorded.numpy() + 1.0 / std, atol=1e-10)
    np.testing.assert_allclose(own.numpy(), recorded.numpy(), atol=1e-10)
    assert not np.allclose(layer.non_trainable_variables[0].numpy(), moved[0])  # own updated


def test_replayed_statistics_keep_the_training_gradient():
    """The gradient with replayed statistics is training mode's, statistics as functions of
    the input: the same as recomputing them."""
    x = tf.constant(np.random.default_rng(5).standard_normal((5, 2, 2, 3)))
    layer = tf.keras.layers.BatchNormalization(dtype="float64")
    grads = []
    for replay in (False, True):
        with normalization.record_batch_statistics() as statistics:
            layer(x, training=True)
        replaying = (normalization.replay_batch_statistics(statistics) if replay
                     else contextlib.nullcontext())
        with replaying:
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = layer(x, training=True)
                loss = tf.reduce_sum(y * y * tf.range(1.0, 4.0, dtype="float64"))
        grads.append(tape.gradient(loss, [x, *layer.trainable_variables]))
    for a, b in zip(*grads):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-10, atol=1e-12)
