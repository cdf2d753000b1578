"""Token classification fine-tuning (NER, chunking, POS): the task kind `run_trials` runs for CoNLL-column files.

`TaggingKind(config)` reads a named CoNLL-2003 task (`--task conll2003`) or
any CoNLL-column files (`--task_kind tagging`), trains the official tagging
head, `ElectraTokenClassifier`: a word's label on its first WordPiece
(`tagging_features`), cross-entropy averaged over those pieces only
(`MaskedSparseCrossEntropy`), and reads predictions back at the same pieces
(`word_predictions`), scored per word: entity precision / recall / F1 (CoNLL
semantics, `tagging_metrics.entity_scores`) for span tags, token accuracy
for all (the headline of POS). A test split (`eng.testb`, `test.txt`) is
scored once at the end.
"""

import os

import keras
import tensorflow as tf
from absl import logging

from electra_tf import run_files
from electra_tf.finetuning import conll
from electra_tf.finetuning.batching import INPUTS, compiled_predictor, epoch_batches, predict_in_batches
from electra_tf.finetuning.kind import TaskKind
from electra_tf.finetuning.tagging_features import (
    IGNORE_INDEX,
    build_features,
    tokenize_words,
    word_predictions,
)
from electra_tf.finetuning.tagging_metrics import entity_scores, token_accuracy
from electra_tf.models.token_classifier import ElectraTokenClassifier

# Generic CoNLL-column files: the first of these names that exists in `--data_dir`.
GENERIC_SPLITS = {
    "train": ("train.txt", "eng.train", "train.conll"),
    "dev": ("dev.txt", "valid.txt", "eng.testa", "dev.conll"),
    "test": ("test.txt", "eng.testb", "test.conll"),
}


def tagging_task(config):
    """The `conll.ConllTask` of `config`: a named CoNLL-2003 task, or generic CoNLL-column files.

    Example:
    >>> from electra_tf.finetuning.config import FinetuneConfig
    >>> from electra_tf.finetuning.tagging import tagging_task
    >>> task = tagging_task(FinetuneConfig(task="ner", task_kind="tagging", label_column="3"))
    >>> (task.token_column, task.label_column, task.scheme, task.metric)
    (0, 3, 'auto', 'entity_f1')
    >>> tagging_task(FinetuneConfig(task="pos", task_kind="tagging", tag_scheme="none")).metric
    'token_accuracy'
    """
    name = (config.task or "").lower()
    if name in conll.TASKS:
        return conll.TASKS[name]
    label_column = -1 if config.label_column is None else _int_column(config.label_column)
    scheme = None if config.tag_scheme == "none" else config.tag_scheme
    return conll.ConllTask(
        config.task or "tagging", GENERIC_SPLITS, token_column=config.token_column,
        label_column=label_column, scheme=scheme, metric="entity_f1" if scheme else "token_accuracy",
    )


def _int_column(value):
    try:
        return int(value)
    except ValueError:
        raise ValueError(
            f"CoNLL files have no header: `--label_column` must be a column index (-1: the last). "
            f"Received: `label_column={value!r}`"
        ) from None


