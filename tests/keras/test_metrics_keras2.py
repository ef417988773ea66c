"""The rest of Keras 2's metrics: mean-of-a-function metrics, RMSE, MeanRelativeError,
MeanTensor, confusion counts and rates at a constraint. Each streams two batches (the second
weighted) and is compared with a NumPy formula written here, eagerly and traced.
"""

from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf
from tapeflow import keras
from tapeflow.keras import backend, layers, metrics

RNG = np.random.default_rng(11)
EPS = 1e-7
TARGET = RNG.uniform(0.0, 1.0, (6, 3)).astype(np.float32)
PROB = RNG.uniform(0.05, 0.95, (6, 3)).astype(np.float32)
BINARY = (RNG.uniform(size=(6, 3)) > 0.5).astype(np.float32)
ONE_HOT = np.eye(3, dtype=np.float32)[[0, 2, 1, 2, 0, 1]]
LOGIT = RNG.normal(size=(6, 3)).astype(np.float32)
WEIGHT = np.array([1.0, 0.5, 0.0, 2.0, 1.0, 3.0], np.float32)


def _cos(t, p, axis=-1):
    return ((t / np.linalg.norm(t, axis=axis, keepdims=True))
            * (p / np.linalg.norm(p, axis=axis, keepdims=True))).sum(axis)


def _logcosh(t, p):
    x = p - t
    return np.mean(np.logaddexp(x, -x) - np.log(2), -1)


# (metric factory, y_true, y_pred, NumPy per-sample function)
MEAN_CASES = {
    "mape": (metrics.MeanAbsolutePercentageError, TARGET, LOGIT,
             lambda t, p: 100 * np.mean(np.abs(t - p) / np.maximum(np.abs(t), EPS), -1)),
    "msle": (metrics.MeanSquaredLogarithmicError, TARGET, PROB,
             lambda t, p: np.mean((np.log1p(p) - np.log1p(np.maximum(t, EPS))) ** 2, -1)),
    "hinge": (metrics.Hinge, BINARY, LOGIT,
              lambda t, p: np.mean(np.maximum(1 - (2 * t - 1) * p, 0), -1)),
    "squared_hinge": (metrics.SquaredHinge, BINARY, LOGIT,
                      lambda t, p: np.mean(np.maximum(1 - (2 * t - 1) * p, 0) ** 2, -1)),
    "categorical_hinge": (metrics.CategoricalHinge, ONE_HOT, LOGIT,
                          lambda t, p: np.maximum(((1 - t) * p).max(-1) - (t * p).sum(-1) + 1,
                                                  0)),
    "logcosh": (metrics.LogCoshError, TARGET, LOGIT, _logcosh),
    "kld": (metrics.KLDivergence, TARGET, PROB,
            lambda t, p: np.sum(np.clip(t, EPS, 1) * np.log(np.clip(t, EPS, 1) / p), -1)),
    "poisson": (metrics.Poisson, TARGET, PROB, lambda t, p: np.mean(p - t * np.log(p + EPS), -1)),
    "cosine": (metrics.CosineSimilarity, TARGET, LOGIT, _cos),
}


def _stream(metric, y_true, y_pred, traced=False):
    """Batch 1 unweighted, batch 2 weighted; the result (after a traced update if asked)."""
    update = metric.update_state
    if traced:
        update = tf.function(lambda t, p, w=None: metric.update_state(t, p, sample_weight=w))
    update(y_true[:3], y_pred[:3])
    update(y_true[3:], y_pred[3:], WEIGHT[3:])
    return np.asarray(metric.result())


def _weighted_mean(per_sample):
    weight = np.concatenate([np.ones(3, np.float32), WEIGHT[3:]])
    return (per_sample * weight).sum() / weight.sum()


@pytest.mark.parametrize("case", sorted(MEAN_CASES))
@pytest.mark.parametrize("traced", [False, True])
def test_mean_function_metrics_match_numpy(case, traced):
    cls, y_true, y_pred, fn = MEAN_CASES[case]
    np.testing.assert_allclose(_stream(cls(), y_true, y_pred, traced),
                               _weighted_mean(fn(y_true, y_pred)), rtol=1e-5)


