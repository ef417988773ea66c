"""IoU metrics (one streamed confusion matrix), F-beta/F1 and R2 scores (per-column sums built
at the first batch): NumPy formulas over two streamed batches (the second weighted), eager and
traced, configs, tf-keras 2.21 values, bad arguments, and a traced fit.
"""

from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf
from tapeflow import keras
from tapeflow.keras import backend, layers, metrics

RNG = np.random.default_rng(21)
LABELS = RNG.integers(0, 3, (8,))
PREDS = RNG.integers(0, 3, (8,))
SCORES = RNG.uniform(size=(8, 3)).astype(np.float32)
ONE_HOT = np.eye(3, dtype=np.float32)[LABELS]
MULTI = (RNG.uniform(size=(8, 3)) > 0.5).astype(np.float32)
BIN_TRUE = (RNG.uniform(size=(8,)) > 0.5).astype(np.float32)
BIN_SCORE = RNG.uniform(size=(8,)).astype(np.float32)
REG_TRUE = RNG.normal(size=(8, 2)).astype(np.float32)
REG_PRED = (REG_TRUE + 0.5 * RNG.normal(size=(8, 2))).astype(np.float32)
WEIGHT = RNG.uniform(0.2, 2.0, (8,)).astype(np.float32)
STREAM_WEIGHT = np.concatenate([np.ones(4, np.float32), WEIGHT[4:]])


def _stream(metric, y_true, y_pred, traced=False):
    """First half unweighted, second half weighted; then the result."""
    update = metric.update_state
    if traced:
        update = tf.function(lambda t, p, w=None: metric.update_state(t, p, sample_weight=w))
    update(y_true[:4], y_pred[:4])
    update(y_true[4:], y_pred[4:], WEIGHT[4:])
    return np.asarray(metric.result())


def _np_iou(labels, preds, classes, targets, weight=STREAM_WEIGHT, ignore=None):
    cm = np.zeros((classes, classes))
    for t, p, w in zip(labels, preds, weight):
        if t != ignore:
            cm[t, p] += w
    tp = np.diag(cm)
    union = cm.sum(0) + cm.sum(1) - tp
    seen = union[targets] != 0
    return (tp[targets][seen] / union[targets][seen]).sum() / max(seen.sum(), 1)


@pytest.mark.parametrize("traced", [False, True])
def test_iou_family_matches_numpy(traced):
    argmax = SCORES.argmax(-1)
    binary_pred = (BIN_SCORE >= 0.3).astype(int)
    cases = [
        (metrics.IoU(3, [0, 2]), LABELS, PREDS, _np_iou(LABELS, PREDS, 3, [0, 2])),
        (metrics.IoU(3, [1]), LABELS, PREDS, _np_iou(LABELS, PREDS, 3, [1])),
        (metrics.MeanIoU(3), LABELS, PREDS, _np_iou(LABELS, PREDS, 3, [0, 1, 2])),
        (metrics.MeanIoU(3, ignore_class=1), LABELS, PREDS,
         _np_iou(LABELS, PREDS, 3, [0, 1, 2], ignore=1)),
        (metrics.MeanIoU(3, sparse_y_pred=False), LABELS, SCORES,
         _np_iou(LABELS, argmax, 3, [0, 1, 2])),
        (metrics.BinaryIoU([1], threshold=0.3), BIN_TRUE, BIN_SCORE,
         _np_iou(BIN_TRUE.astype(int), binary_pred, 2, [1])),
        (metrics.OneHotIoU(3, [0, 1]), ONE_HOT, SCORES, _np_iou(LABELS, argmax, 3, [0, 1])),
        (metrics.OneHotMeanIoU(3), ONE_HOT, SCORES, _np_iou(LABELS, argmax, 3, [0, 1, 2])),
    ]
    for metric, y_true, y_pred, expected in cases:
        np.testing.assert_allclose(_stream(metric, y_true, y_pred, traced), expected, rtol=1e-6,
                                   err_msg=metric.get_config())


