"""Examples to predict: the input read whole, its format told, then read by the model's task kind.

`read_examples(path, input_format, kind, settings)` returns `Example`s
(`finetuning.examples`): the strings each goes to the serving signature with,
its gold label when the input has one, and its line. `input_format` "auto"
picks by extension (`.tsv`, `.csv`, `.json`, `.jsonl`, `.conll`), else by
content (`by_content`: a JSON object on the first line: JSON Lines; a format
the kind tells by content, such as CoNLL columns; else text lines, a first
line that starts with `{` but is no JSON included); the kind reads the
formats it lists (`TaskKind.predict_formats`) and refuses the others. Lines
end at `\\n` (or `\\r\\n`) only (`data.lines`). Errors name the file (`<stdin>`
for stdin) and the line: a missing file, text that is not UTF-8, an empty or
blank input, then whatever the kind's reader finds (columns, fields, labels).

Example:
>>> import os, tempfile
>>> from electra_tf.tasks.classification.kind import ClassificationKind
>>> from electra_tf.predicting.inputs import read_examples
>>> path = os.path.join(tempfile.mkdtemp(), "dev.tsv")
>>> _ = open(path, "w").write("sentence\\tlabel\\na fine film\\t1\\ndull\\tnegative\\n")
>>> examples = read_examples(path, "auto", ClassificationKind, {"label_names": ["negative", "positive"]})
>>> [(e.inputs, e.gold, e.line) for e in examples]
[({'text': 'a fine film'}, 1, 2), ({'text': 'dull'}, 0, 3)]
"""

import json
import os
import sys

from electra_tf.data.lines import split_lines
from electra_tf.finetuning.examples import STDIN, Example, ReadOptions  # noqa: F401  (what callers read)

# The formats every reader shares; a task kind adds its own (`TaskKind.predict_formats`, `format_extensions`).
FORMATS = ("tsv", "csv", "jsonl", "text")
EXTENSIONS = {".tsv": "tsv", ".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl",
              ".txt": None}  # .txt: by content (a kind may tell its own format: CoNLL-2003's files are .txt)
JSON_EXTENSION = ".json"  # a JSON document: the format a kind reads `.json` files as (else JSON Lines)


def read_examples(path, input_format, kind, settings, options=None, text=None, extensions=None):
    """Reads `path` (`-`: stdin) as `input_format` ("auto": by extension, else by content) for a `kind` model.

    Args:
        path: str. The file, or "-" for stdin.
        input_format: str. "auto", one of `FORMATS` or one the kind reads.
        kind: the model's `TaskKind` subclass (`tasks`).
        settings: dict. The model's serving config (`label_names`, `pair`, `regression`, `spans`, ...).
        options: `ReadOptions` with the kind's `PredictOptions` fields (`electra_tf.tasks.ReadOptions`), or None.
        text: str or None. The input's text, when already read (`read_text`).
        extensions: dict or None. File extension -> format of every kind (`electra_tf.tasks.format_extensions`:
            a file another kind's extension names is refused naming that format); default: the kind's own.

    Returns:
        list of `Example`, in input order.
    """
    options = options or ReadOptions.with_fields_of(kind.PredictOptions)()  # the defaults of the kind's flags
    name = STDIN if path == "-" else path
    text = read_text(path) if text is None else _with_records(path, text)
    if input_format == "auto":
        input_format = detect(path, text, kind, extensions)
    if input_format not in kind.predict_formats:
        raise ValueError(f"{name}: a {kind.name} model reads {', '.join(kind.predict_formats)}, not {input_format} "
                         "(see --input_format).")
    examples = kind.read_examples(name, text, input_format, settings, options)
    if all(e.skipped for e in examples):
        raise ValueError(f"{name}: no examples (the input is empty).")
    return examples


def read_text(path, flag="input", what="the examples"):
    """The whole input (`-`: stdin) as str; not-UTF-8 bytes, or no text but whitespace, are an error.

    Args:
        path: str. The file, or "-" for stdin.
        flag: str. The flag that named it, for errors (`input`, `passages`).
        what: str. What the file holds, for the error of an empty one.
    """
    name = STDIN if path == "-" else path
    if path == "-":
        data = sys.stdin.buffer.read()
    else:
        if not os.path.exists(path):
            raise FileNotFoundError(f"Input file not found: {path}" if flag == "input"
                                    else f"`--{flag}={path}`: file not found.")
        if os.path.isdir(path):
            raise IsADirectoryError(f"{path} is a folder; --{flag} takes a file.")
        with open(path, "rb") as f:
            data = f.read()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        column = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise ValueError(f"{name}:{line}: not UTF-8 text (byte {data[e.start]:#04x} at column {column}).") from None
    return _with_records(path, text, flag, what)


def _with_records(path, text, flag="input", what="the examples"):
    """`text`, unless it is empty or blank: an error saying so, whatever the format (it is none of them)."""
    if not text.strip():
        name, given = (STDIN, "stdin") if path == "-" else (path, f"`--{flag}={path}`")
        if flag != "input":
            raise ValueError(f"{name}: no {flag}: {given} is empty or blank; give {what}, one per line.")
        raise ValueError(f"{name}: no input records: {given} is empty or blank; give {what} in a file with "
                         "--input, or pipe them into stdin.")
    return text


def detect(path, text, kind, extensions=None):
    """The input format of `text` for a `kind` model: by extension (`EXTENSIONS`, the kinds' `extensions`), else by
    content (`by_content`)."""
    extensions = {**EXTENSIONS, **(kind.format_extensions if extensions is None else extensions)}
    extension = os.path.splitext(path)[1].lower() if path != "-" else ""
    if extensions.get(extension):
        return extensions[extension]
    return by_content(text, kind, extensions.get(JSON_EXTENSION))


def by_content(text, kind, document=None):
    """The format of `text` told by its content, for a `kind` model; `document`: the format `.json` files are read
    as (a JSON document), if any.

    A first line holding a JSON object: JSON Lines. A first line that starts with `{` but is no JSON
    object: `document` when the kind reads it or the whole text is JSON (an object over several
    lines), JSON Lines when a later line is a JSON object or the kind reads no text (its reader
    names the bad line), else text that starts with a brace. Any other first line: the kind's
    `sniff_format`, else text lines.

    Example:
    >>> from electra_tf.tasks.embedding.kind import EmbeddingKind
    >>> from electra_tf.predicting.inputs import by_content
    >>> [by_content(t, EmbeddingKind) for t in ('{"text": "a"}\\n', '{braces} in code\\nmore\\n', 'plain\\n')]
    ['jsonl', 'text', 'text']
    >>> by_content('{"text": "a"\\n{"text": "b"}\\n', EmbeddingKind)  # JSON Lines with a bad first line
    'jsonl'
    """
    lines = [line for line in split_lines(text) if line.strip()]
    if lines and lines[0].lstrip().startswith("{"):
        if _is_json_object(lines[0]):
            return "jsonl"
        if document is not None and (document in kind.predict_formats or _is_json(text)):
            return document
        if "text" not in kind.predict_formats or any(_is_json_object(line) for line in lines[1:]):
            return "jsonl"
    return kind.sniff_format(text) or "text"


def _is_json(text):
    try:
        json.loads(text)
        return True
    except json.JSONDecodeError:
        return False


def _is_json_object(line):
    if not line.lstrip().startswith("{"):
        return False
    try:
        return isinstance(json.loads(line), dict)
    except json.JSONDecodeError:
        return False
