"""Every Keras 2 loss (the cross-entropies and their focal forms, hinges, KLD, log-cosh, MSE,
MAE, MAPE, MSLE, Huber, Poisson, cosine similarity): values against NumPy formulas written here,
gradients against finite differences (float64), eager against traced, configs, string names and
bad input.
"""

from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf
from tapeflow import keras
from tapeflow.keras import backend, layers, losses
from tapeflow.testing import check_grads

RNG = np.random.default_rng(7)
EPS = 1e-7
TARGET = RNG.uniform(0.0, 1.0, (5, 4)).astype(np.float32)        # soft targets in [0, 1]
PROB = RNG.uniform(0.05, 0.95, (5, 4)).astype(np.float32)       # probabilities / positive
BINARY = (RNG.uniform(size=(5, 4)) > 0.5).astype(np.float32)    # 0/1 labels
ONE_HOT = np.eye(4, dtype=np.float32)[[0, 3, 1, 2, 3]]
LOGIT = RNG.normal(size=(5, 4)).astype(np.float32)
WEIGHT = np.array([1.0, 0.5, 0.0, 2.0, 1.5], np.float32)


def _softmax(z):
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def _np_hinge_labels(t):
    return 2 * t - 1 if np.all((t == 0) | (t == 1)) else t


def _np_binary_focal(t, p, gamma=2.0, alpha=0.25, balance=False, smoothing=0.0,
                     logits=False):
    t = t * (1 - smoothing) + 0.5 * smoothing
    prob = _sigmoid(p) if logits else np.clip(p, EPS, 1 - EPS)
    bce = -(t * np.log(prob) + (1 - t) * np.log(1 - prob))
    p_t = t * prob + (1 - t) * (1 - prob)
    out = (1 - p_t) ** gamma * bce
    if balance:
        out = (t * alpha + (1 - t) * (1 - alpha)) * out
    return out.mean(-1)


def _np_categorical_focal(t, p, alpha=0.25, gamma=2.0, smoothing=0.0, logits=False):
    t = t * (1 - smoothing) + smoothing / t.shape[-1]
    prob = _softmax(p) if logits else p / p.sum(-1, keepdims=True)
    prob = np.clip(prob, EPS, 1 - EPS)
    return (np.asarray(alpha) * (1 - prob) ** gamma * -t * np.log(prob)).sum(-1)


def _np_cosine(t, p, axis=-1):
    tn = t / np.linalg.norm(t, axis=axis, keepdims=True)
    pn = p / np.linalg.norm(p, axis=axis, keepdims=True)
    return -(tn * pn).sum(axis)


