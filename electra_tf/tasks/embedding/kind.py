"""Embeddings for semantic search: the task kind that trains one vector per text (`--task_kind embedding`).

`EmbeddingKind(config)` reads (query, positive[, hard negative]) rows (`data`: `train`, `dev`,
optional `test`, each `.jsonl` or `.tsv`), trains `ElectraEmbedder` (encoder -> mean or [CLS]
pooling -> L2 normalisation, `--pooling`, `--normalize_embeddings`) with the
multiple-negatives ranking loss (`loss`: in-batch negatives, `--similarity_scale`), and scores
each split as retrieval (`metrics`): its distinct positives are the corpus, each query ranks it
by cosine; recall@1, recall@10 and the headline mrr@10. `--epochs 0` scores and writes the
`--init` model as it is (zero-shot): a sentence-transformers model read as `bert:DIR` gives
that library's own vectors.

After training: `export --format serving` and `--format tflite` serve `text -> embedding`
(`serving`); `predict` writes `{"embedding": [...]}` per text line or JSON Lines
`{"text": ...}`, or with `--passages FILE --top_k K` each query's best passages
(`search`); `convert --to hf` writes a sentence-transformers folder (`sentence_transformers`).
"""

import collections

import numpy as np
from absl import logging

from electra_tf.finetuning.batching import epoch_batches, predict_in_batches
from electra_tf.finetuning.examples import (Example, Prediction, each_line, field, json_object, required_split_file,
                                            split_file)
from electra_tf.tasks.base import TaskKind
from electra_tf.tasks.embedding.description import DESCRIPTION
from electra_tf.tasks.embedding.config import Config, PredictOptions
from electra_tf.tasks.embedding.data import SPLIT_FILES, read_pairs
from electra_tf.tasks.embedding.features import pack_texts
from electra_tf.tasks.embedding.loss import MultipleNegativesRankingLoss
from electra_tf.tasks.embedding.metrics import METRIC, corpus_of, retrieval_metrics
from electra_tf.tasks.embedding.model import ElectraEmbedder


