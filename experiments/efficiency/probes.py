"""The context probe: does the discriminator beat a score that sees only the token's identity?

Every `every` updates, on fixed held-out batches (dropout off, a fixed masking seed), the
discriminator's AUC of "replaced vs original" beside the AUC of per-token-id log-odds of
"replaced" fitted on the same window's other batches (`token_identity_auc`). A discriminator that
uses context beats the token score.
"""

import keras
import numpy as np
import tensorflow as tf

from benchmarks.common import read_json, write_json

CONTEXT_FILE = "context_probe.json"  # in a pre-training model_dir: one record per probe window
PROBE_SEED = 13  # masking/sampling stream of the probe batches: the same positions every window


def auc(scores, labels):
    """Area under the ROC curve (Mann-Whitney, ties count one half); NaN without both classes."""
    scores = np.asarray(scores, np.float64).ravel()
    labels = np.asarray(labels).ravel() > 0.5
    positives, negatives = int(labels.sum()), int((~labels).sum())
    if not positives or not negatives:
        return float("nan")
    _, inverse, counts = np.unique(scores, return_inverse=True, return_counts=True)
    first = np.cumsum(counts) - counts + 1  # 1-based rank of each distinct score's first occurrence
    ranks = (first + (counts - 1) / 2.0)[inverse]  # tied scores share their average rank
    return float((ranks[labels].sum() - positives * (positives + 1) / 2.0) / (positives * negatives))


def token_identity_scores(train_ids, train_labels, eval_ids, smoothing=1.0):
    """Log-odds of "replaced" per token id, fitted on `(train_ids, train_labels)`, for `eval_ids`.

    `log((r + s p) / (n - r + s (1 - p)))` for a token seen `n` times, `r` of
    them replaced; `p` is the overall replaced rate and `s` the smoothing
    (pseudo-counts). An unseen token scores the prior `log(p / (1 - p))`.
    """
    train_ids, train_labels = np.asarray(train_ids).ravel(), np.asarray(train_labels, np.float64).ravel()
    p = float(np.clip(train_labels.mean(), 1e-6, 1 - 1e-6))
    ids, inverse = np.unique(train_ids, return_inverse=True)
    seen = np.bincount(inverse).astype(np.float64)
    replaced = np.bincount(inverse, weights=train_labels)
    log_odds = np.log((replaced + smoothing * p) / (seen - replaced + smoothing * (1 - p)))
    eval_ids = np.asarray(eval_ids).ravel()
    at = np.clip(np.searchsorted(ids, eval_ids), 0, len(ids) - 1)
    return np.where(ids[at] == eval_ids, log_odds[at], np.log(p / (1 - p)))


def token_identity_auc(ids, labels, folds, smoothing=1.0):
    """AUC of the token-identity score, cross-fitted: each fold scored by a table fitted on the others.

    Out-of-fold, because fitting and scoring the same samples leaks labels
    through rare tokens (a token seen once scores its own label) and flatters
    the baseline; the folds are the same window's batches, so the table sees
    the generator as it is at that step (fitting on the previous window would
    score a generator that has since moved on). With one fold per batch the
    table is fitted on all but one batch: as much data as the window has.
    """
    ids, labels, folds = (np.asarray(a).ravel() for a in (ids, labels, folds))
    scores = np.empty(len(ids))
    for fold in np.unique(folds):
        held = folds == fold
        scores[held] = token_identity_scores(ids[~held], labels[~held], ids[held], smoothing)
    return auc(scores, labels)


def probe_window(pretrainer, batches, step, compute=None):
    """Discriminator AUC and token-identity AUCs on `batches` (dropout off, fixed masking seed)."""
    compute = compute or (lambda b, s: pretrainer.compute_losses(b, s, training=False))
    parts = {k: [] for k in ("disc_ids", "disc_labels", "disc_logits", "disc_weights", "fold")}
    for i, batch in enumerate(batches):
        out = compute(batch, tf.constant([PROBE_SEED, i], tf.int64))
        keep = np.asarray(out.disc_weights).ravel() > 0
        for key in ("disc_ids", "disc_labels", "disc_logits"):
            parts[key].append(np.asarray(getattr(out, key)).ravel()[keep])
        parts["fold"].append(np.full(int(keep.sum()), i))
    ids, labels, logits, folds = (np.concatenate(parts[k]) for k in ("disc_ids", "disc_labels", "disc_logits",
                                                                      "fold"))
    # token_auc: leave one batch out. token_auc_half: fitted on half the batches; if it is much below
    # token_auc, the table is still data-starved and token_auc understates a token-only score.
    # token_auc_in_sample: fitted on the scored samples themselves, an optimistic bound.
    return dict(step=step, disc_auc=auc(logits, labels), token_auc=token_identity_auc(ids, labels, folds),
                token_auc_half=token_identity_auc(ids, labels, folds % 2),
                token_auc_in_sample=auc(token_identity_scores(ids, labels, ids), labels),
                replaced_fraction=float(labels.mean()), tokens=int(len(labels)))


class ContextProbe(keras.callbacks.Callback):
    """Every `every` updates (and at the end): `probe_window` on fixed held-out batches, appended to `path`.

    A window is a point in training, scored on the same held-out batches each
    time (not Keras' cumulative per-epoch metric). Records already in `path`
    are kept, so a resumed run continues the curve.
    """

    def __init__(self, batches, every, path):
        super().__init__()
        self.batches, self.every, self.path = batches, every, path
        self.records = read_json(path) or []
        self._compute = None

    def probe(self, step):
        if any(r["step"] == step for r in self.records):
            return
        if self._compute is None:
            self._compute = tf.function(  # plain Python branching only: no AutoGraph needed
                lambda b, s: self.model.compute_losses(b, s, training=False), autograph=False)
        self.records.append(probe_window(self.model, self.batches, step, self._compute))
        write_json(self.path, self.records)

    def on_train_begin(self, logs=None):
        step = int(self.model.optimizer.iterations.numpy())
        if step == 0:
            self.probe(0)

    def on_train_batch_end(self, batch, logs=None):
        step = int(self.model.optimizer.iterations.numpy())
        if step % self.every == 0:
            self.probe(step)

    def on_train_end(self, logs=None):
        self.probe(int(self.model.optimizer.iterations.numpy()))


