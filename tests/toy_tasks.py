"""Toy task folders that tests of several folders train on: SQuAD 1.1 (`write_toy_squad`), CoNLL-2003
(`write_conll`; `CONLL_IOB1` as CoNLL-2003 is released), embedding pairs (`write_toy_pairs`), and tags read
without the package's windows (`independent_dev_tags`). Import as `from toy_tasks import ...` (tests/ is on
the path)."""

import json
import os

import numpy as np

CITIES = ["paris", "london", "berlin", "rome", "madrid", "vienna"]

PEOPLE = ["john", "mary", "peter", "anna", "paul", "lisa"]

SQUAD_FILLER = ["the", "weather", "was", "good", "and", "then", "we", "saw", "a", "big", "house"]


def write_toy_squad(directory, articles=(("train", 6), ("dev", 2)), questions=4, seed=0):
    """Toy SQuAD 1.1: "<person> lives in <city>." sentences among filler; "Where does <person> live?"."""
    rng = np.random.RandomState(seed)
    os.makedirs(directory, exist_ok=True)
    for split, count in articles:
        data = []
        for a in range(count):
            people = rng.permutation(PEOPLE)[:questions]
            parts, qas = [], []
            for i, person in enumerate(people):
                filler = rng.randint(0, len(SQUAD_FILLER), rng.randint(2, 6))
                parts.append(" ".join(SQUAD_FILLER[j] for j in filler) + ".")
                city = CITIES[rng.randint(len(CITIES))]
                sentence = f"{person.capitalize()} lives in {city.capitalize()}."
                start = len(" ".join(parts)) + 1 + sentence.index(city.capitalize())
                parts.append(sentence)
                qas.append({"id": f"{split}{a}_{i}", "question": f"Where does {person.capitalize()} live?",
                            "answers": [{"text": city.capitalize(), "answer_start": start}]})
            context = " ".join(parts)
            for qa in qas:
                text, start = qa["answers"][0]["text"], qa["answers"][0]["answer_start"]
                assert context[start:start + len(text)] == text
            data.append({"title": f"{split}{a}", "paragraphs": [{"context": context, "qas": qas}]})
        with open(os.path.join(directory, f"{split}.json"), "w") as f:
            json.dump({"version": "1.1", "data": data}, f)
    return str(directory)


NAMES = {"john": "PER", "mary": "PER", "paris": "LOC", "london": "LOC", "google": "ORG"}

CONLL_FILLER = ["the", "went", "to", "saw", "a", "big", "city", "and", "in", "with"]


def write_conll(directory, splits=(("train", 160), ("dev", 40)), seed=0, columns="{w} NN {t}"):
    """Toy NER: capitalised names are entities (two-word ones for 'new york'), the rest O."""
    rng = np.random.RandomState(seed)
    os.makedirs(directory, exist_ok=True)
    for split, count in splits:
        blocks = []
        for _ in range(count):
            rows = []
            for _ in range(rng.randint(3, 10)):
                r = rng.rand()
                if r < 0.25:
                    name = list(NAMES)[rng.randint(len(NAMES))]
                    rows.append(columns.format(w=name.capitalize(), t="B-" + NAMES[name]))
                elif r < 0.32:
                    rows += [columns.format(w="New", t="B-LOC"), columns.format(w="York", t="I-LOC")]
                else:
                    rows.append(columns.format(w=CONLL_FILLER[rng.randint(len(CONLL_FILLER))], t="O"))
            blocks.append("\n".join(rows))
        with open(os.path.join(directory, f"{split}.txt"), "w") as f:
            f.write("-DOCSTART- -X- O\n\n" + "\n\n".join(blocks) + "\n")
    return str(directory)


def independent_dev_tags(model, vocab_file, sentences, labels):
    """Dev tags without the package's windows or word_predictions: one row per sentence,
    [CLS] + each word's pieces + [SEP], the tag read at each word's first piece."""
    from electra_tf.data.tokenizer import WordPieceTokenizer

    tokenizer = WordPieceTokenizer(vocab_file)
    tags = []
    for sentence in sentences:
        pieces = [tokenizer.tokenize([w]).flat_values.numpy().tolist() or [tokenizer.unk_id]
                  for w in sentence.words]
        ids = [tokenizer.cls_id] + [p for word in pieces for p in word] + [tokenizer.sep_id]
        firsts = np.cumsum([0] + [len(word) for word in pieces[:-1]]) + 1
        x = np.array([ids], np.int32)
        logits = model({"token_ids": x, "segment_ids": 0 * x, "padding_mask": 1 + 0 * x}, training=False)
        tags.append([labels[i] for i in logits.numpy()[0, firsts].argmax(-1)])
    return tags


# CoNLL-2003 as released: IOB1 (I- everywhere, B- only between two spans of one type).
CONLL_IOB1 = ("-DOCSTART- -X- O O\n\n"
              "Peter NNP I-NP I-PER\nBlackburn NNP I-NP I-PER\nlives VBZ I-VP O\nin IN I-PP O\n"
              "Zurich NNP I-NP I-LOC\n\n"
              "Paris NNP I-NP I-LOC\nBerlin NNP I-NP B-LOC\nand CC O O\nAnna NNP I-NP I-PER\nmet VBD I-VP O\n"
              "Bob NNP I-NP I-PER\nSmith NNP I-NP I-PER\n")


def write_toy_pairs(directory, count=16):
    """Toy embedding pairs (JSON Lines): a question about a word, the sentence that answers it."""
    os.makedirs(directory, exist_ok=True)
    for split in ("train", "dev"):
        with open(os.path.join(directory, f"{split}.jsonl"), "w") as f:
            for i in range(count):
                f.write(json.dumps({"query": f"where is item {i}", "positive": f"item {i} is in box {i % 5}"}) + "\n")
    return str(directory)