def test_root_mean_squared_and_relative_errors():
    weight = np.concatenate([np.ones(3, np.float32), WEIGHT[3:]])[:, None] * np.ones((1, 3))
    sq = (LOGIT - TARGET) ** 2
    for traced in (False, True):
        np.testing.assert_allclose(_stream(metrics.RootMeanSquaredError(), TARGET, LOGIT, traced),
                                   np.sqrt((sq * weight).sum() / weight.sum()), rtol=1e-6)
        normalizer = np.array([1.0, 2.0, 0.0], np.float32)  # a zero normalizer gives 0
        rel = np.abs(TARGET - LOGIT) / np.where(normalizer == 0, 1, normalizer) * (normalizer != 0)
        np.testing.assert_allclose(
            _stream(metrics.MeanRelativeError(normalizer), TARGET, LOGIT, traced),
            (rel * weight).sum() / weight.sum(), rtol=1e-6)
    assert metrics.RootMeanSquaredError().name == "root_mean_squared_error"
    assert metrics.MeanRelativeError([1.0]).get_config() == {
        "name": "mean_relative_error", "dtype": "float32", "normalizer": [1.0]}


def test_mean_tensor_is_elementwise_and_checks_shapes():
    m = metrics.MeanTensor()
    with pytest.raises(ValueError, match="does not have any value yet"):
        m.result()
    m.update_state(TARGET[:3])
    m.update_state(TARGET[3:], sample_weight=WEIGHT[3:])
    expected = (TARGET[:3] + TARGET[3:] * WEIGHT[3:, None]) / (1 + WEIGHT[3:, None])
    np.testing.assert_allclose(m.result().numpy(), expected, rtol=1e-6)
    with pytest.raises(ValueError, match=r"same shape.*\(3, 3\).*\(2, 3\)"):
        m.update_state(TARGET[:2])
    m.reset_state()
    np.testing.assert_allclose(m.result().numpy(), np.zeros((3, 3)))
    traced = metrics.MeanTensor(shape=(3,))
    step = tf.function(lambda v: traced.update_state(v))
    step(np.array([1.0, 2.0, 3.0], np.float32))
    step(np.array([3.0, 4.0, 5.0], np.float32))
    np.testing.assert_allclose(traced.result().numpy(), [2.0, 3.0, 4.0])


def _np_counts(labels, preds, weights, thresholds):
    """Weighted TP, FP, TN, FN per threshold (prediction > threshold is positive)."""
    y, p, w = labels.reshape(-1, 1), preds.reshape(-1, 1), weights.reshape(-1, 1)
    pos = p > np.asarray(thresholds, np.float32)[None, :]
    return {"true_positives": (w * (y == 1) * pos).sum(0),
            "false_positives": (w * (y == 0) * pos).sum(0),
            "true_negatives": (w * (y == 0) * ~pos).sum(0),
            "false_negatives": (w * (y == 1) * ~pos).sum(0)}


def _stream_weights():
    return np.concatenate([np.ones(3, np.float32), WEIGHT[3:]])[:, None] * np.ones((1, 3))


@pytest.mark.parametrize("traced", [False, True])
def test_confusion_counts(traced):
    for cls, count in [(metrics.TruePositives, "true_positives"),
                       (metrics.FalsePositives, "false_positives"),
                       (metrics.TrueNegatives, "true_negatives"),
                       (metrics.FalseNegatives, "false_negatives")]:
        expected = _np_counts(BINARY, PROB, _stream_weights(), [0.5])[count][0]
        np.testing.assert_allclose(_stream(cls(), BINARY, PROB, traced), expected)
        several = _np_counts(BINARY, PROB, _stream_weights(), [0.2, 0.6, 0.9])[count]
        np.testing.assert_allclose(_stream(cls(thresholds=[0.2, 0.6, 0.9]), BINARY, PROB,
                                           traced), several)
        assert cls().name == count


