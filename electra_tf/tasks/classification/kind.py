"""Sentence(-pair) classification and regression fine-tuning: the task kind `run_trials` runs for GLUE and TSV/CSV tasks.

`ClassificationKind(config)` reads a GLUE task in its released layout or any
TSV/CSV (`tasks`), trains `ElectraClassifier` ([CLS] -> dropout 0.1 ->
dense) with cross-entropy (mean squared error for regression), and scores
every dev split with `task_metrics` (accuracy, F1, MCC; Pearson, Spearman).
A labelled test split is scored once at the end; an unlabelled one (GLUE's)
gets its predictions in the official submission layout (`<TASK>.tsv`,
`index\\tprediction`; MNLI-m.tsv and MNLI-mm.tsv).
"""

import os

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from electra_tf import atomic, run_files
from electra_tf.tasks.classification import data as tasks_lib
from electra_tf.finetuning import trials
from electra_tf.finetuning.batching import predict_in_batches
from electra_tf.finetuning.config import FinetuneConfig
from electra_tf.finetuning.examples import Prediction
from electra_tf.tasks.base import TaskKind
from electra_tf.tasks.classification.description import DESCRIPTION
from electra_tf.tasks.classification.config import Config
from electra_tf.tasks.classification.data import task_spec
from electra_tf.tasks.classification.features import make_dataset, pack_examples
from electra_tf.finetuning.task_metrics import task_metrics
from electra_tf.tasks.classification.model import ElectraClassifier


class ClassificationKind(TaskKind):
    """Classification / regression over sentences or sentence pairs (see the module docstring).

    Example:
        ```python
        import os

        from electra_tf.tasks.classification.kind import ClassificationKind
        from electra_tf.tasks import FinetuneConfig

        os.makedirs("polarity", exist_ok=True)
        for split in ("train", "dev"):
            with open(f"polarity/{split}.tsv", "w") as f:
                f.write("sentence\\tlabel\\na fine film\\tpositive\\na dull film\\tnegative\\n")
        kind = ClassificationKind(FinetuneConfig(task="polarity", data_dir="polarity"))
        kind.metric, kind.eval_splits, kind.num_train_rows  # ('accuracy', ['dev'], 2)
        ```
    """

    name = "classification"
    description = DESCRIPTION  # what it is, for its users: `--help` and the guides list it
    Config = Config  # its settings: flags of `python -m electra_tf.finetune`
    shared_flags = ("label_column",)  # a `finetune` flag of the generic files, besides its `Config`'s
    model_file = "classifier.keras"
    model_class = ElectraClassifier
    predict_formats = ("tsv", "csv", "jsonl", "text")

    def __init__(self, config):
        super().__init__(config)
        spec, data_dir = task_spec(config), config.data_dir
        self.spec, self.metric = spec, spec.metric
        self.train = tasks_lib.read_examples(spec, data_dir, "train", limit=config.train_limit)
        present = [s for s in spec.splits if tf.io.gfile.exists(os.path.join(data_dir, spec.splits[s]))]
        self.examples = {s: tasks_lib.read_examples(spec, data_dir, s, limit=config.dev_limit)
                         for s in present if s.startswith("dev")}
        if "dev" not in self.examples:
            raise FileNotFoundError(f"No dev split of task {spec.name!r} in {data_dir}: "
                                    f"{os.path.join(data_dir, spec.splits.get('dev', 'dev.tsv'))} is missing.")
        self.eval_splits, self.unlabelled = list(self.examples), {}
        for split in (s for s in present if s.startswith("test")):
            try:
                examples = tasks_lib.read_examples(spec, data_dir, split)
            except ValueError as e:  # e.g. a test layout other than train's: scored nowhere, said so
                logging.warning("Test split %r not used: %s", split, e)
                continue
            if all(e.label is not None for e in examples):
                self.examples[split] = examples
                self.test_splits.append(split)
            else:
                self.unlabelled[split] = (examples, tasks_lib.read_index(spec, data_dir, split))
        self.both_orders = config.both_orders
        if self.both_orders is None:
            self.both_orders = spec.name in ("mrpc", "sts-b")
        if self.both_orders and self.train[0].text_b is not None:
            self.train = self.train + [tasks_lib.Example(e.text_b, e.text_a, e.label) for e in self.train]
        self.num_train_rows = len(self.train)
        self.tokenizer = self.packed_train = None
        self.packed_eval = {}  # split name -> pack_examples of that split

    def prepare(self, tokenizer):
        self.tokenizer = tokenizer
        self.packed_train = pack_examples(self.train, tokenizer, self.config.seq_length)  # once, not per epoch

    def train_dataset(self, seed, epoch, skip):
        c = self.config
        return make_dataset(self.train, self.tokenizer, c.seq_length, c.batch_size, self.spec.is_regression,
                            seed, epoch, skip, packed=self.packed_train, multiple=self.length_multiple)

    def build_model(self, encoder):
        model = ElectraClassifier(encoder, self.spec.num_labels, dropout=self.config.dropout)
        if self.spec.is_regression:
            return model, {"loss": keras.losses.MeanSquaredError()}
        return model, {"loss": keras.losses.SparseCategoricalCrossentropy(from_logits=True)}

    def predictions(self, model, split, examples):
        """Predicted ids (scores for regression) of `examples`, the split named `split`, in order."""
        predict, c = self.predictor(model), self.config
        if split not in self.packed_eval:  # packed once per split, scored every epoch
            self.packed_eval[split] = pack_examples(examples, self.tokenizer, c.seq_length)
        logits = predict_in_batches(predict, self.packed_eval[split], 4 * c.batch_size)
        return logits[:, 0] if self.spec.is_regression else logits.argmax(-1)

    def evaluate(self, model, split):
        examples = self.examples[split]
        predicted = self.predictions(model, split, examples)
        labels = np.array([e.label for e in examples])
        return task_metrics(labels, predicted, self.spec.is_regression, self.spec.num_labels), None

    def write_outputs(self, output_dir, model, outputs):
        """The unlabelled test splits' predictions, in the official GLUE submission layout."""
        for split, (examples, index) in self.unlabelled.items():
            predicted = self.predictions(model, split, examples)
            values = ([f"{v:.3f}" for v in np.clip(predicted, 0, 5)] if self.spec.is_regression
                      else [self.spec.labels[i] for i in predicted])
            path = os.path.join(output_dir, run_files.submission_file(self.spec.name, split))
            atomic.write_text(path, "index\tprediction\n" + "".join(f"{i}\t{v}\n" for i, v in zip(index, values)),
                              "output_dir")

    def results(self):
        labels = np.array([e.label for e in self.examples["dev"]])
        majority = None
        if not self.spec.is_regression:
            majority = float(np.mean(labels == np.bincount(labels.astype(int)).argmax()))
        return {"majority_class_accuracy": majority,
                "test_submissions": [run_files.submission_file(self.spec.name, s) for s in self.unlabelled]}

    def hparams(self):
        return {"both_orders": self.both_orders}

    def finetune_config(self, best_trial):
        return {
            "task": self.spec.name,
            "kind": self.name,
            "label_names": self.spec.names,
            "regression": self.spec.is_regression,
            "pair": self.train[0].text_b is not None,
            "metric": self.metric,
            "seq_length": self.config.seq_length,
        }

    # --- After training ---

    @classmethod
    def claims(cls, task):
        return tasks_lib.is_glue_task(task)

    @classmethod
    def missing_settings(cls, model):
        return (f"the export assumes numbered labels (0..{model.num_labels - 1}), one text per request (no text_b) "
                "and 128 tokens unless --seq_length is given. Export the folder `python -m electra_tf.finetune` "
                "wrote to serve the task's own label names and pairs.")

    @classmethod
    def serving_module(cls, model, vocab_file, settings, seq_length=None):
        from electra_tf.tasks.classification.serving import classification_serving_module

        return classification_serving_module(
            model, vocab_file, settings.get("label_names") or None, seq_length or settings.get("seq_length", 128),
            settings.get("pair", False), settings.get("task", ""), settings.get("metric"))

    @classmethod
    def hf_head(cls, model, settings):
        from electra_tf.tasks.classification.hf_head import classifier_head

        return classifier_head(model, settings.get("label_names"))

    @classmethod
    def tflite_module(cls, model, vocab_file, settings, seq_length=None, ids_only=False):
        return cls.serving_module(model, vocab_file, settings, seq_length)  # raw text or ids, both convert

    @classmethod
    def read_examples(cls, name, text, input_format, settings, options):
        """TSV/CSV rows (text columns by header name or `--text_a_column`...), JSON Lines or text lines."""
        return tasks_lib.read_inputs(name, text, input_format, settings, options)

    @classmethod
    def format_prediction(cls, row, example, settings):
        if "score" in row:
            return Prediction({"score": float(row["score"])})
        return Prediction({"label": row["label"].decode(), "probabilities": dict(
            zip(settings["label_names"], row["probabilities"].astype(float).tolist()))})

    @classmethod
    def score(cls, settings, examples, predictions):
        """`task_metrics` of the labelled examples, headed by the task's own metric (e.g. CoLA's MCC)."""
        gold = np.array([e.gold for e in examples])
        outputs = [p.output for p in predictions]
        if settings.get("regression"):
            predicted = np.array([o["score"] for o in outputs], float)
            scores = task_metrics(gold.astype(float), predicted, regression=True)
            metric = settings.get("metric") or "spearman"
        else:
            names = settings["label_names"]
            predicted = np.array([names.index(o["label"]) for o in outputs])
            scores = task_metrics(gold, predicted, num_labels=len(names))
            metric = settings.get("metric") or "accuracy"
        return {"metric": metric, **scores, "examples": len(examples)}


