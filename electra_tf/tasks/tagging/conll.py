"""CoNLL-column files for token classification: reader, tag schemes, label sets, tasks.

A CoNLL file holds one word per line, its columns separated by whitespace
(`token POS chunk NER` in CoNLL-2003), a blank line after each sentence and a
`-DOCSTART-` line between documents. `read_conll` returns `Sentence`s whose
span tags are converted to IOB2, the one scheme the rest of the package reads:

- IOB1 (CoNLL-2003 as released): `I-X` everywhere, `B-X` only where an `X`
  span directly follows another `X` span.
- IOB2: every span starts with `B-X`.
- BIOES: `S-X` for one-word spans, `E-X` for the last word of longer ones.

`scheme="auto"` reads the scheme from the file (`detect_scheme`): BIOES when
it has an `S-` or `E-` tag, IOB1 when an `I-X` starts a span (after `O`,
another type, or at a sentence's start), else IOB2; one log line says which
and why.

Lines end at `\\n` (or `\\r\\n`) only; a word may hold `\\f`, U+2028 and the
other characters `str.splitlines` breaks at (`line_columns`). Errors name the
file and the 1-based line: a line whose column count differs from the file's
first data line, an empty file, a tag that is not of the scheme, a label
missing from the label set, a byte that is not UTF-8.
"""

import dataclasses
import functools
import itertools
import os
import re

import numpy as np
import tensorflow as tf
from absl import logging

from electra_tf.data.lines import NOT_LINE_ENDS, split_lines
from electra_tf.data.utf8 import decode_utf8
from electra_tf.finetuning.examples import split_file

SCHEMES = ("IOB1", "IOB2", "BIOES")
AUTO = "auto"  # the scheme the file is written in (`detect_scheme`)
_PREFIXES = {"IOB1": "BI", "IOB2": "BI", "BIOES": "BIES"}
DOCSTART = "-DOCSTART-"
_COLUMN_GAP = re.compile(f"[^\\S{NOT_LINE_ENDS}]+")  # whitespace, but what `str.splitlines` alone breaks at
_NOT_LINE_END = re.compile(f"[{NOT_LINE_ENDS}]")


@dataclasses.dataclass(frozen=True)
class Sentence:
    """One sentence of a CoNLL file.

    Args:
        words: tuple of str. The tokens.
        tags: tuple of str. One label per word (IOB2 for span tasks).
        path: str. The file it was read from.
        lines: tuple of int. The 1-based line of each word in `path`.
    """

    words: tuple
    tags: tuple
    path: str = ""
    lines: tuple = ()


def read_conll(path, token_column=0, label_column=-1, scheme="IOB2", limit=None):
    """Reads a CoNLL-column file into sentences.

    Blank lines end a sentence; `-DOCSTART-` lines end one too and are
    skipped. Every data line must have as many columns as the file's first
    data line.

    Args:
        path: str. The file (local or `gs://`).
        token_column: int. Column of the word (negative counts from the end).
        label_column: int. Column of the label; -1 is the last one.
        scheme: str or None. "IOB1", "IOB2" or "BIOES": span tags, checked and
            converted to IOB2 by `convert_scheme`. An `I-` tag starting a span
            in an "IOB2" file is ill-formed; it is read as `B-` (the span that
            conlleval and seqeval read) and a warning gives the count and the
            first line. "auto": the file's own (`detect_scheme`), logged.
            None: labels kept as written (POS tags).
        limit: int or None. Read (and check) the first `limit` sentences only (`--train_limit`,
            `--dev_limit`): the lines after them are not looked at.

    Returns:
        list of `Sentence`.

    Raises:
        FileNotFoundError, or ValueError naming the file and the line.

    Example:
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "eng.train")
    >>> _ = open(path, "w").write(
    ...     "-DOCSTART- -X- O\\n\\nEU NNP I-ORG\\nrejects VBZ O\\nGerman JJ I-MISC\\n\\n"
    ...     "Peter NNP I-PER\\nBlackburn NNP I-PER\\n")
    >>> from electra_tf.tasks.tagging.conll import read_conll
    >>> sentences = read_conll(path, scheme="IOB1")
    >>> [s.tags for s in sentences]
    [('B-ORG', 'O', 'B-MISC'), ('B-PER', 'I-PER')]
    >>> sentences[1].lines
    (7, 8)
    """
    if scheme is not None and scheme not in SCHEMES + (AUTO,):
        raise ValueError(f"`scheme` must be one of {SCHEMES + (AUTO,)} or None. Received: `scheme={scheme!r}`")
    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(f"CoNLL file not found: `path={path}`")
    with tf.io.gfile.GFile(path, "rb") as f:
        text = decode_utf8(f.read(), path)
    rows_of_sentences = list(itertools.islice(_sentence_rows(text, path), limit))
    if scheme == AUTO:
        scheme, evidence = detect_scheme(_tags_in_order(rows_of_sentences, label_column))
        logging.info("%s: span tags read as %s (%s).", path, scheme, evidence)
    sentences, repaired = [], []  # repaired: lines of I- tags that start a span
    for rows in rows_of_sentences:
        sentence, written = _sentence(rows, path, token_column, label_column, scheme)
        sentences.append(sentence)
        repaired += [line for line, old, new in zip(sentence.lines, written, sentence.tags)
                     if old[:2] == "I-" and new[:2] == "B-"]
    if not sentences:
        raise ValueError(f"{path}: no words (the file is empty or holds only blank and {DOCSTART} lines).")
    if scheme == "IOB2" and repaired:
        logging.warning(
            "%s: %d I- tag(s) start a span (ill-formed IOB2), first at line %d; read as B-, "
            "the span conlleval and seqeval read.", path, len(repaired), repaired[0],
        )
    return sentences


