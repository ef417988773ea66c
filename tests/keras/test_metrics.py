"""Streaming metrics: accumulation over batches, weights, reset, names."""

import numpy as np
import pytest

from tapeflow import keras
from tapeflow.keras import metrics


def test_mean_accumulates_weighted_and_resets():
    m = metrics.Mean()
    m.update_state([1.0, 2.0])
    m.update_state([10.0], sample_weight=[2.0])
    np.testing.assert_allclose(m.result().numpy(), (1 + 2 + 20) / 4)
    m.reset_state()
    assert float(m.result()) == 0.0


def test_accuracies_over_several_batches():
    probs = np.array([[0.1, 0.8, 0.1], [0.6, 0.3, 0.1], [0.2, 0.3, 0.5], [0.3, 0.4, 0.3]])
    labels = np.array([1, 2, 2, 0])
    sparse = metrics.SparseCategoricalAccuracy()
    sparse.update_state(labels[:2], probs[:2])
    sparse.update_state(labels[2:, None], probs[2:])
    np.testing.assert_allclose(sparse.result().numpy(), 0.5)
    cat = metrics.CategoricalAccuracy()
    np.testing.assert_allclose(cat(np.eye(3)[labels], probs).numpy(), 0.5)
    top2 = metrics.TopKCategoricalAccuracy(k=2)
    np.testing.assert_allclose(top2(np.eye(3)[labels], probs).numpy(), 0.75)
    sparse_top2 = metrics.SparseTopKCategoricalAccuracy(k=2)
    np.testing.assert_allclose(sparse_top2(labels, probs).numpy(), 0.75)
    binary = metrics.BinaryAccuracy(threshold=0.5)
    np.testing.assert_allclose(binary([[1], [0], [1]], [[0.7], [0.6], [0.2]]).numpy(), 1 / 3)
    exact = metrics.Accuracy()
    np.testing.assert_allclose(exact([1, 2, 3, 4], [1, 2, 0, 4]).numpy(), 0.75)


def test_top_k_counts_ties_as_in():
    top1 = metrics.SparseTopKCategoricalAccuracy(k=1)
    np.testing.assert_allclose(top1([0], [[0.5, 0.5, 0.0]]).numpy(), 1.0)


def test_wrapped_regression_metrics():
    m = metrics.MeanAbsoluteError()
    m.update_state([[1.0, 2.0]], [[2.0, 4.0]])
    m.update_state([[0.0, 0.0]], [[1.0, 1.0]])
    np.testing.assert_allclose(m.result().numpy(), (1.5 + 1.0) / 2)


def test_get_and_names():
    assert metrics.get("mae") is metrics.mean_absolute_error
    assert metrics.SparseCategoricalAccuracy().name == "sparse_categorical_accuracy"
    assert [v.name for v in metrics.Mean(name="loss").variables] == ["loss/total:0",
                                                                     "loss/count:0"]
    with pytest.raises(ValueError, match="Unknown metric"):
        metrics.get("acuracy")


# --- Precision, Recall, AUC ---------------------------------------------------------------
def test_threshold_metrics_documented_examples():
    auc = keras.metrics.AUC(num_thresholds=3)
    auc.update_state([0, 0, 1, 1], [0, 0.5, 0.3, 0.9])
    # thresholds [-eps, 0.5, 1+eps]: TPR [1, 0.5, 0], FPR [1, 0, 0] -> 1 * (1 + 0.5) / 2
    assert float(auc.result()) == pytest.approx(0.75)
    for cls in (keras.metrics.Precision, keras.metrics.Recall):
        m = cls()
        m.update_state([0, 1, 1, 1], [1, 0, 1, 1])
        assert float(m.result()) == pytest.approx(2 / 3)
        m.reset_state()
        m.update_state([0, 1, 1, 1], [1, 0, 1, 1], sample_weight=[0, 0, 1, 0])
        assert float(m.result()) == pytest.approx(1.0)


def _mann_whitney(labels, scores, weights):
    """P(score of a positive > score of a negative), ties counting half, weighted."""
    pos, neg = labels == 1, labels == 0
    wp, wn = weights[pos], weights[neg]
    diff = scores[pos][:, None] - scores[neg][None, :]
    wins = (diff > 0) + 0.5 * (diff == 0)
    return float((wp[:, None] * wn[None, :] * wins).sum() / (wp.sum() * wn.sum()))


