"""Multiple choice (SWAG, ARC- or RACE-style sets): the task kind that scores each (context, choice) pair.

`MultipleChoiceKind(config)` reads `--task swag` (the released SWAG CSVs:
`train.csv`, `val.csv` as dev, a labelled `test.csv` scored once at the end) or
any task name with `--task_kind multiple_choice` (SWAG CSVs or the JSON Lines
layout of `data`: `train.jsonl`, `dev.jsonl`, `test.jsonl`).
It trains `ElectraMultipleChoice`: each choice is packed with its context
(`[CLS] context [SEP] question choice [SEP]`, truncated longest-first), the
encoder's [CLS] vector of each pair gets one score, and cross-entropy over a
question's choices (transformers' `ElectraForMultipleChoice` and `run_swag.py`).
The headline metric is accuracy. A question may have two to `MAX_CHOICES` (64)
choices; each batch is padded to its own widest question with empty slots that
take no probability. A `seq_length` that leaves every question of a split
with choices packed alike is refused; one that cuts many pairs is warned of.
"""

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from electra_tf.tasks.multiple_choice.serving import MultipleChoiceServingModule
from electra_tf.finetuning.batching import compiled_predictor, epoch_batches, predict_in_batches
from electra_tf.finetuning.examples import Prediction, required_split_file, split_file
from electra_tf.tasks.base import TaskKind
from electra_tf.tasks.multiple_choice.data import SPLIT_FILES, read_inputs, read_questions
from electra_tf.tasks.multiple_choice.features import HEAVY_CUT, cut_report, pack_questions
from electra_tf.tasks.multiple_choice.description import DESCRIPTION
from electra_tf.finetuning.task_metrics import accuracy
from electra_tf.tasks.multiple_choice.model import ABSENT, ElectraMultipleChoice

def choice_predictor(model):
    """`model`'s logits, compiled once for `(batch, choices, seq)` batches of any size."""
    return compiled_predictor(lambda inputs: model(inputs, training=False), rank=3)