def detect_scheme(tags):
    """The span scheme tags are written in, and why: `(scheme, evidence)`.

    BIOES when an `S-X` or `E-X` tag is present; else IOB1 when an `I-X` starts
    a span (after `O`, after another type, or first in its sentence), as in the
    CoNLL-2003 release; else IOB2 (every span starts with `B-X`).

    Args:
        tags: iterable of `(line, tag)` in file order; a `(None, "O")` pair
            marks a sentence's start.

    Example:
    >>> from electra_tf.tasks.tagging.conll import detect_scheme
    >>> detect_scheme([(None, "O"), (1, "I-ORG"), (2, "O")])
    ('IOB1', 'I-ORG starts a span at line 1')
    >>> detect_scheme([(None, "O"), (1, "B-PER"), (2, "I-PER")])
    ('IOB2', 'every span starts with B-')
    >>> detect_scheme([(None, "O"), (4, "S-LOC")])
    ('BIOES', 'S-LOC at line 4')
    """
    previous, iob1 = "O", None
    for line, tag in tags:
        prefix, dash, type_ = tag.partition("-")
        if dash and prefix in ("S", "E"):
            return "BIOES", f"{tag} at line {line}"
        if iob1 is None and dash and prefix == "I" and previous[2:] != type_:
            iob1 = f"{tag} starts a span at line {line}"
        previous = tag if tag == "O" or dash else "O"
    return ("IOB1", iob1) if iob1 else ("IOB2", "every span starts with B-")


def _tags_in_order(rows_of_sentences, label_column):
    """`(line, tag)` of every word, a `(None, "O")` before each sentence (`detect_scheme`'s input)."""
    for rows in rows_of_sentences:
        yield None, "O"
        for line, columns in rows:
            if -len(columns) <= label_column < len(columns):  # else `_sentence` names the column
                yield line, columns[label_column]


def _sentence_rows(text, path):
    """Yields each sentence as a list of (line number, columns); checks column counts."""
    rows, num_columns, first_line = [], None, None
    # `str.split()` splits at the same whitespace as `_COLUMN_GAP` where none of NOT_LINE_ENDS occurs: one scan of
    # the text picks it for every line (CoNLL-2003's train file is read in 1.08 s instead of 1.31 s).
    columns_of = line_columns if _NOT_LINE_END.search(text) else str.split
    for number, line in enumerate(split_lines(text), start=1):
        columns = columns_of(line)
        if not columns or columns[0] == DOCSTART:
            if rows:
                yield rows
            rows = []
            continue
        if num_columns is None:
            num_columns, first_line = len(columns), number
        elif len(columns) != num_columns:
            raise ValueError(
                f"{path}:{number}: {len(columns)} columns, but the first data line "
                f"({first_line}) has {num_columns}. Received: {line!r}"
            )
        rows.append((number, columns))
    if rows:
        yield rows


def line_columns(line):
    """The columns of a CoNLL line, split at whitespace runs; none for a blank line.

    A line ends at `\\n` only (`data.lines`): `\\v`, `\\f`, U+2028 and the other
    characters `str.splitlines` breaks at are no line end and no column gap, but part of a word.
    """
    return [c for c in _COLUMN_GAP.split(line) if c] if line.strip() else []


def _sentence(rows, path, token_column, label_column, scheme):
    """A `Sentence` from its rows, tags checked against `scheme` and converted to IOB2,
    and the tags as written."""
    number, columns = rows[0]
    for name, column in (("token_column", token_column), ("label_column", label_column)):
        if not -len(columns) <= column < len(columns):
            raise ValueError(f"{path}:{number}: `{name}={column}` but the line has {len(columns)} columns.")
    words = tuple(c[token_column] for _, c in rows)
    tags = tuple(c[label_column] for _, c in rows)
    lines = tuple(n for n, _ in rows)
    if scheme is not None:
        for tag, line in zip(tags, lines):
            if not _is_tag(tag, scheme):
                raise ValueError(
                    f"{path}:{line}: {tag!r} is not a {scheme} tag (O, or "
                    f"{'/'.join(_PREFIXES[scheme])}-TYPE)."
                )
        return Sentence(words, tuple(convert_scheme(tags, scheme, "IOB2")), path, lines), tags
    return Sentence(words, tags, path, lines), tags


