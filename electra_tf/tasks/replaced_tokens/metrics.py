"""Replaced-token metrics: the area under the ROC curve of the scores (`auc`), the headline of labelled inputs."""

import numpy as np


def auc(labels, scores):
    """The area under the ROC curve of `scores` for binary `labels`: the chance that a random positive scores
    above a random negative, ties counting half (Mann-Whitney); None without both classes.

    Example:
    >>> from electra_tf.tasks.replaced_tokens.metrics import auc
    >>> auc([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    0.75
    """
    labels, scores = np.asarray(labels, bool), np.asarray(scores, float)
    positives, negatives = int(labels.sum()), int((~labels).sum())
    if not positives or not negatives:
        return None
    _, inverse, counts = np.unique(scores, return_inverse=True, return_counts=True)
    average_rank = (np.cumsum(counts) - (counts - 1) / 2.0)[inverse]  # 1-based ranks, ties averaged
    return float((average_rank[labels].sum() - positives * (positives + 1) / 2.0) / (positives * negatives))

