"""Extractive question answering (SQuAD 1.1 / 2.0 format): the task kind `run_trials` runs for `--task_kind span_qa`.

`SpanQAKind(config)` reads `train.json` and `dev.json` (and `test.json` when
present, scored once at the end) in `--data_dir`, any SQuAD-format files
(`squad.read_squad`); `--task_kind auto` picks it for task names starting
with "squad". Each trial trains `ElectraQuestionAnswerer` (`--qa_head
official|simple`) on the windows of `features` with the reference loss,
predicts the dev windows (the beam), gathers answers across windows
(`metrics.postprocess`) and scores them with the official SQuAD EM / F1.
SQuAD 2.0 (any unanswerable training question, or `--swap_contexts`) adds
the answerability classifier; the null threshold is `--null_threshold` or,
by default, tuned on dev for the best F1 (reported).

The reference SQuAD recipe is 2 epochs at `--seq_length 512` (384 is BERT's
and this project's CPU recipe), `--doc_stride 128`, `--max_query_length 64`.
Written besides the model: `predictions.json` (id -> answer text, the best
trial's, the official format) and `null_odds.json` (2.0).
"""

import os
import time

import numpy as np
import tensorflow as tf
from absl import logging

from electra_tf import atomic, run_files
from electra_tf.tasks.span_qa import metrics as qa_metrics
from electra_tf.tasks.span_qa import squad
from electra_tf.finetuning.batching import compiled_predictor, predict_in_batches
from electra_tf.finetuning.examples import Prediction
from electra_tf.tasks.base import TaskKind
from electra_tf.tasks.span_qa import data
from electra_tf.tasks.span_qa.description import DESCRIPTION
from electra_tf.tasks.span_qa.config import Config
from electra_tf.tasks.span_qa.data import SPLIT_FILES, read_split
from electra_tf.tasks.span_qa.features import build_qa_features, qa_dataset
from electra_tf.tasks.span_qa.model import ElectraQuestionAnswerer, GlobalMeanLoss

QA_SETTINGS = ("doc_stride", "max_query_length", "max_answer_length", "n_best_size", "start_n_top", "end_n_top",
               "qa_head", "null_threshold", "swap_contexts")


def predict_windows(model, features, batch_size=32, predict=None):
    """The model's beam outputs for every window of `features`, as numpy arrays (one row per window).

    `predict`: optional compiled `model(inputs, training=False)` (made once, reused every epoch).
    """
    predict = predict or compiled_predictor(lambda inputs: model(inputs, training=False))
    return predict_in_batches(predict, features.arrays, batch_size)


def answer(model, features, config, predict=None):
    """Answers of every example of `features`: `(span_predictions, null_odds, answers, seconds)`."""
    start = time.time()
    outputs = predict_windows(model, features, config.batch_size, predict)
    answers, _ = qa_metrics.postprocess(features, outputs, features.examples, config.n_best_size,
                                        config.max_answer_length)
    seconds = time.time() - start
    spans = {e.qid: a.text for e, a in zip(features.examples, answers)}
    null_odds = None
    if model.answerable:
        null_odds = {e.qid: (a.null_score - a.score if np.isfinite(a.score) else 1e9)
                     for e, a in zip(features.examples, answers)}
    return spans, null_odds, answers, seconds


def evaluate(model, features, config, null_threshold=None, predict=None):
    """Dev metrics: official EM / F1 (and HasAns / NoAns, the tuned threshold for 2.0), and the predictions."""
    golds = squad.gold_answers(features.examples)
    spans, null_odds, _, seconds = answer(model, features, config, predict)
    metrics = {}
    predictions = spans
    if null_odds is not None:
        best, best_f1 = qa_metrics.best_threshold(golds, spans, null_odds)
        threshold = best if null_threshold is None else null_threshold
        predictions = qa_metrics.apply_threshold(spans, null_odds, threshold)
        metrics.update(null_threshold=threshold, best_f1_threshold=best, best_f1=best_f1)
    metrics.update(qa_metrics.squad_scores(golds, predictions))
    metrics["predict_examples_per_second"] = len(features.examples) / max(seconds, 1e-9)
    return metrics, predictions, null_odds


