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

import numpy as np
import tensorflow as tf
from absl import logging

from electra_tf.finetuning.batching import epoch_batches, predict_in_batches
from electra_tf.finetuning.examples import (Example, Prediction, each_line, field, json_object, required_split_file,
                                            split_file)
from electra_tf.tasks.base import TaskKind
from electra_tf.tasks.embedding.config import Config, PredictOptions
from electra_tf.tasks.embedding.data import SPLIT_FILES, read_pairs
from electra_tf.tasks.embedding.loss import MultipleNegativesRankingLoss
from electra_tf.tasks.embedding.metrics import METRIC, corpus_of, retrieval_metrics
from electra_tf.tasks.embedding.model import ElectraEmbedder


def pack_texts(texts, tokenizer, seq_length, chunk=4096):
    """`[CLS] text [SEP]` of each text: dict of int32 arrays `(len(texts), seq_length)`."""
    parts = []
    for start in range(0, len(texts), chunk):
        packed = tokenizer.pack(tf.constant(texts[start:start + chunk]), seq_length=seq_length)
        parts.append({name: value.numpy() for name, value in packed.items()})
    return {name: np.concatenate([p[name] for p in parts]) for name in parts[0]}


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
    Config = Config  # its settings: flags of `python -m electra_tf.finetune`
    PredictOptions = PredictOptions  # its `predict` flags
    model_file = "embedder.keras"
    model_class = ElectraEmbedder
    saved_classes = (MultipleNegativesRankingLoss,)  # named by its compiled model file
    predict_formats = ("text", "jsonl")
    predict_options = ("passages", "top_k")
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

        return passage_settings(served, options)

    @classmethod
    def format_prediction(cls, row, example, settings):
        if "passage_vectors" in settings:
            from electra_tf.tasks.embedding.search import top_passages

            return Prediction({"top_k": top_passages(row["embedding"], settings)})
        return Prediction({"embedding": np.asarray(row["embedding"], np.float64).round(7).tolist()})

    @classmethod
    def score(cls, settings, examples, predictions):
        return None  # texts carry no gold

