"""What a task kind's `predict` reader returns (`Example`) and its formatter (`Prediction`), how it is asked to
read (`ReadOptions`), and the line, JSON, column and split-file helpers the readers share.

Lines end at `\\n` (or `\\r\\n`) only, as `data.lines` splits them. Every example of a
line-based input (TSV/CSV, CoNLL, JSON Lines, text) knows the 1-based line it starts
on (CoNLL: its first word's); SQuAD JSON examples have none (their question `id`
names them). Where one line is one example (TSV/CSV, JSON Lines, text), a blank
line is an `Example` too, with `skipped="blank line"` and no inputs, so the
output keeps one record per line (`each_line`). Errors name the file (`<stdin>`
for stdin) and the line.

Example:
>>> from electra_tf.finetuning.examples import Example, each_line
>>> [(e.inputs, e.line, e.skipped) for e in each_line("x.txt", "a\\n\\nb", lambda line, raw: Example({"text": raw}, line=line))]
[({'text': 'a'}, 1, None), (None, 2, 'blank line'), ({'text': 'b'}, 3, None)]
"""

import dataclasses
import json
import os
import re
import typing

import tensorflow as tf

from electra_tf import atomic
from electra_tf.config_fields import Config
from electra_tf.config_fields import field as config_field
from electra_tf.data.lines import split_lines
from electra_tf.data.utf8 import check_json_escapes

STDIN = "<stdin>"
BLANK = "blank line"
SERVING_DEFAULT = "serving_default"


@dataclasses.dataclass
class Example:
    """One example to predict: what goes to the serving signature, its gold label, where it is.

    Args:
        inputs: dict signature argument -> string (or a list of strings, padded with "" across a batch),
            None for a skipped line.
        gold: the gold label in the kind's own form (None: unlabelled).
        line: int or None. The 1-based line it starts on (None: not line-based, e.g. SQuAD JSON).
        signature: str. The serving signature that reads it.
        id: str or None. The example's own id (QA question id), written with its prediction.
        words: list of str or None. Tagging input given as words, scored word by word.
        skipped: str or None. Why a line is no example ("blank line").
    """

    inputs: typing.Optional[dict]
    gold: typing.Any = None
    line: typing.Optional[int] = 0
    signature: str = SERVING_DEFAULT
    id: typing.Optional[str] = None
    words: typing.Optional[list] = None
    skipped: typing.Optional[str] = None


@dataclasses.dataclass
class Prediction:
    """A kind's prediction for one example: `output`, its JSON Lines record (the example's `line` is added
    before it), and `extra`, what scoring needs beside it (tagging: the start of each served word)."""

    output: dict
    extra: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class ReadOptions(Config):
    """How to read the input (the `predict` flags every reader of columns shares: TSV/CSV columns, a header). A
    task kind that reads more declares its own (`TaskKind.PredictOptions`), which the registry adds
    (`electra_tf.tasks.ReadOptions`)."""

    text_a_column: typing.Optional[str] = config_field(
        None, "TSV/CSV: column of the (first) text (header name or index).")
    text_b_column: typing.Optional[str] = config_field(None, "TSV/CSV: column of the second text (pair tasks).")
    label_column: typing.Optional[str] = config_field(
        None, "TSV/CSV: gold label column; CoNLL: tag column (default -1).")
    header: bool = config_field(True, "TSV/CSV: the first line names the columns.")


def each_line(name, text, parse):
    """`parse(line, raw)` of every non-blank line of `text`, a skipped `Example` for each blank one."""
    return [Example(None, line=line, skipped=BLANK) if not raw.strip() else parse(line, raw)
            for line, raw in enumerate(split_lines(text), start=1)]


def json_object(name, line, raw):
    """The JSON object on one line; an error naming the file and line otherwise (an escape of a lone
    surrogate too: `utf8.check_json_escapes`)."""
    try:
        record = json.loads(raw)
    except json.JSONDecodeError as e:
        raise ValueError(f"{name}:{line}: not valid JSON ({e.msg} at column {e.colno}).") from None
    if not isinstance(record, dict):
        raise ValueError(f"{name}:{line}: expected a JSON object, found {type(record).__name__}.")
    check_json_escapes(raw, name, line)
    return record


def field(record, keys, name, line, required=True, value_type=str):
    """The value of the first of `keys` in a JSON `record`, checked to be a `value_type`; None if absent and optional."""
    for key in keys:
        if key in record:
            value = record[key]
            if not isinstance(value, value_type):
                raise ValueError(f"{name}:{line}: \"{key}\" must be a {value_type.__name__}, found "
                                 f"{type(value).__name__}.")
            return value
    if required:
        raise ValueError(f"{name}:{line}: no \"{keys[0]}\" field (keys: {sorted(record)}).")
    return None


def column_index(name, header, value, flag):
    """A column given by header name or index (`--flag`)."""
    if re.fullmatch(r"-?\d+", str(value)):
        return int(value)
    if header is None or value not in header:
        raise ValueError(f"{name}:1: --{flag}={value!r} names no column; the header has {header}.")
    return header.index(value)


def spooled(name, text, read):
    """`read(path)` on the input: a real file, or stdin's text in a temporary one (errors name `<stdin>`)."""
    if name != STDIN:
        return read(name)
    with atomic.scratch_file("stdin", suffix=".txt", mode="w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        try:
            return read(f.name)
        except ValueError as e:
            raise ValueError(str(e).replace(f.name, STDIN)) from None


def split_file(data_dir, names):
    """The first of `names` (a split's file names, preferred first) that exists in `data_dir`, or None.

    Example:
    >>> import os, tempfile
    >>> from electra_tf.finetuning.examples import split_file
    >>> data_dir = tempfile.mkdtemp()
    >>> _ = open(os.path.join(data_dir, "dev.tsv"), "w").write("q\\tp\\n")
    >>> os.path.basename(split_file(data_dir, ("dev.jsonl", "dev.tsv"))), split_file(data_dir, ("test.jsonl",))
    ('dev.tsv', None)
    """
    for name in names:
        path = os.path.join(data_dir, name)
        if tf.io.gfile.exists(path):
            return path
    return None


def required_split_file(data_dir, split, names, task):
    """`split_file`, or an error naming the task, the folder and the names looked for when none exists."""
    path = split_file(data_dir, names)
    if path is None:
        raise FileNotFoundError(f"No {split} split of task {task!r} in {data_dir} (looked for {', '.join(names)}).")
    return path
