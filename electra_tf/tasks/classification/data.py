"""Fine-tuning task readers: GLUE in its released layouts, and any TSV/CSV.

A task is a `TaskSpec`: which file holds each split, which column holds each
text and the label, and the label vocabulary. `read_examples(spec, data_dir,
split)` returns a list of `Example`s and raises errors that name the file and
the line (lines end at `\\n` or `\\r\\n` only, `data.lines`; a CSV record whose
quoted field spans lines is named by its first). GLUE layouts follow the files of the GLUE download
(`gluebenchmark.com`); MNLI's dev split is `dev_matched`, with
`dev_mismatched` as a second dev split.

The project's own tasks (`../shared/data/tasks/<name>/`) have the header
`sentence\\tlabel`, integer labels, and `labels.txt` naming label i on line i:
`generic_task(name)` or `load_task(name, data_dir)` reads them.
"""

import dataclasses
import os
import re
import typing

import tensorflow as tf
from absl import logging

from electra_tf.data.lines import table_rows
from electra_tf.data.utf8 import decode_utf8
from electra_tf.finetuning.examples import BLANK, Example as InputExample, column_index, each_line, field, json_object

Column = typing.Union[int, str]  # an index, or a header name


@dataclasses.dataclass(frozen=True)
class Example:
    """One text (or text pair) and its label (an int id, a float score, or None)."""

    text_a: str
    text_b: typing.Optional[str] = None
    label: typing.Union[int, float, None] = None


@dataclasses.dataclass
class TaskSpec:
    """Where a task's texts and labels are.

    Args:
        name: str. Task name.
        text_a: int or str. Column of the first text (index, or header name).
        text_b: int, str or None. Column of the second text, None for single texts.
        label: int or str. Column of the label.
        labels: list of str or None. Label values as written in the files, in
            id order; None for regression (float labels).
        label_names: list of str or None. Display names (default: `labels`).
            A file may hold either the value or the name.
        header: bool. Whether the first line is a header.
        splits: dict split name -> file name.
        metric: str. The headline dev metric ("accuracy", "f1", "mcc",
            "spearman", "pearson").
        delimiter: str. "\\t" (TSV, no quoting) or "," (CSV, standard quoting).
        skip_malformed: bool. Skip (and count) lines with too few fields
            instead of raising (GLUE's QQP has a few).
    """

    name: str
    text_a: Column
    text_b: typing.Optional[Column] = None
    label: Column = "label"
    labels: typing.Optional[list] = None
    label_names: typing.Optional[list] = None
    header: bool = True
    splits: dict = dataclasses.field(
        default_factory=lambda: {"train": "train.tsv", "dev": "dev.tsv", "test": "test.tsv"}
    )
    metric: str = "accuracy"
    delimiter: str = "\t"
    skip_malformed: bool = False

    @property
    def is_regression(self):
        return self.labels is None

    @property
    def num_labels(self):
        return 1 if self.is_regression else len(self.labels)

    @property
    def names(self):
        return list(self.label_names or self.labels or [])


_BINARY = ["0", "1"]
_NLI2 = ["entailment", "not_entailment"]

# GLUE in its released layouts. Test files have no label column.
GLUE_TASKS = {
    "cola": TaskSpec(
        "cola", text_a=3, label=1, labels=_BINARY, header=False, metric="mcc",
        label_names=["unacceptable", "acceptable"],
    ),
    "sst-2": TaskSpec("sst-2", text_a="sentence", label="label", labels=_BINARY,
                      label_names=["negative", "positive"]),
    "mrpc": TaskSpec(
        "mrpc", text_a="#1 String", text_b="#2 String", label="Quality", labels=_BINARY,
        metric="accuracy",
    ),
    "sts-b": TaskSpec(
        "sts-b", text_a="sentence1", text_b="sentence2", label="score", labels=None,
        metric="spearman",
    ),
    "qqp": TaskSpec(
        "qqp", text_a="question1", text_b="question2", label="is_duplicate", labels=_BINARY,
        skip_malformed=True,
    ),
    "mnli": TaskSpec(
        "mnli", text_a="sentence1", text_b="sentence2", label="gold_label",
        labels=["contradiction", "entailment", "neutral"],
        splits={
            "train": "train.tsv",
            "dev": "dev_matched.tsv",
            "dev_mismatched": "dev_mismatched.tsv",
            "test": "test_matched.tsv",
            "test_mismatched": "test_mismatched.tsv",
        },
    ),
    "qnli": TaskSpec("qnli", text_a="question", text_b="sentence", label="label", labels=_NLI2),
    "rte": TaskSpec("rte", text_a="sentence1", text_b="sentence2", label="label", labels=_NLI2),
    "wnli": TaskSpec("wnli", text_a="sentence1", text_b="sentence2", label="label", labels=_BINARY),
}
_ALIASES = {"sst2": "sst-2", "stsb": "sts-b", "sts": "sts-b", "mnli-m": "mnli", "mnli_matched": "mnli"}