def _np_at_constraint(constrained, dependent, value, num_thresholds=200, class_id=None):
    labels, preds, weights = BINARY, PROB, _stream_weights()
    if class_id is not None:
        labels, preds, weights = labels[:, class_id], preds[:, class_id], weights[:, class_id]
    thresholds = [0.5] if num_thresholds == 1 else np.linspace(0, 1, num_thresholds)
    c = _np_counts(labels, preds, weights, thresholds)
    tp, fp, tn, fn = (c[k] for k in ("true_positives", "false_positives", "true_negatives",
                                     "false_negatives"))
    with np.errstate(invalid="ignore", divide="ignore"):
        rates = {"precision": np.nan_to_num(tp / (tp + fp)),
                 "recall": np.nan_to_num(tp / (tp + fn)),
                 "specificity": np.nan_to_num(tn / (tn + fp))}
    feasible = rates[constrained] >= value
    return rates[dependent][feasible].max() if feasible.any() else 0.0


@pytest.mark.parametrize("traced", [False, True])
def test_rates_at_a_constraint(traced):
    cases = [(metrics.SensitivityAtSpecificity(0.5), "specificity", "recall", 0.5, {}),
             (metrics.SpecificityAtSensitivity(0.7, num_thresholds=7), "recall", "specificity",
              0.7, {"num_thresholds": 7}),
             (metrics.PrecisionAtRecall(0.6), "recall", "precision", 0.6, {}),
             (metrics.RecallAtPrecision(0.8, class_id=1), "precision", "recall", 0.8,
              {"class_id": 1}),
             (metrics.RecallAtPrecision(0.3, num_thresholds=1), "precision", "recall", 0.3,
              {"num_thresholds": 1}),
             (metrics.PrecisionAtRecall(1.0), "recall", "precision", 1.0, {})]
    for metric, constrained, dependent, value, kwargs in cases:
        np.testing.assert_allclose(_stream(metric, BINARY, PROB, traced),
                                   _np_at_constraint(constrained, dependent, value, **kwargs),
                                   rtol=1e-6, err_msg=metric.name)


def test_values_recorded_from_tf_keras():
    # tf-keras 2.21 (float32) streaming these six rows in two batches, the second weighted by
    # [2, 1, 3] (the script that printed them: reference inputs rebuilt here from a seed)
    rng = np.random.default_rng(3)
    t = rng.uniform(0, 1, (6, 3)).astype(np.float32)
    p = rng.uniform(0.05, 0.95, (6, 3)).astype(np.float32)
    b = (rng.uniform(size=(6, 3)) > 0.5).astype(np.float32)
    w = np.array([2.0, 1.0, 3.0], np.float32)
    recorded = [(metrics.KLDivergence(), t, p, 0.3959156572818756),
                (metrics.Poisson(), t, p, 0.9203097224235535),
                (metrics.MeanSquaredLogarithmicError(), t, p, 0.05250447988510132),
                (metrics.TruePositives(), b, p, 4.0),
                (metrics.SensitivityAtSpecificity(0.5), b, p, 0.2142857164144516),
                (metrics.PrecisionAtRecall(0.6), b, p, 0.5185185074806213)]
    for metric, y_true, y_pred, value in recorded:
        metric.update_state(y_true[:3], y_pred[:3])
        metric.update_state(y_true[3:], y_pred[3:], sample_weight=w)
        np.testing.assert_allclose(float(metric.result()), value, rtol=1e-6, err_msg=metric.name)


