"""Toy embedding task files for the tests (questions about animals and the sentences that answer them), and tiny
sentence-transformers folders."""

import json
import os

import numpy as np

ANIMALS = ["cat", "dog", "horse", "cow", "sheep", "goat", "duck", "fish", "bird", "mouse", "lion", "bear"]
PLACES = ["barn", "house", "field", "river", "forest", "city", "garden", "lake", "farm", "park", "zoo", "cave"]
FOODS = ["grass", "meat", "bread", "corn", "milk", "seeds", "fruit", "rice", "eggs", "honey", "fish", "apples"]


def pairs(count, seed=0, negatives=False):
    """`count` rows `{"query", "positive"[, "negative"]}`: a question about an animal, the sentence answering it."""
    rng = np.random.RandomState(seed)
    rows = []
    for _ in range(count):
        a, b = rng.choice(len(ANIMALS), 2, replace=False)
        place, food = PLACES[rng.randint(len(PLACES))], FOODS[rng.randint(len(FOODS))]
        if rng.rand() < 0.5:
            row = {"query": f"where does the {ANIMALS[a]} live", "positive": f"the {ANIMALS[a]} lives in the {place}"}
            negative = f"the {ANIMALS[b]} lives in the {place}"
        else:
            row = {"query": f"what does the {ANIMALS[a]} eat", "positive": f"the {ANIMALS[a]} eats {food}"}
            negative = f"the {ANIMALS[b]} eats {food}"
        if negatives:
            row["negative"] = negative
        rows.append(row)
    return rows


def write_task(directory, splits=(("train", 48), ("dev", 24)), seed=0, negatives=False, file_format="jsonl"):
    """Writes `<split>.jsonl` (or `.tsv`) files of `pairs` into `directory`; returns it as str."""
    os.makedirs(directory, exist_ok=True)
    for i, (split, count) in enumerate(splits):
        rows = pairs(count, seed + i, negatives)
        with open(os.path.join(directory, f"{split}.{file_format}"), "w") as f:
            for row in rows:
                f.write(json.dumps(row) + "\n" if file_format == "jsonl" else "\t".join(row.values()) + "\n")
    return str(directory)


# `python -c ST_ENCODE FOLDER TEXTS.json OUT.npy`: sentence-transformers' own vectors of the texts, in a process of
# its own (torch and TensorFlow apart).
ST_ENCODE = r"""
import json, sys
import numpy as np
from sentence_transformers import SentenceTransformer
folder, texts, out = sys.argv[1:]
model = SentenceTransformer(folder, device="cpu")
np.save(out, model.encode(json.load(open(texts))))
print(json.dumps({"max_seq_length": model.max_seq_length}))
"""

WORDS = sorted(set(" ".join(["where does the live what eat lives in eats"] + ANIMALS + PLACES + FOODS).split()))


def write_modules(folder, pooling="mean", normalize=True, max_seq_length=None, modules=None, dimension=32):
    """Writes (over) a sentence-transformers folder's own files: `modules.json` (Transformer -> Pooling (->
    Normalize), or `modules`, a list of class names), `1_Pooling/config.json` (`pooling`: a mode, or a dict of its
    keys; `dimension`: the vector's) and, with `max_seq_length`, `sentence_bert_config.json`."""
    names = modules or ["Transformer", "Pooling"] + (["Normalize"] if normalize else [])
    paths = {"Transformer": "", "Pooling": "1_Pooling", "Normalize": "2_Normalize"}
    entries = [{"idx": i, "name": str(i), "path": paths.get(name, f"{i}_{name}"),
                "type": f"sentence_transformers.models.{name}"} for i, name in enumerate(names)]
    with open(os.path.join(folder, "modules.json"), "w") as f:
        json.dump(entries, f, indent=2)
    os.makedirs(os.path.join(folder, "1_Pooling"), exist_ok=True)
    settings = pooling if isinstance(pooling, dict) else {
        f"pooling_mode_{key}": pooling == mode for key, mode in (
            ("cls_token", "cls"), ("mean_tokens", "mean"), ("max_tokens", "max"),
            ("mean_sqrt_len_tokens", "mean_sqrt_len_tokens"))}
    with open(os.path.join(folder, "1_Pooling", "config.json"), "w") as f:
        json.dump({"word_embedding_dimension": dimension, **settings}, f, indent=2)
    if max_seq_length is not None:
        with open(os.path.join(folder, "sentence_bert_config.json"), "w") as f:
            json.dump({"max_seq_length": max_seq_length, "do_lower_case": False}, f)
    return str(folder)


def tiny_sentence_transformer(folder, seed=0, **modules):
    """A sentence-transformers folder around a random 2-layer BERT (H 32, 64 positions) whose vocabulary holds
    `WORDS`; `modules`: `write_modules`' arguments (default mean pooling, normalised, no length)."""
    import torch
    import transformers

    os.makedirs(folder, exist_ok=True)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]
    with open(os.path.join(folder, "vocab.txt"), "w") as f:
        f.write("\n".join(vocab) + "\n")
    with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
        json.dump({"do_lower_case": True, "tokenizer_class": "BertTokenizer", "model_max_length": 64}, f)
    torch.manual_seed(seed)
    config = transformers.BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2,
                                     num_attention_heads=2, intermediate_size=64, max_position_embeddings=64)
    transformers.BertModel(config).save_pretrained(folder)
    return write_modules(folder, **modules)
