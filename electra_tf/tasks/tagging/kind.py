"""Token classification fine-tuning (NER, chunking, POS): the task kind `run_trials` runs for CoNLL-column files.

`TaggingKind(config)` reads a named CoNLL-2003 task (`--task conll2003`) or
any CoNLL-column files (`--task_kind tagging`), trains the official tagging
head, `ElectraTokenClassifier`: a word's label on its first WordPiece
(`features`), cross-entropy averaged over those pieces only
(`MaskedSparseCrossEntropy`), and reads predictions back at the same pieces
(`word_predictions`), scored per word: entity precision / recall / F1 (CoNLL
semantics, `metrics.entity_scores`) for span tags, token accuracy
for all (the headline of POS). A test split (`eng.testb`, `test.txt`) is
scored once at the end.
"""

import bisect
import re

import numpy as np
import tensorflow as tf
from absl import logging

from electra_tf.data.lines import split_lines
from electra_tf.tasks.tagging import conll
from electra_tf.finetuning.batching import (INPUTS, LENGTH_MULTIPLE, compiled_predictor, epoch_batches,
                                            predict_in_batches)
from electra_tf.finetuning.examples import Prediction, split_file
from electra_tf.tasks.base import TaskKind
from electra_tf.tasks.tagging import data
from electra_tf.tasks.tagging.description import DESCRIPTION
from electra_tf.tasks.tagging.config import Config, PredictOptions
from electra_tf.tasks.tagging.data import tagging_task
from electra_tf.tasks.tagging.features import build_features, long_sentences, tokenize_words, word_predictions
from electra_tf.tasks.tagging import metrics as tagging_metrics
from electra_tf.tasks.tagging.metrics import entity_scores, token_accuracy
from electra_tf.tasks.tagging.model import ElectraTokenClassifier, MaskedSparseCrossEntropy

def tagging_dataset(features, batch_size, shuffle_seed=None, epoch=0, skip=0, multiple=LENGTH_MULTIPLE):
    """`tf.data` of `(inputs dict, label_ids)` batches of `build_features` rows.

    Each batch is cut to its longest row (rounded up to `multiple`, `batching.length_multiple`):
    padding is masked, so this changes no output and saves most of the compute on CoNLL's short
    sentences (dropout draws its masks for the cut batch).

    Args:
        features: dict from `build_features`.
        batch_size: int. Global batch.
        shuffle_seed: int or None. The order of epoch `epoch` for this seed; None keeps the rows' order.
        epoch, skip: int. The epoch, and its batches left out (a resumed run).
        multiple: int. What the cut is rounded up to.
    """
    arrays = ({name: features[name] for name in INPUTS}, features["label_ids"])
    return epoch_batches(arrays, batch_size, shuffle_seed, epoch, skip, multiple)


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


