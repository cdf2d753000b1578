"""Embedding task files: (query, positive[, negative]) rows, from JSON Lines or a TSV, read as `Pair`s.

`--data_dir` holds `train`, `dev` and optionally `test`, each `<split>.jsonl` or `<split>.tsv`
(the first that exists):

    train.jsonl  {"query": "how do cats purr", "positive": "Cats purr by ...", "negative": "Dogs bark ..."}
    train.tsv    query<TAB>positive[<TAB>negative]     (no header)

`negative`, a hard negative, is optional; within one file every row has one or none does.
Lines end at `\\n` (or `\\r\\n`) only (`data.lines`); a blank line is skipped. Errors name the
file and the line: not JSON, a missing or empty field, a field that is not a string, a TSV
line of the wrong width, a negative on some rows only. A TSV with a header line
(`query<TAB>positive`) or a column that is a number on every line but the first (a
classification file's labels) is refused, naming the file.

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

NAMES = ("query", "positive", "negative")  # a row's texts, in a TSV's column order
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
    if not path.lower().endswith(".jsonl"):
        _check_table(pairs, path)
    with_negative = [p.negative is not None for p in pairs]
    if any(with_negative) and not all(with_negative):
        odd = pairs[with_negative.index(not with_negative[0])]
        raise ValueError(f"{path}:{odd.line}: {'no' if odd.negative is None else 'a'} negative, but line "
                         f"{pairs[0].line} has {'one' if with_negative[0] else 'none'}: give every row a hard "
                         "negative or none.")
    return pairs


def _check_table(pairs, path):
    """Refuses a TSV that is not (query, positive[, negative]) rows: a header line, or a column that is a number on
    every line but the first (a label column: a classification file)."""
    first = pairs[0]
    cells = [first.query, first.positive] + ([first.negative] if first.negative is not None else [])
    if [cell.strip().lower() for cell in cells] == list(NAMES[:len(cells)]):
        raise ValueError(f"{path}:{first.line}: a header line ({', '.join(cells)}); an embedding .tsv has none, "
                         "each line is query<TAB>positive[<TAB>negative]. Remove it.")
    rest = pairs[1:]
    for i, name in enumerate(NAMES[:len(cells)]):
        values = [getattr(p, name) for p in rest]
        if len(values) >= 2 and all(_number(v) for v in values):
            raise ValueError(
                f"{path}: column {i + 1} (the {name}) is a number on every line from line {rest[0].line} on "
                f"({', '.join(dict.fromkeys(v.strip() for v in values[:50]))}): a label column, not texts. An "
                "embedding .tsv is query<TAB>positive[<TAB>negative] with no header; a labelled sentence file is "
                "for --task_kind classification.")


def _number(text):
    try:
        float(text)
    except ValueError:
        return False
    return True


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
        values = [_text(cell, NAMES[i], path, line) for i, cell in enumerate(row)]
        yield Pair(values[0], values[1], values[2] if len(values) == 3 else None, line)
