"""Streaming metrics: accumulation over batches, weights, reset, names."""

import numpy as np
import pytest

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