def test_iou_ignore_class_outside_the_classes_and_images():
    # a "void" label 255 is dropped, not counted; [batch, h, w] maps with per-image weights
    labels = np.array([[[0, 255], [1, 1]], [[2, 0], [255, 2]]])
    preds = np.array([[[0, 1], [1, 0]], [[2, 2], [1, 2]]])
    m = metrics.MeanIoU(3, ignore_class=255)
    m.update_state(labels, preds, sample_weight=[1.0, 2.0])
    flat_w = np.repeat([1.0, 2.0], 4)
    np.testing.assert_allclose(m.result().numpy(), _np_iou(labels.ravel(), preds.ravel(), 3,
                                                           [0, 1, 2], flat_w, ignore=255),
                               rtol=1e-6)


def _np_fbeta(y_true, scores, beta=1.0, threshold=None, average=None, weight=STREAM_WEIGHT):
    if threshold is None:
        pred = (scores >= scores.max(-1, keepdims=True)) & (np.abs(scores) > 1e-9)
    else:
        pred = scores > threshold
    pred, w = pred.astype(np.float64), weight[:, None]
    axis = None if average == "micro" else 0
    tp = (w * pred * y_true).sum(axis)
    fp = (w * pred * (1 - y_true)).sum(axis)
    fn = (w * (1 - pred) * y_true).sum(axis)
    with np.errstate(invalid="ignore", divide="ignore"):
        precision, recall = np.nan_to_num(tp / (tp + fp)), np.nan_to_num(tp / (tp + fn))
        b2 = beta * beta
        score = np.nan_to_num(precision * recall / (b2 * precision + recall)) * (1 + b2)
    if average == "weighted":
        support = (w * y_true).sum(0)
        return (score * support / support.sum()).sum()
    return score.mean() if average else score


@pytest.mark.parametrize("traced", [False, True])
def test_f_scores_match_numpy(traced):
    cases = [(metrics.F1Score(), MULTI, {}),
             (metrics.F1Score(average="micro", threshold=0.5), MULTI,
              {"average": "micro", "threshold": 0.5}),
             (metrics.F1Score(average="macro", threshold=0.4), MULTI,
              {"average": "macro", "threshold": 0.4}),
             (metrics.FBetaScore(average="weighted", beta=2.0, threshold=0.6), MULTI,
              {"average": "weighted", "beta": 2.0, "threshold": 0.6}),
             (metrics.FBetaScore(beta=0.5), ONE_HOT, {"beta": 0.5})]
    for metric, y_true, kwargs in cases:
        np.testing.assert_allclose(_stream(metric, y_true, SCORES, traced),
                                   _np_fbeta(y_true, SCORES, **kwargs), rtol=1e-5,
                                   err_msg=str(kwargs))


def _np_r2(y, p, weight=STREAM_WEIGHT, aggregation="uniform_average", regressors=0):
    w = weight[:, None] * np.ones_like(y)
    mean = (w * y).sum(0) / w.sum(0)
    total = (w * (y - mean) ** 2).sum(0)
    raw = 1 - (w * (y - p) ** 2).sum(0) / total
    score = {"uniform_average": raw.mean(), None: raw,
             "variance_weighted_average": (total * raw).sum() / total.sum()}[aggregation]
    n = y.size  # tf-keras counts every entry, not rows
    if 0 < regressors < n - 1:
        score = 1 - (1 - score) * (n - 1) / (n - regressors - 1)
    return score


@pytest.mark.parametrize("traced", [False, True])
def test_r2_score_matches_numpy(traced):
    for kwargs in [{}, {"class_aggregation": None},
                   {"class_aggregation": "variance_weighted_average"}, {"num_regressors": 3},
                   {"num_regressors": 20}]:   # p >= n - 1: the plain score, as tf-keras
        expected = _np_r2(REG_TRUE, REG_PRED, aggregation=kwargs.get("class_aggregation",
                                                                     "uniform_average"),
                          regressors=kwargs.get("num_regressors", 0))
        np.testing.assert_allclose(_stream(metrics.R2Score(**kwargs), REG_TRUE, REG_PRED, traced),
                                   expected, rtol=1e-5, err_msg=str(kwargs))