@keras.saving.register_keras_serializable(package="electra_tf")
class MaskedSparseCrossEntropy(keras.losses.Loss):
    """Cross-entropy from logits, averaged over the tokens whose label is not `IGNORE_INDEX`.

    The mean is over the labelled tokens of the *global* batch: under a
    `tf.distribute` strategy each replica divides its sum by the token count
    summed over replicas, and the replicas' gradients are summed, so N
    replicas train exactly like one device on the same global batch. (Keras
    divides a loss by N only when it reduces a per-example loss itself; this
    one returns a scalar, already the replica's share.) A batch with no
    labelled token has loss 0.

    Example:
    >>> import numpy as np
    >>> from electra_tf.finetuning.tagging import MaskedSparseCrossEntropy
    >>> loss = MaskedSparseCrossEntropy()
    >>> labels = np.array([[-100, 1, 0, -100]])
    >>> logits = np.log(np.array([[[.5, .5], [.2, .8], [.6, .4], [.9, .1]]]))
    >>> round(float(loss(labels, logits)), 5)  # -(log .8 + log .6) / 2: the two labelled tokens
    0.36698
    """

    def __init__(self, name="masked_sparse_cross_entropy", **kwargs):
        super().__init__(name=name, **kwargs)

    def call(self, y_true, y_pred):
        labels = keras.ops.cast(y_true, "int32")
        mask = keras.ops.not_equal(labels, IGNORE_INDEX)
        per_token = keras.losses.sparse_categorical_crossentropy(
            keras.ops.where(mask, labels, 0), keras.ops.cast(y_pred, "float32"), from_logits=True)
        mask = keras.ops.cast(mask, "float32")
        total, count = keras.ops.sum(per_token * mask), keras.ops.sum(mask)
        context = tf.distribute.get_replica_context()
        if context is not None and context.num_replicas_in_sync > 1:
            count = context.all_reduce(tf.distribute.ReduceOp.SUM, count)
        return total / keras.ops.maximum(count, 1.0)


def tagging_dataset(features, batch_size, shuffle_seed=None, epoch=0, skip=0):
    """`tf.data` of `(inputs dict, label_ids)` batches of `build_features` rows.

    Each batch is cut to its longest row (rounded up to `batching.LENGTH_MULTIPLE`):
    padding is masked, so this changes no result and saves most of the
    compute on CoNLL's short sentences.

    Args:
        features: dict from `build_features`.
        batch_size: int. Global batch.
        shuffle_seed: int or None. The order of epoch `epoch` for this seed; None keeps the rows' order.
        epoch, skip: int. The epoch, and its batches left out (a resumed run).
    """
    arrays = ({name: features[name] for name in INPUTS}, features["label_ids"])
    return epoch_batches(arrays, batch_size, shuffle_seed, epoch, skip)


def piece_predictor(model):
    """A compiled function: arg-max label id at every piece, padded back to the rows' full length."""

    def predict(inputs):
        ids = tf.argmax(model(inputs, training=False), axis=-1, output_type=tf.int32)
        return tf.pad(ids, [[0, 0], [0, model.encoder.max_sequence_length - tf.shape(ids)[1]]])

    return compiled_predictor(predict)


def predict_piece_labels(model, features, batch_size=128, predict=None):
    """Arg-max label id at every piece of every `build_features` row, `(num_rows, seq_length)`."""
    pieces = predict_in_batches(predict or piece_predictor(model), features, batch_size)
    return pieces[:, :features["token_ids"].shape[1]]


def evaluate(model, features, sentences, labels, span_tags, batch_size=128, predict=None):
    """Dev metrics of `model`: token accuracy, and entity precision / recall / F1 for span tags.

    Args:
        model: `ElectraTokenClassifier`.
        features: dict from `build_features` of `sentences`.
        sentences: list of `conll.Sentence` (true tags in IOB2, or as written).
        labels: list of str. Label names in id order.
        span_tags: bool. Whether the tags are IOB2 spans.
        predict: optional `piece_predictor(model)` (compiled once, reused every epoch).

    Returns:
        `(metrics, per_type)`: dict of floats, and entity scores per type (None without spans).
    """
    pieces = predict_piece_labels(model, features, batch_size, predict)
    predicted_ids = word_predictions(pieces, features, [len(s.words) for s in sentences])
    predicted = [[labels[i] for i in ids] for ids in predicted_ids]
    true = [list(s.tags) for s in sentences]
    metrics = {"token_accuracy": token_accuracy(true, predicted)}
    per_type = None
    if span_tags:
        scores = entity_scores(true, predicted)
        metrics.update(entity_f1=scores["f1"], entity_precision=scores["precision"],
                       entity_recall=scores["recall"])
        per_type = scores["per_type"]
    return metrics, per_type


