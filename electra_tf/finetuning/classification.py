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

from electra_tf import run_files
from electra_tf.finetuning import tasks as tasks_lib
from electra_tf.finetuning.batching import epoch_batches, predict_in_batches
from electra_tf.finetuning.kind import TaskKind
from electra_tf.finetuning.task_metrics import task_metrics
from electra_tf.models.classifier import ElectraClassifier


def _column(value):
    return int(value) if isinstance(value, str) and value.lstrip("-").isdigit() else value


def task_spec(config):
    """The `TaskSpec` of `config`: a GLUE task by name, else a generic TSV/CSV from the column flags."""
    if tasks_lib.is_glue_task(config.task):
        return tasks_lib.load_task(config.task, config.data_dir)
    return tasks_lib.load_task(
        config.task, config.data_dir, text_a_column=_column(config.text_a_column),
        text_b_column=_column(config.text_b_column), label_column=_column(config.label_column or "label"),
        regression=config.regression, file_format=config.file_format,
    )


def _labels(examples, regression):
    return np.array([0 if e.label is None else e.label for e in examples], "float32" if regression else "int32")


def pack_examples(examples, tokenizer, seq_length, chunk=4096):
    """`tokenizer.pack` of every example, `chunk` at a time: dict of int32 arrays `(len(examples), seq_length)`.

    Packing a row does not depend on its batch, so packing once before the
    first epoch gives the batches a per-batch `map` would, for one pass over
    the texts instead of one per epoch and no tokenizer graph competing with
    the train step for the cores.
    """
    pair = examples[0].text_b is not None
    parts = []
    for start in range(0, len(examples), chunk):
        rows = examples[start:start + chunk]
        texts_b = tf.constant([e.text_b for e in rows]) if pair else None
        packed = tokenizer.pack(tf.constant([e.text_a for e in rows]), texts_b, seq_length=seq_length)
        parts.append({name: value.numpy() for name, value in packed.items()})
    return {name: np.concatenate([p[name] for p in parts]) for name in parts[0]}


def make_dataset(examples, tokenizer, seq_length, batch_size, regression=False, shuffle_seed=None, epoch=0, skip=0,
                 packed=None):
    """`tf.data` of `(inputs dict, label)` training batches, tokenised once (`pack_examples`) before the first batch.

    Each batch is cut to its longest row (rounded up to `batching.LENGTH_MULTIPLE`):
    padding is masked, so this changes no result and saves the compute of
    padding on short sentences.

    Args:
        examples: list of `tasks.Example`.
        tokenizer: `WordPieceTokenizer`.
        seq_length: int.
        batch_size: int.
        regression: bool. Float labels instead of int ids.
        shuffle_seed: int or None. The order of epoch `epoch` for this seed
            (`batching.epoch_order`); None keeps the file order.
        epoch, skip: int. The epoch, and its batches left out (a resumed run).
        packed: optional `pack_examples(examples, tokenizer, seq_length)`, computed once by the caller.
    """
    if packed is None:
        packed = pack_examples(examples, tokenizer, seq_length)
    return epoch_batches((packed, _labels(examples, regression)), batch_size, shuffle_seed, epoch, skip)


class ClassificationKind(TaskKind):
    """Classification / regression over sentences or sentence pairs (see the module docstring).

    Example:
        ```python
        import os

        from electra_tf.finetuning.classification import ClassificationKind
        from electra_tf.finetuning.config import FinetuneConfig

        os.makedirs("polarity", exist_ok=True)
        for split in ("train", "dev"):
            with open(f"polarity/{split}.tsv", "w") as f:
                f.write("sentence\\tlabel\\na fine film\\tpositive\\na dull film\\tnegative\\n")
        kind = ClassificationKind(FinetuneConfig(task="polarity", data_dir="polarity"))
        kind.metric, kind.eval_splits, kind.num_train_rows  # ('accuracy', ['dev'], 2)
        ```
    """

    name = "classification"
    model_file = run_files.CLASSIFIER_FILE

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
                            seed, epoch, skip, packed=self.packed_train)

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
            with tf.io.gfile.GFile(path + ".tmp", "w") as f:
                f.write("index\tprediction\n" + "".join(f"{i}\t{v}\n" for i, v in zip(index, values)))
            tf.io.gfile.rename(path + ".tmp", path, overwrite=True)

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
            "seq_length": self.config.seq_length,
        }