def test_values_recorded_from_tf_keras():
    # tf-keras 2.21 (float32): inputs from default_rng(5) in this order, two batches of 4, the
    # second weighted by the last four of `sw`
    rng = np.random.default_rng(5)
    lab, pred = rng.integers(0, 3, (8,)), rng.integers(0, 3, (8,))
    scores = rng.uniform(size=(8, 3)).astype(np.float32)
    rng.uniform(size=(8,)), rng.uniform(size=(8,))
    multi = (rng.uniform(size=(8, 3)) > 0.5).astype(np.float32)
    reg_t = rng.normal(size=(8, 2)).astype(np.float32)
    reg_p = (reg_t + 0.5 * rng.normal(size=(8, 2))).astype(np.float32)
    sw = rng.uniform(0.2, 2.0, (8,)).astype(np.float32)
    recorded = [(metrics.IoU(3, [0, 2]), lab, pred, 0.3636300563812256),
                (metrics.MeanIoU(3, ignore_class=1), lab, pred, 0.29970982670783997),
                (metrics.OneHotMeanIoU(3), np.eye(3)[lab], scores, 0.37497949600219727),
                (metrics.F1Score(), multi, scores, [0.0, 0.6341266632080078, 0.40194618701934814]),
                (metrics.FBetaScore(average="weighted", beta=2.0, threshold=0.6), multi, scores,
                 0.4252755045890808),
                (metrics.R2Score(), reg_t, reg_p, 0.7346883416175842),
                (metrics.R2Score(num_regressors=3), reg_t, reg_p, 0.6683604717254639)]
    for metric, y_true, y_pred, value in recorded:
        metric.update_state(y_true[:4], y_pred[:4])
        metric.update_state(y_true[4:], y_pred[4:], sample_weight=sw[4:])
        np.testing.assert_allclose(metric.result().numpy(), value, rtol=1e-6,
                                   err_msg=metric.name)


def test_configs_round_trip_and_defaults():
    made = [metrics.IoU(4, [1, 3], ignore_class=0, sparse_y_true=False, axis=1),
            metrics.MeanIoU(3), metrics.BinaryIoU([1], threshold=0.2), metrics.OneHotIoU(3, [2]),
            metrics.OneHotMeanIoU(5, sparse_y_pred=True), metrics.F1Score(average="macro"),
            metrics.FBetaScore(beta=2.0, threshold=0.3), metrics.R2Score(num_regressors=2)]
    for metric in made:
        again = metrics.deserialize(metrics.serialize(metric))
        assert type(again) is type(metric) and again.get_config() == metric.get_config()
    assert metrics.MeanIoU(3).get_config() == {
        "name": "mean_io_u", "dtype": "float32", "num_classes": 3, "ignore_class": None,
        "sparse_y_true": True, "sparse_y_pred": True, "axis": -1}
    assert metrics.F1Score().get_config() == {"name": "f1_score", "dtype": "float32",
                                              "average": None, "threshold": None}
    assert metrics.R2Score().get_config() == {"name": "r2_score", "dtype": "float32",
                                              "class_aggregation": "uniform_average",
                                              "num_regressors": 0}


