"""Multiple-choice files: the released SWAG CSVs and a generic JSON Lines layout, read as `Question`s.

SWAG (`--task swag`; Zellers et al. 2018, as released: `train.csv`, `val.csv`,
`test.csv`) has the columns `sent1` (the context), `sent2` (the start of the
next sentence), `ending0` .. `ending3` and `label` (the index of the true
ending; empty or absent in the unlabelled test file). Its choices are packed as
HF's `run_swag.py` packs them: `sent1` as the first segment, `sent2 ending_i` as
the second.

JSON Lines (any task name with `--task_kind multiple_choice`): one object per
line with `"choices"` (a list of strings, two or more), `"context"` and/or
`"question"` (a context and a question: `[CLS] context [SEP] question choice
[SEP]`; only a question: `[CLS] question [SEP] choice [SEP]`), and the gold
answer as `"answer"` or `"label"` (the choice's index), absent for unlabelled
data. SWAG's column names (`sent1`, `sent2`, `ending0`...) are read too.

Lines end at `\\n` (or `\\r\\n`) only (`data.lines`); a CSV record is named by
the line it starts on. Errors name the file and the line: a missing field,
fewer than two choices or more than `MAX_CHOICES` (64), an empty choice, an
answer index out of range, a line that is not JSON, a CSV quote never closed
(the line it opens on).

Example:
>>> import os, tempfile
>>> from electra_tf.tasks.multiple_choice.data import read_questions
>>> path = os.path.join(tempfile.mkdtemp(), "dev.jsonl")
>>> _ = open(path, "w").write('{"question": "Pick the animal.", "choices": ["cat", "car"], "answer": 0}\\n')
>>> read_questions(path)
[Question(context='Pick the animal.', question='', choices=('cat', 'car'), label=0, line=1)]
"""

import dataclasses
import re
import typing

import tensorflow as tf

from electra_tf.data.lines import split_lines, table_rows
from electra_tf.data.utf8 import decode_utf8
from electra_tf.finetuning.examples import Example, each_line, json_object

ENDING = re.compile(r"ending(\d+)$")
# Choices a question may have: every choice is one sequence through the encoder, and a batch holds
# its widest question's count of sequences per question (SWAG, RACE, ARC: 4 or 5).
MAX_CHOICES = 64
# Split files in `--data_dir`, the first that exists (SWAG's own names first for `--task swag`).
SPLIT_FILES = {
    "train": ("train.jsonl", "train.csv"),
    "dev": ("dev.jsonl", "val.jsonl", "dev.csv", "val.csv"),
    "test": ("test.jsonl", "test.csv"),
}


@dataclasses.dataclass(frozen=True)
class Question:
    """A context, the question put before each choice ('' for none), the choices, the gold index (or None)."""

    context: str
    question: str
    choices: tuple
    label: typing.Optional[int] = None
    line: int = 0

    def second_segments(self):
        """The text packed after the context for each choice: `question choice` (SWAG: `sent2 ending`)."""
        return [f"{self.question} {choice}".strip() for choice in self.choices]


def read_questions(path, name=None, text=None, limit=None, file_format=None):
    """The `Question`s of a SWAG CSV or JSON Lines file, in file order.

    Args:
        path: str. The file.
        name: str or None. How errors name the file (default `path`; `<stdin>` for piped input).
        text: str or None. The file's text, when already read.
        limit: int or None. Stop after this many questions.
        file_format: "csv", "jsonl" or None (by the extension: `.csv` is a SWAG CSV).
    """
    name = name or path
    if text is None:
        with tf.io.gfile.GFile(path, "rb") as f:
            text = decode_utf8(f.read(), name)
    text = text.lstrip("\ufeff")
    file_format = file_format or ("csv" if path.lower().endswith(".csv") else "jsonl")
    reader = _read_csv if file_format == "csv" else _read_jsonl
    questions = []
    for question in reader(text, name):
        questions.append(question)
        if limit and len(questions) >= limit:
            break
    if not questions:
        raise ValueError(f"{name}: no questions (the file is empty).")
    return questions