def generic_task(
    name="task",
    data_dir=None,
    text_a_column="sentence",
    text_b_column=None,
    label_column="label",
    labels=None,
    regression=False,
    file_format="tsv",
    metric=None,
):
    """A `TaskSpec` for any TSV/CSV with a header (the project's `tasks/*` layout by default).

    Label vocabulary, in order of preference: `labels`; else `labels.txt` in
    `data_dir` (one name per line; the files may hold the id `i` or the name);
    else the sorted distinct labels of `train`.

    Args:
        name: str. Task name.
        data_dir: str or None. Folder with `train/dev/test.<file_format>`.
        text_a_column, text_b_column, label_column: str or int. Columns.
        labels: list of str or None. Label values in id order.
        regression: bool. Float labels (metric Pearson/Spearman).
        file_format: str. "tsv" or "csv".
        metric: str or None. Headline metric (default accuracy, or spearman).

    Example:
        ```python
        import os

        from electra_tf.tasks.classification.data import generic_task, read_examples

        os.makedirs("movie_polarity")
        with open("movie_polarity/train.tsv", "w") as f:
            f.write("sentence\\tlabel\\na fine film\\tpositive\\na dull film\\tnegative\\n")
        spec = generic_task("movie_polarity", "movie_polarity")
        spec.names  # ['negative', 'positive']: the sorted labels of train (no labels.txt here)
        read_examples(spec, "movie_polarity")[0].label  # 1
        ```
    """
    if file_format not in ("tsv", "csv"):
        raise ValueError(f"`file_format` must be 'tsv' or 'csv'. Received: `file_format={file_format!r}`")
    splits = {s: f"{s}.{file_format}" for s in ("train", "dev", "test")}
    label_names = None
    if not regression and labels is None and data_dir is not None:
        labels_file = os.path.join(data_dir, "labels.txt")
        if tf.io.gfile.exists(labels_file):
            with tf.io.gfile.GFile(labels_file, "rb") as f:
                label_names = [line.strip() for line in decode_utf8(f.read(), labels_file).split("\n") if line.strip()]
            labels = [str(i) for i in range(len(label_names))]
    spec = TaskSpec(
        name=name,
        text_a=text_a_column,
        text_b=text_b_column,
        label=label_column,
        labels=None if regression else labels,
        label_names=label_names,
        splits=splits,
        metric=metric or ("spearman" if regression else "accuracy"),
        delimiter="\t" if file_format == "tsv" else ",",
    )
    if not regression and spec.labels is None:
        if data_dir is None:
            raise ValueError(f"Task {name!r}: give `labels`, or a `data_dir` to read them from.")
        values = {row[1] for row in _rows(spec, data_dir, "train", need_label=True)}
        spec.labels = sorted(values, key=lambda v: (len(v), v))
    return spec


def is_glue_task(name):
    """Whether `name` (any case, "SST-2"/"sst2") names a GLUE task of `GLUE_TASKS`."""
    key = name.lower()
    return _ALIASES.get(key, key) in GLUE_TASKS


def load_task(name, data_dir=None, **generic_kwargs):
    """A GLUE `TaskSpec` by name (case-insensitive, "SST-2"/"sst2"), else a generic one."""
    key = name.lower()
    key = _ALIASES.get(key, key)
    if key in GLUE_TASKS and not generic_kwargs:
        return dataclasses.replace(GLUE_TASKS[key])
    return generic_task(name, data_dir, **generic_kwargs)


def read_examples(spec, data_dir, split="train", limit=None):
    """Reads one split as `Example`s.

    Args:
        spec: `TaskSpec`.
        data_dir: str. Folder holding `spec.splits[split]`.
        split: str. A key of `spec.splits` ("train", "dev", "test", ...).
        limit: int or None. Stop after this many examples.

    Returns:
        list of `Example`. Labels are int ids (classification), floats
        (regression), or None when a test file has no label column.

    Raises:
        FileNotFoundError, or ValueError naming the file and line of a missing
        column, a short line or an unknown label.
    """
    need_label = not split.startswith("test")
    label_index = {}
    for i, value in enumerate(spec.labels or []):
        label_index[value] = i
    for i, value in enumerate(spec.label_names or []):
        label_index.setdefault(value, i)
    examples = []
    path = _path(spec, data_dir, split)
    for line_no, label, text_a, text_b in _rows(spec, data_dir, split, need_label):
        if label is None:
            parsed = None
        elif spec.is_regression:
            try:
                parsed = float(label)
                if parsed != parsed or parsed in (float("inf"), float("-inf")):
                    raise ValueError(label)
            except ValueError:
                raise ValueError(
                    f"{path}:{line_no}: label {label!r} is not a finite number (task "
                    f"{spec.name!r} is a regression task)."
                ) from None
        elif label in label_index:
            parsed = label_index[label]
        else:
            raise ValueError(
                f"{path}:{line_no}: unknown label {label!r} for task {spec.name!r}. "
                f"Known labels: {spec.labels}" + (f" (names {spec.label_names})" if spec.label_names else "")
            )
        examples.append(Example(text_a, text_b, parsed))
        if limit is not None and len(examples) >= limit:
            break
    if not examples:
        raise ValueError(f"{path}: no examples" + (" after the header line." if spec.header else "."))
    return examples