def run_finetuning(spec, data_dir, init, output_dir, vocab_file=None, strategy=None, **settings):
    """Fine-tunes `num_trials` times on a classification task and writes results; returns the results dict.

    The Python API of `trials.run_trials` for classification: `spec` gives the
    task's name and columns (a GLUE name reads its layout).

    Args:
        spec: `data.TaskSpec`.
        data_dir: str. The task's folder.
        init: str. Any `--init` form.
        output_dir: str. Written: `results.json`, `classifier.keras` (best
            trial), `vocab.txt`, `finetune_config.json`.
        vocab_file: str or None. Default: the one beside `init`.
        strategy: `tf.distribute.Strategy` or None (one from `settings`).
        **settings: fields of `FinetuneConfig` (`epochs=3`, `batch_size=32`, ...).
    """
    columns = {}
    if not tasks_lib.is_glue_task(spec.name):
        columns = dict(text_a_column=str(spec.text_a), label_column=str(spec.label), regression=spec.is_regression,
                       text_b_column=None if spec.text_b is None else str(spec.text_b),
                       file_format="csv" if spec.delimiter == "," else "tsv")
    config_class = FinetuneConfig.with_fields_of(Config)  # the recipe and this kind's fields
    config = config_class(task=spec.name, task_kind="classification", data_dir=data_dir, init=init,
                          output_dir=output_dir, vocab_file=vocab_file, **columns).replace(**settings)
    return trials.run_trials(config, ClassificationKind, strategy)