# one row per loss: (Loss object, y_true, y_pred, per-sample values in NumPy)
CASES = {
    "mape": (losses.MeanAbsolutePercentageError(), TARGET, LOGIT,
             100 * np.mean(np.abs(TARGET - LOGIT) / np.maximum(np.abs(TARGET), EPS), -1)),
    "msle": (losses.MeanSquaredLogarithmicError(), TARGET, PROB,
             np.mean((np.log1p(PROB) - np.log1p(np.maximum(TARGET, EPS))) ** 2, -1)),
    "hinge_01": (losses.Hinge(), BINARY, LOGIT,
                 np.mean(np.maximum(1 - (2 * BINARY - 1) * LOGIT, 0), -1)),
    "hinge_signed": (losses.Hinge(), 2 * BINARY - 1, LOGIT,
                     np.mean(np.maximum(1 - (2 * BINARY - 1) * LOGIT, 0), -1)),
    "hinge_soft": (losses.Hinge(), TARGET, LOGIT,   # not all 0/1: used as they are
                   np.mean(np.maximum(1 - TARGET * LOGIT, 0), -1)),
    "squared_hinge": (losses.SquaredHinge(), BINARY, LOGIT,
                      np.mean(np.maximum(1 - _np_hinge_labels(BINARY) * LOGIT, 0) ** 2, -1)),
    "categorical_hinge": (losses.CategoricalHinge(), ONE_HOT, LOGIT,
                          np.maximum(((1 - ONE_HOT) * LOGIT).max(-1)
                                     - (ONE_HOT * LOGIT).sum(-1) + 1, 0)),
    "log_cosh": (losses.LogCosh(), TARGET, 60 * LOGIT,   # |x| > 89 would overflow cosh in f32
                 np.mean(np.logaddexp(60 * LOGIT - TARGET, TARGET - 60 * LOGIT) - np.log(2), -1)),
    "kl_divergence": (losses.KLDivergence(), TARGET, PROB,
                      np.sum(np.clip(TARGET, EPS, 1) * np.log(np.clip(TARGET, EPS, 1) / PROB),
                             -1)),
    "poisson": (losses.Poisson(), TARGET, PROB,
                np.mean(PROB - TARGET * np.log(PROB + EPS), -1)),
    "cosine_similarity": (losses.CosineSimilarity(), TARGET, LOGIT, _np_cosine(TARGET, LOGIT)),
    "binary_focal": (losses.BinaryFocalCrossentropy(), BINARY, PROB,
                     _np_binary_focal(BINARY, PROB)),
    "binary_focal_logits": (
        losses.BinaryFocalCrossentropy(apply_class_balancing=True, alpha=0.3, gamma=1.5,
                                       from_logits=True, label_smoothing=0.1),
        BINARY, LOGIT, _np_binary_focal(BINARY, LOGIT, 1.5, 0.3, True, 0.1, logits=True)),
    "mse": (losses.MeanSquaredError(), TARGET, LOGIT, np.mean((LOGIT - TARGET) ** 2, -1)),
    "mae": (losses.MeanAbsoluteError(), TARGET, LOGIT, np.mean(np.abs(LOGIT - TARGET), -1)),
    "huber": (losses.Huber(delta=0.7), TARGET, LOGIT,
              np.mean(np.where(np.abs(LOGIT - TARGET) <= 0.7, 0.5 * (LOGIT - TARGET) ** 2,
                               0.7 * np.abs(LOGIT - TARGET) - 0.5 * 0.7 ** 2), -1)),
    "binary_crossentropy": (losses.BinaryCrossentropy(label_smoothing=0.2), BINARY, PROB,
                            _np_binary_focal(BINARY, PROB, gamma=0.0, smoothing=0.2)),
    "binary_crossentropy_logits": (losses.BinaryCrossentropy(from_logits=True), BINARY, LOGIT,
                                   _np_binary_focal(BINARY, LOGIT, gamma=0.0, logits=True)),
    "categorical_crossentropy": (losses.CategoricalCrossentropy(), ONE_HOT, PROB,
                                 -np.sum(ONE_HOT * np.log(PROB / PROB.sum(-1, keepdims=True)),
                                         -1)),
    "categorical_crossentropy_logits": (
        losses.CategoricalCrossentropy(from_logits=True, label_smoothing=0.1), ONE_HOT, LOGIT,
        -np.sum((ONE_HOT * 0.9 + 0.1 / 4) * np.log(_softmax(LOGIT)), -1)),
    "sparse_categorical_crossentropy": (
        losses.SparseCategoricalCrossentropy(from_logits=True), ONE_HOT.argmax(-1), LOGIT,
        -np.log(_softmax(LOGIT))[np.arange(5), ONE_HOT.argmax(-1)]),
    "categorical_focal": (losses.CategoricalFocalCrossentropy(), ONE_HOT, PROB,
                          _np_categorical_focal(ONE_HOT, PROB)),
    "categorical_focal_logits": (
        losses.CategoricalFocalCrossentropy(alpha=[0.1, 0.2, 0.3, 0.4], gamma=3.0,
                                            from_logits=True, label_smoothing=0.2),
        ONE_HOT, LOGIT, _np_categorical_focal(ONE_HOT, LOGIT, [0.1, 0.2, 0.3, 0.4], 3.0, 0.2,
                                              logits=True)),
}


def _with_reduction(loss, reduction):
    return type(loss).from_config({**loss.get_config(), "reduction": reduction})