@functools.lru_cache(maxsize=4096)  # a file holds a few distinct tags, each checked once per word
def _is_tag(tag, scheme):
    prefix, dash, type_ = tag.partition("-")
    return tag == "O" or (len(prefix) == 1 and prefix in _PREFIXES[scheme] and dash and type_)


def convert_scheme(tags, source, target="IOB2"):
    """Converts one sentence's span tags between schemes.

    A tag starts a span when it is `B-X` or `S-X`, or when it is `I-X` or
    `E-X` and the tag before it is `O`, of another type, or (BIOES) an `E-`
    or `S-` tag. These are the spans conlleval and seqeval's default mode
    read, so conversion never changes the entities. An `I-X` that starts a
    span under IOB2 is ill-formed; it is converted to `B-X`, not rejected
    (`read_conll` warns). IOB1 and IOB2 therefore convert to IOB2 alike, and
    reading an IOB2 file as IOB1 changes nothing.

    Args:
        tags: sequence of str. `O` or `P-TYPE`, P among the source's prefixes.
        source: str. "IOB1", "IOB2" or "BIOES".
        target: str. "IOB2" or "BIOES".

    Returns:
        list of str.

    Example:
    >>> from electra_tf.tasks.tagging.conll import convert_scheme
    >>> convert_scheme(["I-PER", "I-PER", "B-PER", "O", "I-LOC"], "IOB1")
    ['B-PER', 'I-PER', 'B-PER', 'O', 'B-LOC']
    >>> convert_scheme(["S-LOC", "B-PER", "E-PER"], "BIOES")
    ['B-LOC', 'B-PER', 'I-PER']
    >>> convert_scheme(["B-LOC", "B-PER", "I-PER"], "IOB2", "BIOES")
    ['S-LOC', 'B-PER', 'E-PER']
    """
    if source not in SCHEMES:
        raise ValueError(f"`source` must be one of {SCHEMES}. Received: `source={source!r}`")
    if target not in ("IOB2", "BIOES"):
        raise ValueError(f"`target` must be 'IOB2' or 'BIOES'. Received: `target={target!r}`")
    iob2 = []
    previous_prefix, previous_type = "O", None
    for tag in tags:
        if not _is_tag(tag, source):
            raise ValueError(f"{tag!r} is not a {source} tag. Received: `tags={list(tags)}`")
        prefix, _, type_ = tag.partition("-")
        if prefix == "O":
            iob2.append("O")
        else:
            starts = prefix in "BS" or previous_prefix in "OES" or previous_type != type_
            iob2.append(("B-" if starts else "I-") + type_)
        previous_prefix, previous_type = prefix, type_
    return iob2 if target == "IOB2" else _iob2_to_bioes(iob2)


def _iob2_to_bioes(tags):
    """Well-formed IOB2 -> BIOES: a span's last tag becomes E- (S- when it is also its first)."""
    bioes = []
    for i, tag in enumerate(tags):
        continues = i + 1 < len(tags) and tags[i + 1] == "I-" + tag[2:]
        if tag == "O" or continues:
            bioes.append(tag)
        else:
            bioes.append(("S-" if tag[0] == "B" else "E-") + tag[2:])
    return bioes


def label_set(sentences, spans=False):
    """The labels of `sentences`: 'O' first (when present), then the others sorted.

    Args:
        sentences: list of `Sentence`.
        spans: bool. IOB2 span tags: add `B-X` and `I-X` for every type `X`
            seen, so a dev `I-X` is known though train only has one-word `X`.

    Example:
    >>> from electra_tf.tasks.tagging.conll import Sentence, label_set
    >>> label_set([Sentence(("a", "b", "c"), ("B-PER", "O", "B-LOC"))])
    ['O', 'B-LOC', 'B-PER']
    >>> label_set([Sentence(("a", "b", "c"), ("B-PER", "O", "B-LOC"))], spans=True)
    ['O', 'B-LOC', 'B-PER', 'I-LOC', 'I-PER']
    """
    labels = {tag for sentence in sentences for tag in sentence.tags}
    if spans:
        labels |= {prefix + tag[1:] for tag in labels - {"O"} for prefix in "BI"}
    return ["O"] * ("O" in labels) + sorted(labels - {"O"})