def _path(spec, data_dir, split):
    if split not in spec.splits:
        raise ValueError(f"Task {spec.name!r} has no split {split!r}. Splits: {list(spec.splits)}")
    return os.path.join(data_dir, spec.splits[split])


def _rows(spec, data_dir, split, need_label):
    """Yields (line number, label or None, text_a, text_b or None); a file that is not UTF-8 text is named."""
    path = _path(spec, data_dir, split)
    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(f"Task {spec.name!r}: split {split!r} file not found: {path}")
    yield from _read_rows(spec, path, need_label)


def _table(spec, path):
    """`(first line, fields)` of each record of a split file (`data.lines.table_rows`: lines end at \\n only)."""
    with tf.io.gfile.GFile(path, "rb") as f:  # whole: gfile's line reads drop every \r
        text = decode_utf8(f.read(), path).removeprefix("\ufeff")  # a UTF-8 byte-order mark (Windows editors)
    return table_rows(path, text, spec.delimiter)


def _read_rows(spec, path, need_label):
    rows = _table(spec, path)
    header = next(rows, (None, None))[1] if spec.header else None
    if spec.header and header is None:
        raise ValueError(f"{path}: empty file, expected a header line.")
    columns = {}
    for role, column in (("text_a", spec.text_a), ("text_b", spec.text_b), ("label", spec.label)):
        if column is None:
            continue
        optional = role == "label" and not need_label
        columns[role] = _resolve(column, header, path, role, optional)
    label_col = columns.get("label")
    skipped = 0
    for line_no, fields in rows:
        if not fields:
            continue
        wanted = max(c for c in columns.values() if c is not None)
        if header is not None and len(fields) > len(header) and spec.name not in GLUE_TASKS:
            raise ValueError(
                f"{path}:{line_no}: {len(fields)} fields where the header has {len(header)}: a "
                f"{spec.delimiter!r} inside a text? (TSV fields cannot hold tabs: replace them, or use "
                "quoted CSV.)"
            )
        if len(fields) <= wanted:
            if spec.skip_malformed:
                skipped += 1
                continue
            raise ValueError(
                f"{path}:{line_no}: expected at least {wanted + 1} fields separated by "
                f"{spec.delimiter!r}, found {len(fields)}: {spec.delimiter.join(fields)[:200]!r}"
            )
        label = fields[label_col] if label_col is not None else None
        text_b = fields[columns["text_b"]] if "text_b" in columns else None
        yield line_no, label, fields[columns["text_a"]], text_b
    if skipped:
        logging.warning("%s: skipped %d malformed lines.", path, skipped)


def _resolve(column, header, path, role, optional):
    """Column index from an int or a header name; None if optional and absent."""
    if isinstance(column, int) or (isinstance(column, str) and column.isdigit() and header is None):
        return int(column)
    if header is None:
        raise ValueError(f"{path}: the file has no header, so the {role} column must be an index. "
                         f"Received: {column!r}")
    if column in header:
        return header.index(column)
    if optional:
        return None
    raise ValueError(
        f"{path}:1: missing {role} column {column!r}; the header has {header}."
    )


def read_index(spec, data_dir, split="test"):
    """The ids of a split's rows for a submission file: its `index` column (GLUE test files), else 0, 1, ...

    Rows are those `read_examples` returns, in order (blank lines skipped).
    """
    path = _path(spec, data_dir, split)
    rows = [r for _, r in _table(spec, path) if r]
    header = rows.pop(0) if spec.header and rows else None
    if header is not None and "index" in header:
        column = header.index("index")
        return [r[column] for r in rows]
    return [str(i) for i in range(len(rows))]


# --- The task of a fine-tuning config ---------------------------------------------------------------


def _column(value):
    return int(value) if isinstance(value, str) and value.lstrip("-").isdigit() else value


def task_spec(config):
    """The `TaskSpec` of `config`: a GLUE task by name, else a generic TSV/CSV from the column flags."""
    if is_glue_task(config.task):
        return load_task(config.task, config.data_dir)
    return load_task(
        config.task, config.data_dir, text_a_column=_column(config.text_a_column),
        text_b_column=_column(config.text_b_column), label_column=_column(config.label_column or "label"),
        regression=config.regression, file_format=config.file_format,
    )


