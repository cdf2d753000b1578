"""Metrics against values computed by hand (and scikit-learn / SciPy's documented results)."""

import numpy as np
import pytest

from electra_tf.finetuning import task_metrics as m


def test_binary_metrics_by_hand():
    labels = [1, 1, 1, 0, 0, 0, 0, 1]
    predictions = [1, 1, 0, 0, 0, 1, 0, 1]
    # tp=3 fn=1 fp=1 tn=3
    out = m.task_metrics(labels, predictions, num_labels=2)
    assert out["accuracy"] == pytest.approx(6 / 8)
    assert out["f1"] == pytest.approx(2 * 3 / (2 * 3 + 1 + 1))
    assert out["mcc"] == pytest.approx((3 * 3 - 1 * 1) / np.sqrt(4 * 4 * 4 * 4))


def test_multiclass_mcc_matches_sklearn_doc_example():
    # sklearn.metrics.matthews_corrcoef([+1, +1, +1, -1], [+1, -1, +1, +1]) == -0.333...
    assert m.matthews_corrcoef([1, 1, 1, 0], [1, 0, 1, 1]) == pytest.approx(-1 / 3)
    assert m.matthews_corrcoef([0, 1, 2, 0, 1, 2], [0, 1, 2, 0, 1, 2], 3) == pytest.approx(1.0)
    assert m.matthews_corrcoef([0, 0, 0], [0, 0, 0]) == 0.0


def test_correlations():
    x = [1, 2, 3, 4, 5]
    assert m.pearson(x, [5, 6, 7, 8, 7]) == pytest.approx(6 / np.sqrt(10 * 5.2))  # by hand
    assert m.spearman(x, [5, 6, 7, 8, 7]) == pytest.approx(0.8207826816681233)  # scipy.stats.spearmanr docs
    assert m.spearman([1, 2, 3], [1, 4, 9]) == pytest.approx(1.0)
    out = m.task_metrics([0.0, 1.0, 2.0], [0.1, 0.9, 2.5], regression=True)
    assert set(out) == {"pearson", "spearman"} and out["spearman"] == pytest.approx(1.0)