class TaggingKind(TaskKind):
    """Token classification over CoNLL-column files (see the module docstring)."""

    name = "tagging"
    description = DESCRIPTION  # what it is, for its users: `--help` and the guides list it
    Config = Config  # its settings: flags of `python -m electra_tf.finetune`
    PredictOptions = PredictOptions  # its `predict` flags
    shared_flags = ("label_column",)  # a `finetune` flag of the generic files, besides its `Config`'s
    model_file = "token_classifier.keras"
    model_class = ElectraTokenClassifier
    saved_classes = (MaskedSparseCrossEntropy,)  # named by its compiled model file
    predict_formats = ("conll", "jsonl", "text")
    format_extensions = {".conll": "conll"}  # `predict`'s --input_format auto

    def __init__(self, config):
        super().__init__(config)
        task = tagging_task(config)
        self.task, self.metric = task, task.metric
        self.sentences = {split: task.read(config.data_dir, split, limit)
                          for split, limit in (("train", config.train_limit), ("dev", config.dev_limit))}
        if "test" in task.splits and split_file(config.data_dir, task.splits["test"]):
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
        return tagging_dataset(self.features["train"], self.config.batch_size, seed, epoch, skip, self.length_multiple)

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

    # --- After training ---

    @classmethod
    def claims(cls, task):
        return task in conll.TASKS

    @classmethod
    def serving_module(cls, model, vocab_file, settings, seq_length=None):
        from electra_tf.tasks.tagging.serving import tagging_serving_module

        return tagging_serving_module(model, vocab_file, settings.get("label_names") or None,
                                      seq_length or settings.get("seq_length", 128), task=settings.get("task", ""),
                                      stride=settings.get("stride"))

    @classmethod
    def hf_head(cls, model, settings):
        from electra_tf.tasks.tagging.hf_head import token_classifier_head

        return token_classifier_head(model, settings.get("label_names"))

    @classmethod
    def tflite_module(cls, model, vocab_file, settings, seq_length=None, ids_only=False):
        if not ids_only:
            raise ValueError("A tagger exports to LiteRT with --ids only (ids in, a tag per piece out): its raw-text "
                             "word split uses tensorflow-text's RegexSplitWithOffsets and string ops, which have no "
                             "LiteRT kernel.")
        return cls.serving_module(model, vocab_file, settings, seq_length)

    @classmethod
    def sniff_format(cls, text):
        """CoNLL columns: every one of the first data lines ends in a tag (O, X-TYPE) or is `-DOCSTART-`."""
        rows = [conll.line_columns(line) for line in split_lines(text)[:50] if line.strip()]
        tag = re.compile(r"^(O|[BIES]-\S+)$")
        if rows and all(row[0] == "-DOCSTART-" or (len(row) > 1 and tag.match(row[-1])) for row in rows):
            return "conll"
        return None

    @classmethod
    def read_examples(cls, name, text, input_format, settings, options):
        """CoNLL columns (gold tags scored), JSON Lines (`{"words", "tags"}` or `{"text"}`) or raw text lines.

        Words given as words (CoNLL, `"words"`) go to the `serve_words` signature, taken as they are;
        raw text to `serving_default`, which cuts it into words as CoNLL's tokens are cut.
        """
        return data.read_inputs(name, text, input_format, settings, options)

    @classmethod
    def format_prediction(cls, row, example, settings):
        n = int(row["num_words"])
        output = {"text": example.inputs["text"], "words": _strings(row["words"][:n]), "tags": _strings(row["tags"][:n])}
        if "num_entities" in row:
            m = int(row["num_entities"])
            output["entities"] = [
                {"text": t, "type": y, "start": int(s), "end": int(e)}
                for t, y, s, e in zip(_strings(row["entity_text"][:m]), _strings(row["entity_type"][:m]),
                                      row["entity_start"][:m], row["entity_end"][:m])]
        return Prediction(output, {"word_starts": row["word_start"][:n].tolist()})

    @classmethod
    def score(cls, settings, examples, predictions):
        """Token accuracy and (span tags) entity precision / recall / F1 of the gold words, CoNLL semantics."""
        true = [e.gold for e in examples]
        predicted = [word_tags(e, p) for e, p in zip(examples, predictions)]
        scores = {"token_accuracy": tagging_metrics.token_accuracy(true, predicted)}
        if settings.get("spans"):  # the names fine-tuning reports
            entities = tagging_metrics.entity_scores(true, predicted)
            scores = {"entity_f1": entities["f1"], "entity_precision": entities["precision"],
                      "entity_recall": entities["recall"], **scores,
                      **{k: entities[k] for k in ("num_true", "num_predicted", "num_correct", "per_type")}}
        return {"metric": "entity_f1" if settings.get("spans") else "token_accuracy", **scores,
                "sentences": len(examples)}


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
    served = prediction.extra["word_starts"]
    tags = prediction.output["tags"]
    out = []
    for start, word in zip(starts, example.words):
        i = bisect.bisect_left(served, start)
        out.append(tags[i] if i < len(served) and served[i] < start + len(word) else "O")
    return out


def _strings(values):
    return [v.decode() for v in np.asarray(values).tolist()]


