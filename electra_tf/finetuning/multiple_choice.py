"""Multiple choice (SWAG, ARC- or RACE-style sets): the task kind that scores each (context, choice) pair.

`MultipleChoiceKind(config)` reads `--task swag` (the released SWAG CSVs:
`train.csv`, `val.csv` as dev, a labelled `test.csv` scored once at the end) or
any task name with `--task_kind multiple_choice` (SWAG CSVs or the JSON Lines
layout of `multiple_choice_data`: `train.jsonl`, `dev.jsonl`, `test.jsonl`).
It trains `ElectraMultipleChoice`: each choice is packed with its context
(`[CLS] context [SEP] question choice [SEP]`, truncated longest-first), the
encoder's [CLS] vector of each pair gets one score, and cross-entropy over a
question's choices (transformers' `ElectraForMultipleChoice` and `run_swag.py`).
The headline metric is accuracy. A question may have any number of choices
(two or more); a batch is padded to its widest question with empty slots that
take no probability.
"""

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from electra_tf.export.multiple_choice_serving import MultipleChoiceServingModule
from electra_tf.finetuning.batching import compiled_predictor, epoch_batches, predict_in_batches
from electra_tf.finetuning.examples import Example, Prediction, each_line, json_object
from electra_tf.finetuning.kind import TaskKind
from electra_tf.finetuning.multiple_choice_data import SPLIT_FILES, question_of_record, read_questions, split_path
from electra_tf.finetuning.task_metrics import accuracy
from electra_tf.models.multiple_choice import ElectraMultipleChoice


def pack_questions(questions, tokenizer, seq_length, num_choices=None, chunk=4096):
    """Model inputs of `questions`: dict of int32 arrays `(len(questions), num_choices, seq_length)`.

    Each (context, choice) pair is packed by `tokenizer.pack` as training and
    serving pack it; the slots past a question's last choice are all zero.

    Args:
        questions: list of `multiple_choice_data.Question`.
        tokenizer: `WordPieceTokenizer`.
        seq_length: int.
        num_choices: int or None. Slots per question (default: the most any question has).
        chunk: int. Pairs packed per call.
    """
    width = num_choices or max(len(q.choices) for q in questions)
    firsts, seconds, slots = [], [], []
    for row, question in enumerate(questions):
        for column, second in enumerate(question.second_segments()):
            firsts.append(question.context)
            seconds.append(second)
            slots.append(row * width + column)
    flat = {name: np.zeros((len(questions) * width, seq_length), np.int32)
            for name in ("token_ids", "segment_ids", "padding_mask")}
    for start in range(0, len(firsts), chunk):
        packed = tokenizer.pack(tf.constant(firsts[start:start + chunk]), tf.constant(seconds[start:start + chunk]),
                                seq_length=seq_length)
        for name, value in packed.items():
            flat[name][slots[start:start + chunk]] = value.numpy()
    return {name: value.reshape(len(questions), width, seq_length) for name, value in flat.items()}


def choice_predictor(model):
    """`model`'s logits, compiled once for `(batch, choices, seq)` batches of any size."""
    return compiled_predictor(lambda inputs: model(inputs, training=False), rank=3)


class MultipleChoiceKind(TaskKind):
    """Multiple choice over SWAG CSVs or JSON Lines (see the module docstring).

    Example:
        ```python
        import json, os

        from electra_tf.finetuning.config import FinetuneConfig
        from electra_tf.finetuning.multiple_choice import MultipleChoiceKind

        os.makedirs("pick", exist_ok=True)
        for split in ("train", "dev"):
            with open(f"pick/{split}.jsonl", "w") as f:
                f.write(json.dumps({"question": "Which one purrs?", "choices": ["a cat", "a car"], "answer": 0}) + "\\n")
        kind = MultipleChoiceKind(FinetuneConfig(task="pick", task_kind="multiple_choice", data_dir="pick"))
        kind.metric, kind.num_train_rows  # ('accuracy', 1)
        ```
    """

    name = "multiple_choice"
    model_file = "multiple_choice.keras"
    model_class = ElectraMultipleChoice
    predict_formats = ("jsonl", "csv")
    metric = "accuracy"
    task_names = ("swag",)

    def __init__(self, config):
        super().__init__(config)
        self.questions = {}
        for split, limit in (("train", config.train_limit), ("dev", config.dev_limit)):
            path = split_path(config.data_dir, split)
            if path is None:
                raise FileNotFoundError(f"No {split} split of task {config.task!r} in {config.data_dir} (looked for "
                                        f"{', '.join(SPLIT_FILES[split])}).")
            self.questions[split] = read_questions(path, limit=limit)
        test = split_path(config.data_dir, "test")
        if test is not None:
            questions = read_questions(test)
            if all(q.label is not None for q in questions):
                self.questions["test"] = questions
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
        for split, questions in self.questions.items():
            self.packed[split] = pack_questions(questions, tokenizer, self.config.seq_length)

    def _labels(self, split):
        return np.array([q.label for q in self.questions[split]], np.int32)

    def train_dataset(self, seed, epoch, skip):
        return epoch_batches((self.packed["train"], self._labels("train")), self.config.batch_size, seed, epoch,
                             skip)

    def build_model(self, encoder):
        model = ElectraMultipleChoice(encoder, dropout=self.config.dropout)
        return model, {"loss": keras.losses.SparseCategoricalCrossentropy(from_logits=True)}

    def evaluate(self, model, split):
        logits = predict_in_batches(self.predictor(model, choice_predictor), self.packed[split],
                                    4 * self.config.batch_size)
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
        if input_format == "csv":
            return [_example(q) for q in read_questions(name, text=text, file_format="csv")]
        return each_line(name, text, lambda line, raw: _example(question_of_record(json_object(name, line, raw),
                                                                                   name, line)))

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


def _example(question):
    """The `Example` of a `Question`: what the served `serving_default` takes, its gold index."""
    return Example({"context": question.context, "question": question.question, "choices": list(question.choices)},
                   question.label, question.line)
