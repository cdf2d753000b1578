"""Toy embedding task files for the tests: questions about animals and the sentences that answer them."""

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