class MultipleChoiceKind(TaskKind):
    """Multiple choice over SWAG CSVs or JSON Lines (see the module docstring).

    Example:
        ```python
        import json, os

        from electra_tf.tasks import FinetuneConfig
        from electra_tf.tasks.multiple_choice.kind import MultipleChoiceKind

        os.makedirs("pick", exist_ok=True)
        for split in ("train", "dev"):
            with open(f"pick/{split}.jsonl", "w") as f:
                f.write(json.dumps({"question": "Which one purrs?", "choices": ["a cat", "a car"], "answer": 0}) + "\\n")
        kind = MultipleChoiceKind(FinetuneConfig(task="pick", task_kind="multiple_choice", data_dir="pick"))
        kind.metric, kind.num_train_rows  # ('accuracy', 1)
        ```
    """

    name = "multiple_choice"
    description = DESCRIPTION  # what it is, for its users: `--help` and the guides list it
    model_file = "multiple_choice.keras"
    model_class = ElectraMultipleChoice
    predict_formats = ("jsonl", "csv")
    metric = "accuracy"
    task_names = ("swag",)

    def __init__(self, config):
        super().__init__(config)
        self.questions, self.paths = {}, {}
        for split, limit in (("train", config.train_limit), ("dev", config.dev_limit)):
            path = required_split_file(config.data_dir, split, SPLIT_FILES[split], config.task)
            self.questions[split], self.paths[split] = read_questions(path, limit=limit), path
        test = split_file(config.data_dir, SPLIT_FILES["test"])
        if test is not None:
            questions = read_questions(test)
            if all(q.label is not None for q in questions):
                self.questions["test"], self.paths["test"] = questions, test
                self.test_splits.append("test")
            else:
                logging.warning("Test split %s is not scored: it has unlabelled questions.", test)
        unlabelled = [f"{split} line {q.line}" for split in ("train", "dev") for q in self.questions[split]
                      if q.label is None]
        if unlabelled:
            raise ValueError(f"Task {config.task!r}: questions without an answer in a labelled split: "
                             f"{', '.join(unlabelled[:5])}.")
        self.num_train_rows = len(self.questions["train"])
        self.packed = {}
        logging.info("Task %s: %s questions.", config.task, {k: len(v) for k, v in self.questions.items()})

    def prepare(self, tokenizer):
        """Packs every split; refuses a `seq_length` that leaves no choice of a split a piece, warns of heavy cuts."""
        seq_length = self.config.seq_length
        for split, questions in self.questions.items():
            packed = pack_questions(questions, tokenizer, seq_length)
            cut = cut_report(questions, tokenizer, packed, seq_length)
            if cut["blind"] == len(questions):
                raise ValueError(f"`--seq_length={seq_length}` leaves no room for the choices: every question of "
                                 f"{self.paths[split]} packs all its choices to the same tokens ([CLS] context [SEP] "
                                 f"question choice [SEP], cut to {seq_length}); use --seq_length {cut['needed']} "
                                 "or more.")
            if cut["blind"] or cut["cut_pairs"] >= HEAVY_CUT * cut["pairs"]:
                logging.warning("--seq_length=%d cuts %d of %d (context, choice) pairs of %s (%d of %d word pieces); "
                                "%d of %d questions pack all their choices to the same tokens. --seq_length %d keeps "
                                "a piece of every choice.", seq_length, cut["cut_pairs"], cut["pairs"],
                                self.paths[split], cut["cut_pieces"], cut["pieces"], cut["blind"], len(questions),
                                cut["needed"])
            self.packed[split] = packed

    def _labels(self, split):
        return np.array([q.label for q in self.questions[split]], np.int32)

    def train_dataset(self, seed, epoch, skip):
        return epoch_batches((self.packed["train"], self._labels("train")), self.config.batch_size, seed, epoch,
                             skip, self.length_multiple)

    def build_model(self, encoder):
        model = ElectraMultipleChoice(encoder, dropout=self.config.dropout)
        return model, {"loss": keras.losses.SparseCategoricalCrossentropy(from_logits=True)}

    def evaluate(self, model, split):
        predict = self.predictor(model, choice_predictor)
        width = max(len(q.choices) for q in self.questions[split])

        def widened(inputs):  # each batch is as wide as its widest question; the split's rows, as wide as its
            logits = predict(inputs)
            return tf.pad(logits, [[0, 0], [0, width - tf.shape(logits)[1]]], constant_values=ABSENT)

        logits = predict_in_batches(widened, self.packed[split], 4 * self.config.batch_size)
        predicted = logits.argmax(-1)
        return {"accuracy": accuracy(self._labels(split), predicted)}, predicted

    def results(self):
        return {"num_questions": {split: len(q) for split, q in self.questions.items()},
                "num_choices": {split: int(max(len(x.choices) for x in q)) for split, q in self.questions.items()}}

    def finetune_config(self, best_trial):
        return {"task": self.config.task, "kind": self.name, "seq_length": self.config.seq_length}

    # --- After training ---

    @classmethod
    def serving_module(cls, model, vocab_file, settings, seq_length=None):
        return MultipleChoiceServingModule(model, vocab_file, seq_length or settings.get("seq_length", 128),
                                           settings.get("task", ""))

    @classmethod
    def hf_head(cls, model, settings):
        """transformers' `ElectraForMultipleChoice` with its sequence summary an identity ([CLS] as it is).

        Its head is `sequence_summary` (a dense(H, H) and GELU by default) then
        `classifier` dense(H, 1); with `summary_use_proj=False` and a linear summary
        activation, the summary is [CLS] itself and `classifier` is this model's
        dense(1): the logits are equal.
        """
        kernel, bias = (np.asarray(w, np.float32) for w in model.head.get_weights())
        return ("ElectraForMultipleChoice", {"classifier.weight": kernel.T, "classifier.bias": bias},
                {"num_labels": 1, "summary_type": "first", "summary_use_proj": False, "summary_activation": "linear",
                 "summary_last_dropout": float(model.dropout)})

    @classmethod
    def read_examples(cls, name, text, input_format, settings, options):
        """JSON Lines (`{"context"/"question", "choices", "answer"}`) or a SWAG CSV; answers are scored."""
        return read_inputs(name, text, input_format)

    @classmethod
    def format_prediction(cls, row, example, settings):
        n = len(example.inputs["choices"])
        choice = int(row["choice"])
        return Prediction({"choice": choice, "answer": example.inputs["choices"][choice],
                           "probabilities": row["probabilities"][:n].astype(float).tolist()})

    @classmethod
    def score(cls, settings, examples, predictions):
        return {"metric": "accuracy",
                "accuracy": accuracy([e.gold for e in examples], [p.output["choice"] for p in predictions]),
                "examples": len(examples)}