@pytest.mark.parametrize("case", sorted(CASES))
def test_values_and_reductions_match_numpy(case):
    loss, y_true, y_pred, per_sample = CASES[case]
    np.testing.assert_allclose(_with_reduction(loss, "none")(y_true, y_pred).numpy(),
                               per_sample, rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(loss(y_true, y_pred).numpy(), per_sample.mean(), rtol=2e-5)
    np.testing.assert_allclose(_with_reduction(loss, "sum")(y_true, y_pred).numpy(),
                               per_sample.sum(), rtol=2e-5)
    # Keras divides the weighted sum by the number of values, not by the weights' sum
    np.testing.assert_allclose(loss(y_true, y_pred, sample_weight=WEIGHT).numpy(),
                               (per_sample * WEIGHT).sum() / len(WEIGHT), rtol=2e-5)


@pytest.mark.parametrize("case", sorted(CASES))
def test_gradient_matches_finite_differences(case):
    loss, y_true, y_pred, _ = CASES[case]
    check_grads(lambda p: loss(y_true, p, sample_weight=WEIGHT), [y_pred])


@pytest.mark.parametrize("case", sorted(CASES))
def test_eager_equals_traced(case):
    loss, y_true, y_pred, _ = CASES[case]
    traced = tf.function(lambda t, p, w: loss(t, p, sample_weight=w))
    np.testing.assert_allclose(traced(y_true, y_pred, WEIGHT).numpy(),
                               loss(y_true, y_pred, sample_weight=WEIGHT).numpy(), rtol=1e-6)


def test_function_forms_and_cosine_axis():
    for fn, cls in [(losses.hinge, losses.Hinge), (losses.squared_hinge, losses.SquaredHinge),
                    (losses.categorical_hinge, losses.CategoricalHinge),
                    (losses.poisson, losses.Poisson), (losses.kld, losses.KLDivergence),
                    (losses.logcosh, losses.LogCosh),
                    (losses.MAPE, losses.MeanAbsolutePercentageError),
                    (losses.msle, losses.MeanSquaredLogarithmicError)]:
        np.testing.assert_allclose(fn(TARGET, PROB).numpy(),
                                   cls(reduction="none")(TARGET, PROB).numpy(), rtol=1e-6)
    np.testing.assert_allclose(losses.cosine_similarity(TARGET, LOGIT, axis=0).numpy(),
                               _np_cosine(TARGET, LOGIT, axis=0), rtol=1e-5)
    # a zero vector has no direction: its similarity is 0, not NaN
    assert float(losses.cosine_similarity([[0.0, 0.0]], [[1.0, 2.0]])[0]) == 0.0


def test_values_recorded_from_tf_keras():
    # tf-keras 2.21's documented examples (the docstrings of the two functions)
    np.testing.assert_allclose(
        losses.binary_focal_crossentropy([[0, 1], [0, 0]], [[0.6, 0.4], [0.4, 0.6]],
                                         gamma=2).numpy(), [0.330, 0.206], atol=1e-3)
    np.testing.assert_allclose(
        losses.categorical_focal_crossentropy([[0, 1, 0], [0, 0, 1]],
                                              [[0.05, 0.9, 0.05], [0.1, 0.85, 0.05]]).numpy(),
        [2.63401289e-04, 6.75912094e-01], rtol=1e-5)
    # tf_keras.losses.<Class>()(t, p) on these inputs, run in tf-keras 2.21 (float32)
    t, p = [[0.0, 1.0], [0.0, 0.0]], [[0.6, 0.4], [0.4, 0.6]]
    recorded = {losses.Hinge: 1.2999999523162842, losses.SquaredHinge: 1.8600000143051147,
                losses.LogCosh: 0.14708980917930603, losses.KLDivergence: 0.45814305543899536,
                losses.Poisson: 0.729072630405426, losses.CategoricalHinge: 1.4000000953674316,
                losses.MeanSquaredLogarithmicError: 0.17055928707122803,
                losses.MeanAbsolutePercentageError: 400000000.0}
    for cls, value in recorded.items():
        np.testing.assert_allclose(float(cls()(t, p)), value, rtol=1e-6, err_msg=cls.__name__)

def test_configs_round_trip_and_names():
    for name, (loss, *_rest) in CASES.items():
        again = losses.deserialize(losses.serialize(loss))
        assert type(again) is type(loss) and again.get_config() == loss.get_config(), name
    cfg = losses.BinaryFocalCrossentropy(gamma=3.0).get_config()
    assert cfg == {"apply_class_balancing": False, "alpha": 0.25, "gamma": 3.0,
                   "from_logits": False, "label_smoothing": 0.0, "axis": -1,
                   "reduction": "auto", "name": "binary_focal_crossentropy"}
    # tf-keras's configs also carry the function's name under "fn"
    assert losses.LogCosh.from_config({"reduction": "sum", "name": "lc", "fn": "log_cosh"}).name \
        == "lc"
    assert [cls().name for cls in (losses.KLDivergence, losses.LogCosh, losses.Poisson,
                                   losses.MeanAbsolutePercentageError)] == [
        "kl_divergence", "log_cosh", "poisson", "mean_absolute_percentage_error"]


def test_string_identifiers():
    for names, fn in [(("kld", "KLD", "kl_divergence", "kullback_leibler_divergence"),
                       losses.kl_divergence),
                      (("log_cosh", "logcosh"), losses.log_cosh),
                      (("mape", "MAPE", "mean_absolute_percentage_error"),
                       losses.mean_absolute_percentage_error),
                      (("msle", "MSLE", "mean_squared_logarithmic_error"),
                       losses.mean_squared_logarithmic_error),
                      (("hinge",), losses.hinge), (("poisson",), losses.poisson),
                      (("categorical_focal_crossentropy",), losses.categorical_focal_crossentropy),
                      (("binary_focal_crossentropy",), losses.binary_focal_crossentropy)]:
        for name in names:
            assert losses.get(name) is fn, name
    assert isinstance(losses.get("CategoricalHinge"), losses.CategoricalHinge)
    assert isinstance(losses.get({"class_name": "Poisson", "config": {"reduction": "sum"}}),
                      losses.Poisson)


def test_bad_input_names_the_loss_and_shapes():
    with pytest.raises(ValueError, match=r"poisson: .*\(5, 4\).*\(5, 3\)"):
        losses.Poisson()(TARGET, PROB[:, :3])
    with pytest.raises(ValueError, match="hinge: y_true and y_pred shapes"):
        losses.hinge(TARGET, PROB[:3])
    with pytest.raises(ValueError, match="categorical_focal_crossentropy"):
        losses.CategoricalFocalCrossentropy()(ONE_HOT[:, :3], PROB)
    with pytest.raises(ValueError, match=r"alpha needs one weight per class.*\(2,\).*\(5, 4\)"):
        losses.CategoricalFocalCrossentropy(alpha=[0.2, 0.8])(ONE_HOT, PROB)
    with pytest.raises(ValueError, match="Invalid Reduction"):
        losses.KLDivergence(reduction="mean")


@pytest.mark.parametrize("loss", ["kld", "logcosh", "poisson", "msle", "mape",
                                  "binary_focal_crossentropy"])
def test_fit_with_string_loss_traced(loss):
    backend.clear_session()
    x = RNG.normal(size=(16, 3)).astype(np.float32)
    y = _softmax(x @ RNG.normal(size=(3, 2))).astype(np.float32)
    model = keras.Sequential([layers.Dense(2, activation="softmax", input_shape=(3,))])
    rate = 0.002 if loss == "mape" else 0.5  # MAPE's gradients are ~100 times larger
    model.compile(optimizer=keras.optimizers.SGD(rate), loss=loss)
    before = model.evaluate(x, y, verbose=0)
    history = model.fit(x, y, epochs=5, batch_size=8, verbose=0).history["loss"]
    after = model.evaluate(x, y, verbose=0)
    fn = losses.get(loss)
    np.testing.assert_allclose(after, float(np.mean(fn(y, model.predict(x, verbose=0)))),
                               rtol=1e-5)
    assert after < before and len(history) == 5