def test_roc_auc_is_exact_on_the_threshold_grid_and_streams():
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, size=300)
    # scores between grid thresholds i/199, shifted up for positives so the AUC is not 0.5
    bins = np.clip(rng.integers(0, 150, size=300) + 40 * labels, 0, 198)
    scores = ((bins + 0.5) / 199).astype(np.float32)
    weights = rng.uniform(0.5, 2.0, size=300).astype(np.float32)
    whole = keras.metrics.AUC()
    whole.update_state(labels, scores, sample_weight=weights)
    expected = _mann_whitney(labels, scores, weights)
    assert float(whole.result()) == pytest.approx(expected, rel=1e-5)
    streamed = keras.metrics.AUC()
    for part in np.array_split(np.arange(300), 3):
        streamed.update_state(labels[part], scores[part], sample_weight=weights[part])
    assert float(streamed.result()) == pytest.approx(expected, rel=1e-5)


def test_pr_auc_bounds_and_separable_scores():
    rng = np.random.default_rng(1)
    labels = rng.integers(0, 2, size=200)
    scores = np.clip(rng.normal(0.4 + 0.2 * labels, 0.2), 0, 1).astype(np.float32)
    results = {}
    for method in ("minoring", "interpolation", "majoring"):
        m = keras.metrics.AUC(curve="PR", summation_method=method)
        m.update_state(labels, scores)
        results[method] = float(m.result())
    assert results["minoring"] <= results["interpolation"] <= results["majoring"]
    assert 0.5 < results["interpolation"] < 1.0
    separable = np.where(labels == 1, 0.9, 0.1).astype(np.float32)
    for curve in ("ROC", "PR"):
        m = keras.metrics.AUC(curve=curve)
        m.update_state(labels, separable)
        assert float(m.result()) == pytest.approx(1.0, abs=1e-6)
    logits = keras.metrics.AUC(from_logits=True)
    logits.update_state(labels, np.log(scores + 1e-6) - np.log1p(-scores + 1e-6))
    plain = keras.metrics.AUC()
    plain.update_state(labels, scores)
    assert float(logits.result()) == pytest.approx(float(plain.result()), abs=1e-3)


def test_precision_recall_at_several_thresholds_and_class_id():
    rng = np.random.default_rng(2)
    y_true = rng.integers(0, 2, size=(50, 3))
    y_pred = rng.uniform(size=(50, 3)).astype(np.float32)
    thresholds = [0.2, 0.5, 0.8]
    p = keras.metrics.Precision(thresholds=thresholds, class_id=1)
    r = keras.metrics.Recall(thresholds=thresholds, class_id=1)
    p.update_state(y_true, y_pred)
    r.update_state(y_true, y_pred)
    t, s = y_true[:, 1] == 1, y_pred[:, 1]
    for i, th in enumerate(thresholds):
        tp = np.sum(t & (s > th))
        assert p.result().numpy()[i] == pytest.approx(tp / np.sum(s > th))
        assert r.result().numpy()[i] == pytest.approx(tp / np.sum(t))
    with pytest.raises(ValueError, match="thresholds"):
        keras.metrics.Precision(thresholds=1.5)
    with pytest.raises(ValueError, match="curve"):
        keras.metrics.AUC(curve="DET")


def test_precision_recall_top_k_with_per_sample_weights():
    rng = np.random.default_rng(4)
    y_true = rng.integers(0, 2, size=(40, 5))
    y_pred = rng.uniform(size=(40, 5)).astype(np.float32)
    weight = rng.uniform(0.5, 2.0, size=40)
    order = np.argsort(-y_pred, axis=1, kind="stable")
    for k in (1, 2):
        top = np.zeros(y_pred.shape, bool)
        np.put_along_axis(top, order[:, :k], True, axis=1)
        w = np.broadcast_to(weight[:, None], y_pred.shape)
        for thresholds, class_id in ((None, None), ([0.3, 0.6], None), (None, 2)):
            p = keras.metrics.Precision(thresholds=thresholds, top_k=k, class_id=class_id)
            r = keras.metrics.Recall(thresholds=thresholds, top_k=k, class_id=class_id)
            for m in (p, r):
                m.update_state(y_true[:25], y_pred[:25], sample_weight=weight[:25])
                m.update_state(y_true[25:], y_pred[25:], sample_weight=weight[25:])
            cols = slice(None) if class_id is None else slice(class_id, class_id + 1)
            t, kept, ww, s = (y_true == 1)[:, cols], top[:, cols], w[:, cols], y_pred[:, cols]
            for i, th in enumerate(thresholds or [-np.inf]):
                tp = np.sum(ww * (t & kept & (s > th)))
                expect_p = tp / np.sum(ww * (kept & (s > th)))
                expect_r = tp / np.sum(ww * t)
                got_p, got_r = np.atleast_1d(p.result().numpy()), np.atleast_1d(r.result().numpy())
                assert got_p[i] == pytest.approx(expect_p, rel=1e-5), (k, thresholds, class_id)
                assert got_r[i] == pytest.approx(expect_r, rel=1e-5), (k, thresholds, class_id)
            assert p.get_config()["top_k"] == k
            assert keras.metrics.Precision.from_config(p.get_config()).top_k == k
    with pytest.raises(ValueError, match="top_k"):
        keras.metrics.Recall(top_k=0)


