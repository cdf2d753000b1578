"""Dev-set metrics of the fine-tuning tasks, in NumPy (no scikit-learn / SciPy).

`task_metrics(labels, predictions, regression)` returns every metric that
applies: accuracy, F1 (binary: of label 1; multi-class: macro) and Matthews
correlation for classification; Pearson and Spearman for regression.
"""

import numpy as np


def accuracy(labels, predictions):
    return float(np.mean(np.asarray(labels) == np.asarray(predictions)))


def f1(labels, predictions, positive=1):
    """F1 of one class (0 when the class is never predicted nor present)."""
    labels, predictions = np.asarray(labels), np.asarray(predictions)
    tp = np.sum((predictions == positive) & (labels == positive))
    fp = np.sum((predictions == positive) & (labels != positive))
    fn = np.sum((predictions != positive) & (labels == positive))
    return float(2 * tp / (2 * tp + fp + fn)) if tp else 0.0


def macro_f1(labels, predictions, num_labels):
    return float(np.mean([f1(labels, predictions, c) for c in range(num_labels)]))


def matthews_corrcoef(labels, predictions, num_labels=2):
    """Matthews correlation (multi-class form, Gorodkin 2004); 0 when undefined."""
    labels, predictions = np.asarray(labels), np.asarray(predictions)
    confusion = np.zeros((num_labels, num_labels), np.float64)
    np.add.at(confusion, (labels, predictions), 1)
    t, p = confusion.sum(1), confusion.sum(0)
    c, s = np.trace(confusion), confusion.sum()
    denominator = np.sqrt((s**2 - p @ p) * (s**2 - t @ t))
    return float((c * s - t @ p) / denominator) if denominator else 0.0


def pearson(x, y):
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    x, y = x - x.mean(), y - y.mean()
    denominator = np.sqrt((x @ x) * (y @ y))
    return float(x @ y / denominator) if denominator else 0.0


def _ranks(x):
    """Average ranks (ties share the mean rank), as `scipy.stats.rankdata`."""
    x = np.asarray(x, np.float64)
    order = np.argsort(x, kind="mergesort")
    ranks = np.empty(len(x), np.float64)
    sorted_x = x[order]
    start = 0
    for end in range(1, len(x) + 1):
        if end == len(x) or sorted_x[end] != sorted_x[start]:
            ranks[order[start:end]] = (start + end - 1) / 2.0 + 1
            start = end
    return ranks


def spearman(x, y):
    return pearson(_ranks(x), _ranks(y))


def task_metrics(labels, predictions, regression=False, num_labels=2):
    """All metrics that apply, as a dict of floats.

    Args:
        labels: array `(n,)` of int ids or float scores.
        predictions: array `(n,)` of predicted ids or scores.
        regression: bool.
        num_labels: int. Classes (classification only).

    Example:
        >>> from electra_tf.finetuning.task_metrics import task_metrics
        >>> {k: round(v, 3) for k, v in task_metrics([0, 1, 1], [0, 1, 0]).items()}
        {'accuracy': 0.667, 'f1': 0.667, 'mcc': 0.5}
    """
    if regression:
        return {"pearson": pearson(labels, predictions), "spearman": spearman(labels, predictions)}
    out = {"accuracy": accuracy(labels, predictions)}
    out["f1"] = f1(labels, predictions) if num_labels == 2 else macro_f1(labels, predictions, num_labels)
    out["mcc"] = matthews_corrcoef(labels, predictions, num_labels)
    return out