def long_sentences(sentences, word_pieces, seq_length):
    """What happens to sentences longer than a window, naming the first one's file and line; None if none is.

    Such sentences are not an error: they are split into overlapping windows
    (`tagging_features.plan_windows`), every word trained on and predicted once.

    Example:
    >>> import numpy as np
    >>> from electra_tf.finetuning import conll
    >>> from electra_tf.finetuning.tagging import long_sentences
    >>> from electra_tf.finetuning.tagging_features import WordPieces
    >>> pieces = WordPieces(np.arange(9, dtype=np.int32), np.array([0, 3, 6, 9]), np.array([], np.int64))
    >>> long_sentences([conll.Sentence(("a", "b", "c"), ("O",) * 3, "train.txt", (4, 5, 6))], [pieces], 8)
    '1 sentence(s) longer than seq_length - 2 = 6 pieces are split into overlapping windows (no word is dropped); the first at train.txt:4 (9 pieces).'
    """
    limit = seq_length - 2
    long = [(s, p) for s, p in zip(sentences, word_pieces) if len(p.ids) > limit]
    if not long:
        return None
    sentence, pieces = long[0]
    where = f"{sentence.path}:{sentence.lines[0]}" if sentence.lines else sentence.path or "?"
    return (f"{len(long)} sentence(s) longer than seq_length - 2 = {limit} pieces are split into overlapping "
            f"windows (no word is dropped); the first at {where} ({len(pieces.ids)} pieces).")


class TaggingKind(TaskKind):
    """Token classification over CoNLL-column files (see the module docstring)."""

    name = "tagging"
    model_file = run_files.TOKEN_CLASSIFIER_FILE

    def __init__(self, config):
        super().__init__(config)
        task = tagging_task(config)
        self.task, self.metric = task, task.metric
        self.sentences = {split: task.read(config.data_dir, split)[:limit]
                          for split, limit in (("train", config.train_limit), ("dev", config.dev_limit))}
        if "test" in task.splits and any(tf.io.gfile.exists(p) for p in _paths(task, config.data_dir, "test")):
            self.sentences["test"] = task.read(config.data_dir, "test")
            self.test_splits.append("test")
        self.labels = task.labels(config.data_dir, self.sentences["train"])
        self.label_ids = {split: conll.encode_labels(s, self.labels) for split, s in self.sentences.items()}
        logging.info("Task %s: %s sentences, %d labels %s.", task.name,
                     {k: len(v) for k, v in self.sentences.items()}, len(self.labels), self.labels)
        self.features = {}

    def prepare(self, tokenizer):
        c = self.config
        for split, sentences in self.sentences.items():
            pieces = tokenize_words(tokenizer, [s.words for s in sentences])
            message = long_sentences(sentences, pieces, c.seq_length)
            if message:
                logging.info(message)
            self.features[split] = build_features(tokenizer, pieces, self.label_ids[split], c.seq_length,
                                                  c.stride)
        self.num_train_rows = len(self.features["train"]["label_ids"])

    def train_dataset(self, seed, epoch, skip):
        return tagging_dataset(self.features["train"], self.config.batch_size, seed, epoch, skip)

    def build_model(self, encoder):
        model = ElectraTokenClassifier(encoder, len(self.labels), dropout=self.config.dropout)
        return model, {"loss": MaskedSparseCrossEntropy()}

    def evaluate(self, model, split):
        return evaluate(model, self.features[split], self.sentences[split], self.labels, self.task.scheme is not None,
                        4 * self.config.batch_size, self.predictor(model, piece_predictor))

    def trial_extras(self, outputs):
        return {"dev_per_type": outputs.get("dev")}

    def results(self):
        return {"labels": self.labels, "num_train_sentences": len(self.sentences["train"]),
                "num_train_windows": int(self.num_train_rows), "num_dev_sentences": len(self.sentences["dev"])}

    def finetune_config(self, best_trial):
        return {
            "task": self.task.name,
            "kind": self.name,
            "label_names": self.labels,
            "scheme": "IOB2" if self.task.scheme else None,
            "seq_length": self.config.seq_length,
            "stride": self.config.stride,
        }


def _paths(task, data_dir, split):
    return [os.path.join(data_dir, name) for name in task.splits[split]]
