"""Embedding task files: (query, positive[, negative]) rows, from JSON Lines or a TSV, read as `Pair`s.

`--data_dir` holds `train`, `dev` and optionally `test`, each `<split>.jsonl` or `<split>.tsv`
(the first that exists):

    train.jsonl  {"query": "how do cats purr", "positive": "Cats purr by ...", "negative": "Dogs bark ..."}
    train.tsv    query<TAB>positive[<TAB>negative]     (no header)

`negative`, a hard negative, is optional; within one file every row has one or none does.
Lines end at `\\n` (or `\\r\\n`) only (`data.lines`); a blank line is skipped. Errors name the
file and the line: not JSON, a missing or empty field, a field that is not a string, a TSV
line of the wrong width, a negative on some rows only.

Example:
>>> import os, tempfile
>>> from electra_tf.tasks.embedding.data import read_pairs
>>> path = os.path.join(tempfile.mkdtemp(), "dev.tsv")
>>> _ = open(path, "w").write("how do cats purr\\tCats purr with their larynx.\\n")
>>> read_pairs(path)
[Pair(query='how do cats purr', positive='Cats purr with their larynx.', negative=None, line=1)]
"""

import dataclasses
import typing

import tensorflow as tf

from electra_tf.data.lines import split_lines, table_rows
from electra_tf.data.utf8 import decode_utf8
from electra_tf.finetuning.examples import field, json_object

SPLIT_FILES = {split: (f"{split}.jsonl", f"{split}.tsv") for split in ("train", "dev", "test")}


@dataclasses.dataclass(frozen=True)
class Pair:
    """A query, the passage that answers it, an optional hard negative, its 1-based line."""

    query: str
    positive: str
    negative: typing.Optional[str] = None
    line: int = 0


def read_pairs(path, limit=None):
    """The `Pair`s of a JSON Lines (`.jsonl`) or TSV file, in file order; `limit`: stop after that many."""
    with tf.io.gfile.GFile(path, "rb") as f:
        text = decode_utf8(f.read(), path).lstrip("\ufeff")
    rows = _jsonl(text, path) if path.lower().endswith(".jsonl") else _tsv(text, path)
    pairs = []
    for pair in rows:
        pairs.append(pair)
        if limit and len(pairs) >= limit:
            break
    if not pairs:
        raise ValueError(f"{path}: no rows (the file is empty).")
    with_negative = [p.negative is not None for p in pairs]
    if any(with_negative) and not all(with_negative):
        odd = pairs[with_negative.index(not with_negative[0])]
        raise ValueError(f"{path}:{odd.line}: {'no' if odd.negative is None else 'a'} negative, but line "
                         f"{pairs[0].line} has {'one' if with_negative[0] else 'none'}: give every row a hard "
                         "negative or none.")
    return pairs


def _text(value, key, path, line):
    if not value.strip():
        raise ValueError(f"{path}:{line}: \"{key}\" is empty.")
    return value


def _jsonl(text, path):
    for line, raw in enumerate(split_lines(text), start=1):
        if not raw.strip():
            continue
        record = json_object(path, line, raw)
        query = _text(field(record, ("query",), path, line), "query", path, line)
        positive = _text(field(record, ("positive",), path, line), "positive", path, line)
        negative = field(record, ("negative",), path, line, required=False)
        if negative is not None:
            negative = _text(negative, "negative", path, line)
        yield Pair(query, positive, negative, line)


def _tsv(text, path):
    for line, row in table_rows(path, text, "\t"):
        if not row or not any(cell.strip() for cell in row):
            continue
        if len(row) not in (2, 3):
            raise ValueError(f"{path}:{line}: {len(row)} fields; a row is query<TAB>positive[<TAB>negative] "
                             f"(no header). Received: {row!r:.200}")
        names = ("query", "positive", "negative")
        values = [_text(cell, names[i], path, line) for i, cell in enumerate(row)]
        yield Pair(values[0], values[1], values[2] if len(values) == 3 else None, line)