def _read_csv(text, name):
    rows = (row for row in table_rows(name, text, ",") if row[1])  # a blank line is no question
    header_line, columns = next(rows, (1, []))
    endings = sorted((int(m.group(1)), c) for c in columns if (m := ENDING.match(c)))
    missing = [c for c in ("sent1", "sent2") if c not in columns]
    if missing or len(endings) < 2:
        raise ValueError(f"{name}:{header_line}: a SWAG CSV needs the columns sent1, sent2 and ending0, ending1, ...; "
                         f"the header has {columns}.")
    for line, fields in rows:
        if len(fields) != len(columns):
            more = "more" if len(fields) > len(columns) else "fewer"
            raise ValueError(f"{name}:{line}: {more} fields than the header's {len(columns)}.")
        row = dict(zip(columns, fields))
        choices = [row[c] for _, c in endings]
        label = row.get("label")
        yield _question(row["sent1"], row["sent2"], choices, label if label not in (None, "") else None,
                        name, line)


def _read_jsonl(text, name):
    for line, raw in enumerate(split_lines(text), start=1):
        if raw.strip():
            yield question_of_record(json_object(name, line, raw), name, line)


def question_of_record(record, name, line):
    """The `Question` of one JSON object (the generic layout, or SWAG's column names)."""
    if "choices" not in record and "ending0" in record:  # a SWAG row as JSON
        choices = [record[k] for k in sorted((k for k in record if ENDING.match(k)), key=lambda k: int(k[6:]))]
        return _question(record.get("sent1", ""), record.get("sent2", ""), choices, record.get("label"), name, line)
    choices = record.get("choices")
    if not isinstance(choices, list):
        raise ValueError(f"{name}:{line}: no \"choices\" list (keys: {sorted(record)}).")
    context, question = record.get("context"), record.get("question")
    for key, value in (("context", context), ("question", question)):
        if value is not None and not isinstance(value, str):
            raise ValueError(f"{name}:{line}: \"{key}\" must be a string, found {type(value).__name__}.")
    if not (context or question):
        raise ValueError(f"{name}:{line}: no \"context\" or \"question\" (keys: {sorted(record)}).")
    label = record.get("answer", record.get("label"))
    if context:
        return _question(context, question or "", choices, label, name, line)
    return _question(question, "", choices, label, name, line)


def _question(context, question, choices, label, name, line):
    if len(choices) < 2:
        raise ValueError(f"{name}:{line}: {len(choices)} choice(s); a question needs two or more.")
    if len(choices) > MAX_CHOICES:
        raise ValueError(f"{name}:{line}: {len(choices)} choices; a question may have at most {MAX_CHOICES} (each "
                         "choice is one sequence through the encoder, every question of its batch padded to it).")
    for i, choice in enumerate(choices):
        if not isinstance(choice, str) or not choice.strip():
            raise ValueError(f"{name}:{line}: choice {i} is {choice!r}: every choice must be a non-empty text.")
    if label is not None:
        label = _label(label, len(choices), name, line)
    return Question(context, question, tuple(choices), label, line)


def _label(value, num_choices, name, line):
    if isinstance(value, str) and re.fullmatch(r"\s*\d+\s*", value):
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < num_choices:
        raise ValueError(f"{name}:{line}: answer {value!r} is not the index of one of its {num_choices} choices "
                         f"(0 to {num_choices - 1}).")
    return value


# --- predict's input files ------------------------------------------------------------------------


def read_inputs(name, text, input_format):
    """`predict`'s examples of an input file (`MultipleChoiceKind.read_examples`): a SWAG CSV or JSON Lines
    (`{"context"/"question", "choices", "answer"}`); answers are scored."""
    if input_format == "csv":
        return [_example(q) for q in read_questions(name, text=text, file_format="csv")]
    return each_line(name, text, lambda line, raw: _example(question_of_record(json_object(name, line, raw),
                                                                               name, line)))


def _example(question):
    """The `Example` of a `Question`: what the served `serving_default` takes, its gold index."""
    return Example({"context": question.context, "question": question.question, "choices": list(question.choices)},
                   question.label, question.line)