class SpanQAKind(TaskKind):
    """Extractive QA over SQuAD-format files (see the module docstring)."""

    name = "span_qa"
    description = DESCRIPTION  # what it is, for its users: `--help` and the guides list it
    Config = Config  # its settings: flags of `python -m electra_tf.finetune`
    model_file = "question_answerer.keras"
    model_class = ElectraQuestionAnswerer
    saved_classes = (GlobalMeanLoss,)  # named by its compiled model file
    predict_formats = ("squad", "jsonl")
    format_extensions = {".json": "squad"}  # `predict`'s --input_format auto
    metric = "f1"

    def __init__(self, config):
        if config.max_query_length + 3 >= config.seq_length:
            raise ValueError(
                f"`--max_query_length={config.max_query_length}` leaves no room for the context: "
                f"max_query_length + 3 ([CLS] and two [SEP]) must be < `--seq_length={config.seq_length}`."
            )
        super().__init__(config)
        self.questions = {"train": read_split(config, "train", config.train_limit),
                          "dev": read_split(config, "dev", config.dev_limit)}
        if tf.io.gfile.exists(os.path.join(config.data_dir, SPLIT_FILES["test"])):
            self.questions["test"] = read_split(config, "test", None)
            self.test_splits.append("test")
        self.answerable = config.swap_contexts or any(e.is_impossible for e in self.questions["train"])
        logging.info("Task %s: %s questions (SQuAD %s).", config.task, {k: len(v) for k, v in self.questions.items()},
                     "2.0" if self.answerable else "1.1")
        self.features = {}

    def prepare(self, tokenizer):
        c = self.config
        for split, questions in self.questions.items():
            self.features[split] = build_qa_features(tokenizer, questions, training=split == "train",
                                                     seq_length=c.seq_length, doc_stride=c.doc_stride,
                                                     max_query_length=c.max_query_length)
        logging.info("Features: %s", {k: v.stats for k, v in self.features.items()})
        self.num_train_rows = len(self.features["train"].arrays["token_ids"])

    def train_dataset(self, seed, epoch, skip):
        return qa_dataset(self.features["train"], self.config.batch_size, self.answerable, seed, epoch, skip,
                          self.length_multiple)

    def build_model(self, encoder):
        c = self.config
        model = ElectraQuestionAnswerer(encoder, head=c.qa_head, answerable=self.answerable,
                                        start_n_top=c.start_n_top, end_n_top=c.end_n_top)
        loss, weights = model.losses_and_weights()
        return model, {"loss": loss, "loss_weights": weights}

    def evaluate(self, model, split):
        metrics, predictions, null_odds = evaluate(model, self.features[split], self.config,
                                                   self.config.null_threshold, self.predictor(model))
        return metrics, (predictions, null_odds)

    def write_outputs(self, output_dir, model, outputs):
        predictions, null_odds = outputs["dev"]
        atomic.write_json(os.path.join(output_dir, run_files.PREDICTIONS_FILE), predictions, indent=1)
        if null_odds is not None:
            atomic.write_json(os.path.join(output_dir, run_files.NULL_ODDS_FILE), null_odds, indent=1)

    def results(self):
        return {
            "squad_version": "2.0" if self.answerable else "1.1",
            "num_train_questions": len(self.questions["train"]),
            "num_train_windows": int(self.num_train_rows),
            "num_dev_questions": len(self.questions["dev"]),
            "features": {k: v.stats for k, v in self.features.items()},
        }

    def hparams(self):
        return {name: getattr(self.config, name) for name in QA_SETTINGS}

    def finetune_config(self, best_trial):
        c = self.config
        return {
            "task": c.task,
            "kind": self.name,
            "seq_length": c.seq_length,
            "doc_stride": c.doc_stride,
            "max_query_length": c.max_query_length,
            "max_answer_length": c.max_answer_length,
            "answerable": self.answerable,
            "null_threshold": best_trial["dev"].get("null_threshold"),
        }

    # --- After training ---

    @classmethod
    def claims(cls, task):
        return task.startswith("squad")

    @classmethod
    def serving_module(cls, model, vocab_file, settings, seq_length=None):
        from electra_tf.tasks.span_qa.serving import qa_serving_module

        qa = {k: settings[k] for k in ("doc_stride", "max_query_length", "max_answer_length", "null_threshold")
              if settings.get(k) is not None}
        return qa_serving_module(model, vocab_file, seq_length=seq_length or settings.get("seq_length", 384),
                                 task=settings.get("task", ""), **qa)

    @classmethod
    def hf_head(cls, model, settings):
        from electra_tf.tasks.span_qa.hf_head import question_answerer_head

        return question_answerer_head(model)

    @classmethod
    def tflite_module(cls, model, vocab_file, settings, seq_length=None, ids_only=False):
        raise ValueError("A question-answering model has no LiteRT export: its windows and span search run in "
                         "TensorFlow string and loop ops that have no LiteRT kernel. Serve it with `--format serving`.")

    @classmethod
    def read_examples(cls, name, text, input_format, settings, options):
        """SQuAD 1.1 / 2.0 JSON (answers scored), or JSON Lines `{"id", "question", "context", "answers"}`."""
        return data.read_inputs(name, text, input_format)

    @classmethod
    def format_prediction(cls, row, example, settings):
        output = {"id": example.id if example.id is not None else str(example.line),
                  "answer": row["answer"].decode(), "start": int(row["start"]), "end": int(row["end"]),
                  "score": float(row["score"]), "no_answer": bool(row.get("no_answer", row["start"] < 0))}
        if "null_odds" in row:
            output["null_odds"] = float(row["null_odds"])
        return Prediction(output)

    @classmethod
    def score(cls, settings, examples, predictions):
        """The official SQuAD exact match and F1 of the answers, against every gold answer of a question."""
        golds = {str(i): e.gold for i, e in enumerate(examples)}
        answers = {str(i): p.output["answer"] for i, p in enumerate(predictions)}
        return {"metric": "f1", **qa_metrics.squad_scores(golds, answers)}


