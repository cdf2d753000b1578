"""Predictions scored against the input's gold labels: accuracy (Pearson / Spearman for regression),
entity F1 and token accuracy (`finetuning.tagging_metrics`), SQuAD EM / F1 (`finetuning.qa_metrics`).

Example:
>>> from electra_tf.predicting.scoring import spearman
>>> round(spearman([1.0, 2.0, 3.0, 4.0], [10.0, 30.0, 20.0, 40.0]), 4)
0.8
"""

import bisect

import numpy as np

from electra_tf.finetuning import qa_metrics, tagging_metrics
from electra_tf.predicting.inputs import CLASSIFICATION, TAGGING


def score(kind, settings, examples, predictions):
    """A dict of scores, or None when no example has a gold label.

    Only examples with a gold label count (JSON Lines may mix labelled and unlabelled ones).
    """
    pairs = [(e, p) for e, p in zip(examples, predictions) if e.gold is not None]
    if not pairs:
        return None
    if kind == CLASSIFICATION:
        if settings.get("regression"):
            gold = np.array([e.gold for e, _ in pairs], float)
            predicted = np.array([p.output["score"] for _, p in pairs], float)
            return {"pearson": float(np.corrcoef(gold, predicted)[0, 1]) if len(pairs) > 1 else float("nan"),
                    "spearman": spearman(gold, predicted), "examples": len(pairs)}
        names = settings["label_names"]
        correct = sum(names.index(p.output["label"]) == e.gold for e, p in pairs)
        return {"accuracy": correct / len(pairs), "examples": len(pairs)}
    if kind == TAGGING:
        true = [e.gold for e, _ in pairs]
        predicted = [word_tags(e, p) for e, p in pairs]
        scores = {"token_accuracy": tagging_metrics.token_accuracy(true, predicted), "sentences": len(pairs)}
        if settings.get("spans"):
            entities = tagging_metrics.entity_scores(true, predicted)
            scores.update({k: entities[k] for k in ("precision", "recall", "f1", "num_true", "num_predicted",
                                                     "num_correct", "per_type")})
        return scores
    golds = {str(i): e.gold for i, (e, _) in enumerate(pairs)}
    answers = {str(i): p.output["answer"] for i, (_, p) in enumerate(pairs)}
    return qa_metrics.squad_scores(golds, answers)


def word_tags(example, prediction):
    """The predicted tag of each input word: that of the first served word starting inside it.

    With the `serve_words` signature the served words are the input words; with
    `serving_default` a word such as `U.S.` may be served as several (`U`, `.`,
    `S`, `.`): it takes the first one's tag (as training labels a word's first
    piece). A word with no served word (only control characters) is `O`.
    """
    starts, position = [], 0
    for word in example.words:
        starts.append(position)
        position += len(word) + 1
    served = prediction.word_starts
    tags = prediction.output["tags"]
    out = []
    for start, word in zip(starts, example.words):
        i = bisect.bisect_left(served, start)
        out.append(tags[i] if i < len(served) and served[i] < start + len(word) else "O")
    return out


def spearman(x, y):
    """Spearman's rank correlation (ties get their average rank)."""
    if len(x) < 2:
        return float("nan")
    return float(np.corrcoef(_ranks(np.asarray(x)), _ranks(np.asarray(y)))[0, 1])


def _ranks(values):
    _, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    below = np.cumsum(counts) - counts
    return (below + (counts + 1) / 2.0)[inverse]


def summary(scores):
    """One line: the headline scores."""
    if "accuracy" in scores:
        return f"accuracy {scores['accuracy']:.4f}"
    if "pearson" in scores:
        return f"pearson {scores['pearson']:.4f} spearman {scores['spearman']:.4f}"
    if "token_accuracy" in scores:
        line = f"token accuracy {scores['token_accuracy']:.4f}"
        if "f1" in scores:
            line = (f"entity f1 {scores['f1']:.4f} (precision {scores['precision']:.4f} recall "
                    f"{scores['recall']:.4f}), " + line)
        return line
    return f"exact {scores['exact']:.2f} f1 {scores['f1']:.2f}"