# --- predict's input files ------------------------------------------------------------------------

# Header names of the first text, the second text and the label (GLUE's and the project's layouts), for predict.
TEXT_A_NAMES = ("text_a", "text", "sentence", "sentence1", "question", "question1", "#1 String")
TEXT_B_NAMES = ("text_b", "sentence2", "question2", "#2 String", "sentence")
LABEL_NAMES = ("label", "gold_label", "score", "Quality", "is_duplicate")


def read_inputs(name, text, input_format, settings, options):
    """`predict`'s examples of an input file (`ClassificationKind.read_examples`): TSV/CSV rows (text columns by
    header name or `--text_a_column`...), JSON Lines or text lines."""
    if input_format in ("tsv", "csv"):
        return _read_table(name, text, settings, options, input_format)
    if input_format == "jsonl":
        return each_line(name, text, lambda line, raw: _json_example(json_object(name, line, raw), settings, name,
                                                                    line))
    return each_line(name, text, lambda line, raw: _text_example(raw, settings, name, line))


def _read_table(name, text, settings, options, input_format):
    """The examples of a TSV (no quoting) or CSV file: one per row, a skipped one per blank line."""
    rows = table_rows(name, text, "\t" if input_format == "tsv" else ",")
    pair = settings.get("pair", False)
    header = None
    if options.header:
        first = next(((line, row) for line, row in rows if row), None)  # blank lines before the header: none
        if first is None:
            return []
        header = first[1]
    width = len(header) if header else None

    def column(flag, value, names, role, required):
        if value is not None:
            return column_index(name, header, value, flag)
        found = [header.index(n) for n in names if header and n in header]
        if found or not required:
            return found[0] if found else None
        seen = f"the header has {header}" if header else "no header (--noheader)"
        raise ValueError(f"{name}:1: no {role} column: {seen}; expected one of {list(names)}, or name it with "
                         f"--{flag}.")

    text_a = column("text_a_column", options.text_a_column, TEXT_A_NAMES, "text", True)
    text_b = None
    if pair:
        names = tuple(n for n in TEXT_B_NAMES if header and n in header and header.index(n) != text_a)
        text_b = column("text_b_column", options.text_b_column, names or TEXT_B_NAMES, "second text", True)
    label = column("label_column", options.label_column, LABEL_NAMES, "label", False)
    examples = []
    for line, row in rows:
        if not row:
            examples.append(InputExample(None, line=line, skipped=BLANK))
            continue
        if width is None:
            width = len(row)
        if len(row) != width:
            raise ValueError(f"{name}:{line}: {len(row)} fields, but {'the header' if header else 'line 1'} has "
                             f"{width}. Received: {row!r:.200}")
        for index, flag in ((text_a, "text_a_column"), (text_b, "text_b_column"), (label, "label_column")):
            if index is not None and not -width <= index < width:
                raise ValueError(f"{name}:{line}: --{flag}={index} but the line has {width} fields.")
        inputs = {"text": row[text_a]}
        if pair:
            inputs["text_b"] = row[text_b]
        gold = None if label is None else _gold_label(row[label], settings, name, line)
        examples.append(InputExample(inputs, gold, line))
    return examples


def _gold_label(value, settings, name, line):
    """A gold label: a label name or index (classification), or a float (regression)."""
    if settings.get("regression"):
        try:
            return float(value)
        except ValueError:
            raise ValueError(f"{name}:{line}: label {value!r} is not a number (a regression model).") from None
    names = list(settings.get("label_names") or [])
    if value in names:
        return names.index(value)
    if re.fullmatch(r"\d+", value.strip()) and int(value) < len(names):
        return int(value)
    raise ValueError(f"{name}:{line}: label {value!r} is none of the model's labels {names} (nor their index).")


def _json_example(record, settings, name, line):
    inputs = {"text": field(record, ("text", "text_a", "sentence"), name, line)}
    if settings.get("pair"):
        inputs["text_b"] = field(record, ("text_b",), name, line)
    gold = record.get("label")
    if gold is not None:
        gold = _gold_label(str(gold), settings, name, line)
    return InputExample(inputs, gold, line)


def _text_example(raw, settings, name, line):
    """One text line: the text, or `text_a<TAB>text_b` for a sentence-pair model."""
    if not settings.get("pair"):
        return InputExample({"text": raw}, None, line)
    if "\t" not in raw:
        raise ValueError(f"{name}:{line}: a sentence-pair model reads `text_a<TAB>text_b` lines; this line has no tab.")
    text_a, text_b = raw.split("\t", 1)
    return InputExample({"text": text_a, "text_b": text_b}, None, line)

