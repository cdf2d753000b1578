"""Predictions scored against the input's gold labels, by the model's task kind (`TaskKind.score`).

Every kind scores through the metrics fine-tuning reports (`finetuning.task_metrics`, or
its folder's own `metrics.py`), headed by the task's own metric (`"metric"`:
a CoLA classifier's MCC, a tagger's entity F1, a QA model's F1).

Example:
>>> from electra_tf.predicting.scoring import summary
>>> summary({"metric": "mcc", "accuracy": 0.8, "f1": 0.75, "mcc": 0.6, "examples": 10})
'mcc 0.6000 (accuracy 0.8000, f1 0.7500)'
"""


def score(kind, settings, examples, predictions):
    """A dict of scores (with the headline's name under `"metric"`), or None when no example has a gold label.

    Only examples with a gold label count (JSON Lines may mix labelled and unlabelled ones).
    """
    pairs = [(e, p) for e, p in zip(examples, predictions) if e.gold is not None and not e.skipped]
    if not pairs:
        return None
    return kind.score(settings, [e for e, _ in pairs], [p for _, p in pairs])


def summary(scores):
    """One line: the headline metric, then the task's other metrics (counts and per-type tables left out)."""
    headline = scores["metric"]
    others = [f"{name} {value:.4f}" for name, value in scores.items()
              if name != headline and isinstance(value, float)]
    return f"{headline} {scores[headline]:.4f}" + (f" ({', '.join(others)})" if others else "")