class EmbeddingKind(TaskKind):
    """Sentence / passage embeddings trained on (query, positive[, negative]) rows (see the module docstring).

    Example:
        ```python
        import json, os

        from electra_tf.tasks import FinetuneConfig
        from electra_tf.tasks.embedding.kind import EmbeddingKind

        os.makedirs("faq", exist_ok=True)
        for split in ("train", "dev"):
            with open(f"faq/{split}.jsonl", "w") as f:
                f.write(json.dumps({"query": "how do cats purr", "positive": "Cats purr with the larynx."}) + "\\n")
        kind = EmbeddingKind(FinetuneConfig(task="faq", task_kind="embedding", data_dir="faq"))
        kind.metric, kind.num_train_rows  # ('mrr@10', 1)
        ```
    """

    name = "embedding"
    description = DESCRIPTION  # what it is, for its users: `--help` and the guides list it
    Config = Config  # its settings: flags of `python -m electra_tf.finetune`
    PredictOptions = PredictOptions  # its `predict` flags
    model_file = "embedder.keras"
    model_class = ElectraEmbedder
    saved_classes = (MultipleNegativesRankingLoss,)  # named by its compiled model file
    predict_formats = ("text", "jsonl")
    predict_options = ("passages", "top_k")
    scores_predictions = False  # texts carry no gold: `--metrics_file` is refused
    predict_input_files = ("passages",)
    metric = METRIC

    def __init__(self, config):
        super().__init__(config)
        self.pairs, self.paths = {}, {}
        for split, limit in (("train", config.train_limit), ("dev", config.dev_limit)):
            path = required_split_file(config.data_dir, split, SPLIT_FILES[split], config.task)
            self.pairs[split], self.paths[split] = read_pairs(path, limit=limit), path
        test = split_file(config.data_dir, SPLIT_FILES["test"])
        if test is not None:
            self.pairs["test"], self.paths["test"] = read_pairs(test), test
            self.test_splits.append("test")
        self.num_train_rows = len(self.pairs["train"])
        self.packed = {}
        logging.info("Task %s: %s rows.", config.task, {k: len(v) for k, v in self.pairs.items()})

    @classmethod
    def configure(cls, config, given):
        """A sentence-transformers `--init` folder's own pooling, normalisation and length
        (`sentence_transformers.read_folder`) where no flag of `given` sets them; a flag that does, and
        differs, wins with a warning naming both."""
        from electra_tf.tasks.embedding.sentence_transformers import folder_of, read_folder

        folder = folder_of(config.init)
        if folder is None:
            return config
        changes = {}
        for name, (value, where) in read_folder(folder).items():
            if value is None or value == getattr(config, name):
                continue
            if name in given:
                logging.warning("WARNING: `--%s=%s` overrides the --init's own setting, %s: the vectors are not "
                                "sentence-transformers' for this folder. Leave out --%s to use the folder's.",
                                name, getattr(config, name), where, name)
            else:
                changes[name] = value
        config = config.replace(**changes)
        logging.info("--init %s is a sentence-transformers folder: %s pooling, %snormalised, %d tokens per text.",
                     folder, config.pooling, "" if config.normalize_embeddings else "not ", config.seq_length)
        return config

    def check_training(self, replicas):
        """Refuses (before anything is written) training rows whose batches hold no negative: the in-batch loss
        is then constant, its gradient zero, and the model would end as it began. Warns when most rows share
        one positive (their batches are mostly without a negative)."""
        if not self.config.epochs:
            return  # zero-shot: nothing trains
        pairs, path = self.pairs["train"], self.paths["train"]
        if all(p.negative is not None and p.negative != p.positive for p in pairs):
            return  # every query has its hard negative, whatever its batch
        per_replica = self.config.batch_size // replicas
        why = ("each query's only in-batch passage is its own positive: the loss is the same whatever the model, "
               "nothing is learned")
        if len(pairs) == 1:
            limit = f" (`--train_limit={self.config.train_limit}`)" if self.config.train_limit else ""
            raise ValueError(f"{path}: one training row{limit}: {why}. Give more rows (or hard negatives).")
        if per_replica <= 1:
            over = f" over {replicas} replicas is {per_replica} row(s) each" if replicas > 1 else ""
            raise ValueError(f"`--batch_size={self.config.batch_size}`{over}: {why}. Give --batch_size "
                             f"{2 * replicas} or more (or hard negatives).")
        passages = collections.Counter(p.positive for p in pairs)
        passages.update(p.negative for p in pairs if p.negative is not None)
        if len(passages) == 1:
            raise ValueError(f"{path}: all {len(pairs)} rows (lines {pairs[0].line} to {pairs[-1].line}) have the "
                             f"same positive and no other passage ({next(iter(passages))!r:.60}): {why}. Give rows "
                             "with different positives (or hard negatives).")
        positive, count = collections.Counter(p.positive for p in pairs).most_common(1)[0]
        if count > len(pairs) / 2:
            logging.warning("WARNING: %s: %d of %d rows share the positive %.60r: in a batch of them, each query's "
                            "other passages are its own positive, and little is learned.", path, count, len(pairs),
                            positive)

    def prepare(self, tokenizer):
        """Packs the training rows `(rows, 2 or 3, seq_length)` and each split's distinct queries and passages."""
        seq_length = self.config.seq_length
        train = self.pairs["train"]
        columns = [[p.query for p in train], [p.positive for p in train]]
        if train[0].negative is not None:
            columns.append([p.negative for p in train])
        packed = [pack_texts(texts, tokenizer, seq_length) for texts in columns]
        self.packed["train"] = {name: np.stack([p[name] for p in packed], axis=1) for name in packed[0]}
        for split, pairs in self.pairs.items():
            if split == "train":
                continue
            queries, passages, relevant = corpus_of(pairs)
            self.packed[split] = (pack_texts(queries, tokenizer, seq_length),
                                  pack_texts(passages, tokenizer, seq_length), relevant)

    def train_dataset(self, seed, epoch, skip):
        labels = np.zeros(self.num_train_rows, np.float32)  # unread: row i's positive is passage i
        return epoch_batches((self.packed["train"], labels), self.config.batch_size, seed, epoch, skip,
                             self.length_multiple)

    def build_model(self, encoder):
        c = self.config
        model = ElectraEmbedder(encoder, pooling=c.pooling, normalize=c.normalize_embeddings)
        return model, {"loss": MultipleNegativesRankingLoss(scale=c.similarity_scale)}

    def vectors(self, model, packed):
        return predict_in_batches(self.predictor(model), packed, 4 * self.config.batch_size)

    def evaluate(self, model, split):
        queries, passages, relevant = self.packed[split]
        return retrieval_metrics(self.vectors(model, queries), self.vectors(model, passages), relevant), None

    def results(self):
        return {"num_rows": {split: len(p) for split, p in self.pairs.items()}}

    def finetune_config(self, best_trial):
        return {"task": self.config.task, "kind": self.name, "seq_length": self.config.seq_length,
                "metric": self.metric}

    # --- After training ---

    @classmethod
    def missing_settings(cls, model):
        return "the export assumes 128 tokens per text unless --seq_length is given."

    @classmethod
    def serving_module(cls, model, vocab_file, settings, seq_length=None):
        from electra_tf.tasks.embedding.serving import EmbeddingServingModule

        return EmbeddingServingModule(model, vocab_file, seq_length or settings.get("seq_length", 128),
                                      settings.get("task", ""), settings.get("metric"))

    @classmethod
    def tflite_module(cls, model, vocab_file, settings, seq_length=None, ids_only=False):
        return cls.serving_module(model, vocab_file, settings, seq_length)  # raw text or ids, both convert

    @classmethod
    def hf_head(cls, model, settings):
        from electra_tf.tasks.embedding.sentence_transformers import hf_head

        return hf_head(model, settings)

    @classmethod
    def read_examples(cls, name, text, input_format, settings, options):
        """Text lines, or JSON Lines `{"text": ...}` (or `"query"`): one text per example."""
        if input_format == "jsonl":
            return each_line(name, text, lambda line, raw: Example(
                {"text": field(json_object(name, line, raw), ("text", "query"), name, line)}, None, line))
        return each_line(name, text, lambda line, raw: Example({"text": raw}, None, line))

    @classmethod
    def predict_settings(cls, served, options):
        """With `--passages`: the passages and their vectors (`search`), which each query is ranked against."""
        if getattr(options, "top_k", None) and not getattr(options, "passages", None):
            raise ValueError("--top_k is the number of --passages written per query: add --passages, or leave out "
                             "--top_k.")
        if not getattr(options, "passages", None):
            return served.settings
        from electra_tf.tasks.embedding.search import passage_settings

        return passage_settings(served, options, cls)

    @classmethod
    def format_prediction(cls, row, example, settings):
        if "passage_vectors" in settings:
            from electra_tf.tasks.embedding.search import top_passages

            return Prediction({"top_k": top_passages(row["embedding"], settings)})
        return Prediction({"embedding": np.asarray(row["embedding"], np.float64).round(7).tolist()})

    @classmethod
    def score(cls, settings, examples, predictions):
        return None  # texts carry no gold