def read_labels(path):
    """Reads a `labels.txt`: one label per line, label i on line i + 1.

    Raises:
        FileNotFoundError, or ValueError for an empty file or a repeated label.
    """
    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(f"Labels file not found: `path={path}`")
    with tf.io.gfile.GFile(path, "rb") as f:
        labels = [line.strip() for line in decode_utf8(f.read(), path).split("\n") if line.strip()]
    if not labels:
        raise ValueError(f"{path}: no labels.")
    seen = set()
    for number, label in enumerate(labels, start=1):
        if label in seen:
            raise ValueError(f"{path}:{number}: label {label!r} repeated.")
        seen.add(label)
    return labels


def encode_labels(sentences, labels):
    """Label ids of every sentence.

    Args:
        sentences: list of `Sentence`.
        labels: list of str. The label set, in id order.

    Returns:
        list of int32 arrays, one id per word.

    Raises:
        ValueError naming the file and the line of a label not in `labels`.

    Example:
    >>> from electra_tf.tasks.tagging.conll import Sentence, encode_labels
    >>> encode_labels([Sentence(("a", "b"), ("B-PER", "O"))], ["O", "B-PER"])
    [array([1, 0], dtype=int32)]
    """
    index = {label: i for i, label in enumerate(labels)}
    ids = []
    for sentence in sentences:
        for tag, line in zip(sentence.tags, sentence.lines or [None] * len(sentence.tags)):
            if tag not in index:
                raise ValueError(
                    f"{sentence.path}:{line}: label {tag!r} is not in the label set "
                    f"({len(labels)} labels: {labels})."
                )
        ids.append(np.array([index[tag] for tag in sentence.tags], np.int32))
    return ids


@dataclasses.dataclass(frozen=True)
class ConllTask:
    """Where a CoNLL-column task's files and labels are.

    Args:
        name: str. Task name.
        splits: dict split -> tuple of file names; the first that exists in
            the data folder is read.
        token_column: int. Column of the word.
        label_column: int. Column of the label (-1: last).
        scheme: str or None. Span scheme of the files ("IOB1", "IOB2",
            "BIOES", or "auto": each file's own), None for labels read as written (POS).
        metric: str. Headline dev metric: "entity_f1" or "token_accuracy".
        labels_file: str. File of the data folder naming the labels, read
            when present; otherwise `label_set` of the train split (with
            `B-X` and `I-X` for every type of a span task).
    """

    name: str
    splits: dict
    token_column: int = 0
    label_column: int = -1
    scheme: str = "IOB2"
    metric: str = "entity_f1"
    labels_file: str = "labels.txt"

    def path(self, data_dir, split):
        """The file of `split` in `data_dir` (the first of its names that exists)."""
        if split not in self.splits:
            raise ValueError(f"Task {self.name!r} has splits {list(self.splits)}. Received: `split={split!r}`")
        path = split_file(data_dir, self.splits[split])
        if path is None:
            paths = [os.path.join(data_dir, name) for name in self.splits[split]]
            raise FileNotFoundError(f"Task {self.name!r}, split {split!r}: none of {paths} exists.")
        return path

    def read(self, data_dir, split, limit=None):
        """The sentences of `split` (the first `limit`), tags in IOB2 for span tasks."""
        return read_conll(self.path(data_dir, split), self.token_column, self.label_column, self.scheme, limit)

    def labels(self, data_dir, train_sentences=None):
        """`labels_file` when `data_dir` has it, else `label_set` of the train split."""
        path = os.path.join(data_dir, self.labels_file)
        if tf.io.gfile.exists(path):
            return read_labels(path)
        if train_sentences is None:
            train_sentences = self.read(data_dir, "train")
        return label_set(train_sentences, spans=self.scheme is not None)


_CONLL2003_SPLITS = {
    "train": ("eng.train", "train.txt"),
    "dev": ("eng.testa", "dev.txt", "valid.txt"),
    "test": ("eng.testb", "test.txt"),
}

# CoNLL-2003 English (`token POS chunk NER`). The shared task released IOB1; the copy
# that `shared/data/build/fetch_finetune_benchmarks.sh` fetches (train.txt, dev.txt) is
# already IOB2, which reads the same as IOB1 (see `convert_scheme`); each file's own is logged.
CONLL2003 = ConllTask("conll2003", _CONLL2003_SPLITS, label_column=-1, scheme=AUTO)
CONLL2003_CHUNK = ConllTask("conll2003_chunk", _CONLL2003_SPLITS, label_column=2, scheme=AUTO)
CONLL2003_POS = ConllTask(
    "conll2003_pos", _CONLL2003_SPLITS, label_column=1, scheme=None, metric="token_accuracy"
)
TASKS = {task.name: task for task in (CONLL2003, CONLL2003_CHUNK, CONLL2003_POS)}