def test_reset_and_bad_arguments():
    m = metrics.F1Score(average="micro")
    m.update_state(MULTI, SCORES)
    m.reset_state()
    assert float(m.result()) == 0.0
    with pytest.raises(ValueError, match=r"IoU: target class ids \[0, 3\] are out of range"):
        metrics.IoU(3, [0, 3])
    with pytest.raises(ValueError, match="FBetaScore: invalid `average`"):
        metrics.FBetaScore(average="mean")
    with pytest.raises(ValueError, match="F1Score: invalid `threshold`"):
        metrics.F1Score(threshold=1)
    with pytest.raises(ValueError, match="R2Score: invalid value for argument `num_regressors`"):
        metrics.R2Score(num_regressors=-1)
    with pytest.raises(ValueError, match=r"F1Score expects 2D inputs.*\(8,\)"):
        metrics.F1Score().update_state(BIN_TRUE, BIN_SCORE)
    with pytest.raises(ValueError, match=r"R2Score: y_true and y_pred shapes differ.*\(8, 3\)"):
        metrics.R2Score().update_state(REG_TRUE, SCORES)
    with pytest.raises(ValueError, match=r"MeanIoU: labels and predictions.*\(8,\).*\(4,\)"):
        metrics.MeanIoU(3).update_state(LABELS, PREDS[:4])


def test_score_metrics_in_a_traced_fit():
    backend.clear_session()
    x = RNG.normal(size=(16, 4)).astype(np.float32)
    y = np.eye(3, dtype=np.float32)[RNG.integers(0, 3, 16)]
    model = keras.Sequential([layers.Dense(3, activation="softmax", input_shape=(4,))])
    model.compile(optimizer="sgd", loss="categorical_crossentropy",
                  metrics=[metrics.F1Score(average="macro"), metrics.OneHotMeanIoU(3),
                           metrics.R2Score()])
    model.fit(x, y, epochs=2, batch_size=8, verbose=0)
    results = model.evaluate(x, y, batch_size=16, verbose=0, return_dict=True)
    pred = model.predict(x, verbose=0)
    ones = np.ones(16, np.float32)
    np.testing.assert_allclose(results["f1_score"], _np_fbeta(y, pred, average="macro",
                                                              weight=ones), rtol=1e-5)
    np.testing.assert_allclose(results["one_hot_mean_io_u"],
                               _np_iou(y.argmax(-1), pred.argmax(-1), 3, [0, 1, 2], ones),
                               rtol=1e-5)
    np.testing.assert_allclose(results["r2_score"], _np_r2(y, pred, ones), rtol=1e-4)


def test_metrics_built_in_a_replicated_step_match_one_replica(monkeypatch):
    """Two mirrored replicas (the CPU split in two) report what one replica does: variables
    built lazily in the first step and summed over replicas."""
    from tapeflow.framework import config

    monkeypatch.setitem(config._settings, "logical",
                        [tf.config.LogicalDeviceConfiguration()] * 2)
    x = RNG.normal(size=(32, 4)).astype(np.float32)
    y = np.eye(3, dtype=np.float32)[RNG.integers(0, 3, 32)]

    def fit(strategy):
        with strategy.scope():
            tf.random.set_seed(3)
            model = keras.Sequential([layers.Dense(3, activation="softmax", input_shape=(4,))])
            model.compile("sgd", "categorical_focal_crossentropy",
                          metrics=[metrics.F1Score(average="macro"), metrics.R2Score(),
                                   metrics.OneHotMeanIoU(3), metrics.PrecisionAtRecall(0.5),
                                   "kld"])
        history = model.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0).history
        return history, model.evaluate(x, y, batch_size=16, verbose=0, return_dict=True)

    mirrored = tf.distribute.MirroredStrategy()
    assert mirrored.num_replicas_in_sync == 2
    two, two_eval = fit(mirrored)
    one, one_eval = fit(tf.distribute.MirroredStrategy(["/cpu:0"]))
    assert set(two) == {"loss", "f1_score", "r2_score", "one_hot_mean_io_u",
                        "precision_at_recall", "kld"}
    for key in one:
        np.testing.assert_allclose(two[key], one[key], rtol=1e-5, err_msg=key)
        np.testing.assert_allclose(two_eval[key], one_eval[key], rtol=1e-5, err_msg=key)