def _exact_roc_auc(labels, scores):
    """Probability that a positive outranks a negative (ties half): the ROC area exactly."""
    pos, neg = scores[labels == 1], scores[labels == 0]
    wins = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return wins / (len(pos) * len(neg))


def test_auc_multi_label_and_label_weights():
    rng = np.random.default_rng(6)
    y_true = rng.integers(0, 2, size=(80, 3))
    y_pred = np.clip(0.3 * y_true + 0.7 * rng.uniform(size=(80, 3)), 0, 1).astype(np.float32)
    exact = np.array([_exact_roc_auc(y_true[:, j], y_pred[:, j]) for j in range(3)])
    m = keras.metrics.AUC(num_thresholds=2000, multi_label=True)
    m.update_state(y_true[:50], y_pred[:50])
    m.update_state(y_true[50:], y_pred[50:])
    assert m.true_positives.shape == (2000, 3)
    assert float(m.result()) == pytest.approx(exact.mean(), abs=2e-3)
    weights = np.array([1.0, 2.0, 0.5])
    w = keras.metrics.AUC(num_thresholds=2000, multi_label=True, num_labels=3,
                          label_weights=weights)
    w.update_state(y_true, y_pred)
    assert float(w.result()) == pytest.approx((exact * weights).sum() / weights.sum(), abs=2e-3)
    # without multi_label, label weights weigh each class's column of the pooled counts
    pooled = keras.metrics.AUC(label_weights=weights)
    pooled.update_state(y_true, y_pred)
    same = keras.metrics.AUC()
    same.update_state(y_true.ravel(), y_pred.ravel(), sample_weight=np.tile(weights, 80))
    assert float(pooled.result()) == pytest.approx(float(same.result()), rel=1e-6)
    assert keras.metrics.AUC.from_config(w.get_config()).get_config() == w.get_config()
    with pytest.raises(ValueError, match="labels"):
        keras.metrics.AUC(multi_label=True).update_state(y_true.ravel(), y_pred.ravel())


def test_multi_label_auc_built_on_first_batch_of_a_traced_fit():
    rng = np.random.default_rng(7)
    x = rng.normal(size=(48, 4)).astype(np.float32)
    y = (x[:, :2] + 0.3 * rng.normal(size=(48, 2)) > 0).astype(np.float32)
    model = keras.Sequential([keras.layers.Dense(2, activation="sigmoid", input_shape=(4,))])
    auc = keras.metrics.AUC(multi_label=True, name="auc")
    model.compile(optimizer=keras.optimizers.SGD(0.0), loss="binary_crossentropy", metrics=[auc])
    history = model.fit(x, y, batch_size=16, epochs=1, verbose=0)
    probs = model.predict(x, verbose=0)
    exact = np.mean([_exact_roc_auc(y[:, j], probs[:, j]) for j in range(2)])
    assert history.history["auc"][0] == pytest.approx(exact, abs=2e-2)


def test_threshold_metrics_in_a_traced_fit():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(40, 4)).astype(np.float32)
    y = (x[:, :1] + 0.3 * rng.normal(size=(40, 1)) > 0).astype(np.float32)
    model = keras.Sequential([keras.layers.Dense(1, activation="sigmoid", input_shape=(4,))])
    model.compile(optimizer=keras.optimizers.SGD(0.0), loss="binary_crossentropy",
                  metrics=["AUC", keras.metrics.Precision(), "Recall"])
    history = model.fit(x, y, batch_size=16, epochs=1, verbose=0)
    pred = model.predict(x, verbose=0)
    for name, metric in (("auc", keras.metrics.AUC()), ("precision", keras.metrics.Precision()),
                         ("recall", keras.metrics.Recall())):
        metric.update_state(y, pred)
        assert history.history[name][0] == pytest.approx(float(metric.result()), rel=1e-5)
