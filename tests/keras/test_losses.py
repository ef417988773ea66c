"""Keras losses: values vs NumPy/PyTorch, reductions, sample weights, gradients, names."""

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.keras import losses

RNG = np.random.default_rng(0)
LOGITS = RNG.normal(size=(6, 4)).astype(np.float32)
LABELS = np.array([0, 3, 1, 2, 3, 0])
ONEHOT = np.eye(4, dtype=np.float32)[LABELS]
PROBS = (np.exp(LOGITS) / np.exp(LOGITS).sum(1, keepdims=True)).astype(np.float32)


def _np_log_softmax(z):
    z = z - z.max(1, keepdims=True)
    return z - np.log(np.exp(z).sum(1, keepdims=True))


def test_crossentropies_match_numpy():
    expected = -_np_log_softmax(LOGITS)[np.arange(6), LABELS].mean()
    cases = [
        (losses.SparseCategoricalCrossentropy(from_logits=True), LABELS, LOGITS),
        (losses.SparseCategoricalCrossentropy(), LABELS, PROBS),
        (losses.SparseCategoricalCrossentropy(), LABELS[:, None], PROBS),
        (losses.CategoricalCrossentropy(from_logits=True), ONEHOT, LOGITS),
        (losses.CategoricalCrossentropy(), ONEHOT, PROBS),
    ]
    for loss, y_true, y_pred in cases:
        np.testing.assert_allclose(loss(y_true, y_pred).numpy(), expected, rtol=1e-5)


def test_regression_losses_and_reductions():
    y_true = RNG.normal(size=(5, 3)).astype(np.float32)
    y_pred = RNG.normal(size=(5, 3)).astype(np.float32)
    err = y_pred - y_true
    np.testing.assert_allclose(losses.MeanSquaredError()(y_true, y_pred).numpy(),
                               np.mean(err ** 2), rtol=1e-6)
    np.testing.assert_allclose(losses.MeanAbsoluteError()(y_true, y_pred).numpy(),
                               np.mean(np.abs(err)), rtol=1e-6)
    huber = np.where(np.abs(err) <= 0.5, 0.5 * err ** 2, 0.5 * np.abs(err) - 0.125)
    np.testing.assert_allclose(losses.Huber(delta=0.5)(y_true, y_pred).numpy(), huber.mean(),
                               rtol=1e-6)
    per_sample = np.mean(err ** 2, axis=1)
    np.testing.assert_allclose(losses.MeanSquaredError(reduction="none")(y_true, y_pred).numpy(),
                               per_sample, rtol=1e-6)
    np.testing.assert_allclose(losses.MeanSquaredError(reduction="sum")(y_true, y_pred).numpy(),
                               per_sample.sum(), rtol=1e-6)
    weights = np.array([1.0, 0.0, 2.0, 0.0, 1.0], np.float32)
    # Keras divides the weighted sum by the number of samples, not by the weights' sum
    np.testing.assert_allclose(
        losses.MeanSquaredError()(y_true, y_pred, sample_weight=weights).numpy(),
        (per_sample * weights).sum() / 5, rtol=1e-6)
    with pytest.raises(ValueError, match="Invalid Reduction"):
        losses.MeanSquaredError(reduction="mean")


def test_binary_crossentropy_logits_and_probabilities():
    y_true = np.array([[1.0, 0.0], [0.0, 1.0]], np.float32)
    logits = np.array([[2.0, -1.0], [30.0, -30.0]], np.float32)
    z = logits.astype(np.float64)
    exact = (np.logaddexp(0.0, z) - z * y_true).mean()  # -log(sigmoid) terms, computed stably
    np.testing.assert_allclose(losses.BinaryCrossentropy(from_logits=True)(y_true, logits),
                               exact, rtol=1e-5)
    probs = np.array([[0.9, 0.2], [0.3, 0.6]], np.float32)
    expected = -(y_true * np.log(probs) + (1 - y_true) * np.log(1 - probs)).mean()
    np.testing.assert_allclose(losses.BinaryCrossentropy()(y_true, probs).numpy(), expected,
                               rtol=1e-5)


def test_crossentropy_gradient_matches_finite_differences():
    logits = tf.Variable(LOGITS.astype(np.float64))
    loss_fn = losses.SparseCategoricalCrossentropy(from_logits=True)
    with tf.GradientTape() as tape:
        loss = loss_fn(LABELS, logits)
    grad = tape.gradient(loss, logits).numpy()
    eps, numeric = 1e-6, np.zeros_like(grad)
    for idx in np.ndindex(*grad.shape):
        plus, minus = LOGITS.astype(np.float64).copy(), LOGITS.astype(np.float64).copy()
        plus[idx] += eps
        minus[idx] -= eps
        numeric[idx] = (loss_fn(LABELS, plus).numpy() - loss_fn(LABELS, minus).numpy()) / (2 * eps)
    np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-8)


def test_against_torch():
    torch = pytest.importorskip("torch")
    t_logits = torch.tensor(LOGITS)
    ours = losses.SparseCategoricalCrossentropy(from_logits=True)(LABELS, LOGITS).numpy()
    theirs = torch.nn.functional.cross_entropy(t_logits, torch.tensor(LABELS)).item()
    np.testing.assert_allclose(ours, theirs, rtol=1e-5)
    target = torch.tensor(ONEHOT[:, :1])
    ours = losses.BinaryCrossentropy(from_logits=True)(ONEHOT[:, :1], LOGITS[:, :1]).numpy()
    theirs = torch.nn.functional.binary_cross_entropy_with_logits(t_logits[:, :1], target).item()
    np.testing.assert_allclose(ours, theirs, rtol=1e-5)
    ours = losses.Huber()(ONEHOT, LOGITS).numpy()
    theirs = torch.nn.functional.huber_loss(t_logits, torch.tensor(ONEHOT)).item()
    np.testing.assert_allclose(ours, theirs, rtol=1e-5)


def test_get_by_name_and_errors():
    assert losses.get("mse") is losses.mean_squared_error
    assert isinstance(losses.get("SparseCategoricalCrossentropy"),
                      losses.SparseCategoricalCrossentropy)
    with pytest.raises(ValueError, match="Unknown loss function"):
        losses.get("msee")
    with pytest.raises(ValueError, match="labels.shape"):
        losses.categorical_crossentropy(LABELS, LOGITS)