def test_configs_round_trip_and_defaults():
    made = [cls() for cls, *_ in MEAN_CASES.values()] + [
        metrics.CosineSimilarity(axis=0), metrics.RootMeanSquaredError(),
        metrics.MeanRelativeError([2.0, 3.0]), metrics.MeanTensor(),
        metrics.TruePositives(), metrics.FalseNegatives(thresholds=[0.1, 0.7]),
        metrics.SensitivityAtSpecificity(0.4, num_thresholds=10, class_id=2),
        metrics.SpecificityAtSensitivity(0.3), metrics.PrecisionAtRecall(0.2),
        metrics.RecallAtPrecision(0.9)]
    for metric in made:
        again = metrics.deserialize(metrics.serialize(metric))
        assert type(again) is type(metric) and again.get_config() == metric.get_config()
    assert metrics.PrecisionAtRecall(0.5).get_config() == {
        "name": "precision_at_recall", "dtype": "float32", "class_id": None,
        "num_thresholds": 200, "recall": 0.5}
    assert metrics.FalsePositives(thresholds=[0.3, 0.6]).get_config()["thresholds"] == [0.3, 0.6]
    assert [m.name for m in (metrics.LogCoshError(), metrics.KLDivergence())] == [
        "logcosh", "kullback_leibler_divergence"]


def test_function_aliases_and_string_identifiers():
    assert metrics.get("mape") is metrics.MAPE is metrics.mean_absolute_percentage_error
    assert metrics.get("kld") is metrics.kullback_leibler_divergence is metrics.KLD
    assert metrics.get("logcosh") is metrics.log_cosh
    assert metrics.get("msle") is metrics.MSLE
    assert metrics.get("binary_focal_crossentropy") is metrics.binary_focal_crossentropy
    assert metrics.get("cosine_similarity") is metrics.cosine_similarity
    assert float(metrics.cosine_similarity([[1.0, 0.0]], [[2.0, 0.0]])[0]) == 1.0
    assert isinstance(metrics.get("RootMeanSquaredError"), metrics.RootMeanSquaredError)
    assert isinstance(metrics.get("TruePositives"), metrics.TruePositives)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match=r"PrecisionAtRecall: argument `recall`.*1.5"):
        metrics.PrecisionAtRecall(1.5)
    with pytest.raises(ValueError, match="SensitivityAtSpecificity: argument `num_thresholds`"):
        metrics.SensitivityAtSpecificity(0.5, num_thresholds=0)
    with pytest.raises(ValueError, match="TruePositives: thresholds"):
        metrics.TruePositives(thresholds=[1.5])
    with pytest.raises(ValueError, match=r"RootMeanSquaredError: .*\(6, 3\).*\(6, 2\)"):
        metrics.RootMeanSquaredError().update_state(TARGET, LOGIT[:, :2])
    with pytest.raises(ValueError, match="MeanRelativeError"):
        metrics.MeanRelativeError([1.0, 2.0]).update_state(TARGET, LOGIT)
    with pytest.raises(ValueError, match=r"hinge: .*\(6, 3\).*\(6, 2\)"):
        metrics.Hinge().update_state(BINARY, LOGIT[:, :2])


def test_string_metrics_in_a_traced_fit():
    backend.clear_session()
    x = RNG.normal(size=(16, 3)).astype(np.float32)
    y = RNG.uniform(0.1, 1.0, (16, 2)).astype(np.float32)
    model = keras.Sequential([layers.Dense(2, activation="softplus", input_shape=(3,))])
    names = ["mape", "msle", "kld", "logcosh", "poisson", "cosine_similarity"]
    model.compile(optimizer="sgd", loss="mse", metrics=names + [metrics.RootMeanSquaredError()])
    model.fit(x, y, epochs=2, batch_size=8, verbose=0)
    results = model.evaluate(x, y, batch_size=16, verbose=0, return_dict=True)
    pred = model.predict(x, verbose=0).astype(np.float64)
    expected = {
        "mape": 100 * np.mean(np.abs(y - pred) / y),
        "msle": np.mean((np.log1p(pred) - np.log1p(y)) ** 2),
        "kld": np.mean(np.sum(y * np.log(y / np.clip(pred, EPS, 1)), -1)),
        "logcosh": np.mean(_logcosh(y, pred)),
        "poisson": np.mean(pred - y * np.log(pred + EPS)),
        "cosine_similarity": np.mean(_cos(y, pred)),
        "root_mean_squared_error": np.sqrt(np.mean((y - pred) ** 2)),
    }
    for name, value in expected.items():
        np.testing.assert_allclose(results[name], value, rtol=1e-4, err_msg=name)
