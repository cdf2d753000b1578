"""Examples to predict, read from TSV/CSV, CoNLL columns, SQuAD JSON, JSON Lines or text lines.

`read_examples(path, input_format, kind, settings)` returns `Example`s: the
strings each goes to the serving signature with, its gold label when the input
has one, and its line. Errors name the file (`<stdin>` for stdin) and the line:
a missing file, text that is not UTF-8, a malformed JSON line, missing or
unknown columns, a wrong field or column count, a label or tag the model does
not know.

Lines: every example of a line-based input (TSV/CSV, CoNLL, JSON Lines, text)
knows the 1-based line it starts on (CoNLL: its first word's); SQuAD JSON
examples have none (their question `id` names them). In TSV/CSV, JSON Lines and
text, where one line is one example, a blank line is an `Example` too, with
`skipped="blank line"` and no inputs, so the output keeps one record per line.

CoNLL gold tags of a span model are read in the scheme the file is written in
(`conll.detect_scheme`, unless `tag_scheme` names one) and converted to IOB2.

Example:
>>> import os, tempfile
>>> from electra_tf.predicting.inputs import read_examples
>>> path = os.path.join(tempfile.mkdtemp(), "dev.tsv")
>>> _ = open(path, "w").write("sentence\\tlabel\\na fine film\\t1\\ndull\\tnegative\\n")
>>> examples = read_examples(path, "auto", "classification", {"label_names": ["negative", "positive"]})
>>> [(e.inputs, e.gold, e.line) for e in examples]
[({'text': 'a fine film'}, 1, 2), ({'text': 'dull'}, 0, 3)]
"""

import csv
import dataclasses
import json
import os
import re
import sys
import tempfile
import typing

STDIN = "<stdin>"
CLASSIFICATION, TAGGING, SPAN_QA = "classification", "tagging", "span_qa"
# Header names of the first text, the second text and the label (GLUE's and the project's layouts).
TEXT_A_NAMES = ("text_a", "text", "sentence", "sentence1", "question", "question1", "#1 String")
TEXT_B_NAMES = ("text_b", "sentence2", "question2", "#2 String", "sentence")
LABEL_NAMES = ("label", "gold_label", "score", "Quality", "is_duplicate")
_EXTENSIONS = {".tsv": "tsv", ".csv": "csv", ".json": "squad", ".jsonl": "jsonl", ".ndjson": "jsonl",
               ".conll": "conll", ".txt": None}  # .txt: by content (CoNLL-2003's own files are .txt)
FORMATS_OF_KIND = {CLASSIFICATION: ("tsv", "csv", "jsonl", "text"), TAGGING: ("conll", "jsonl", "text"),
                   SPAN_QA: ("squad", "jsonl")}


@dataclasses.dataclass
class Example:
    """One example: `inputs` (signature argument -> string), its gold label (None: none), its line.

    `words`: tagging input given as words (CoNLL, `{"words": [...]}`), joined by single spaces in
    `inputs["text"]`. `id`: QA question id. `line`: None for SQuAD JSON. `skipped`: why a line is
    no example ("blank line"), its `inputs` None.
    """

    inputs: typing.Optional[dict]
    gold: typing.Any = None
    line: typing.Optional[int] = 0
    words: typing.Optional[list] = None
    id: typing.Optional[str] = None
    skipped: typing.Optional[str] = None


BLANK = "blank line"


@dataclasses.dataclass
class ReadOptions:
    """How to read columns (the `predict` flags): TSV/CSV column names or indices, CoNLL columns."""

    text_a_column: typing.Optional[str] = None
    text_b_column: typing.Optional[str] = None
    label_column: typing.Optional[str] = None
    header: bool = True
    token_column: int = 0
    tag_scheme: str = "auto"


def read_examples(path, input_format, kind, settings, options=None, text=None):
    """Reads `path` (`-`: stdin) as `input_format` ("auto": by extension, else by content) for a `kind` model.

    Args:
        path: str. The file, or "-" for stdin.
        input_format: str. One of "auto", "tsv", "csv", "conll", "squad", "jsonl", "text".
        kind: str. "classification", "tagging" or "span_qa".
        settings: dict. The model's serving config (`label_names`, `pair`, `regression`, `spans`).
        options: `ReadOptions` or None.
        text: str or None. The input's text, when already read (`read_text`).

    Returns:
        list of `Example`, in input order.
    """
    options = options or ReadOptions()
    name = STDIN if path == "-" else path
    text = read_text(path) if text is None else text
    if input_format == "auto":
        input_format = _detect(path, text, kind)
    if input_format not in FORMATS_OF_KIND[kind]:
        raise ValueError(f"{name}: a {kind} model reads {', '.join(FORMATS_OF_KIND[kind])}, not {input_format} "
                         "(see --input_format).")
    reader = {"tsv": _read_table, "csv": _read_table, "jsonl": _read_jsonl, "text": _read_lines,
              "conll": _read_conll, "squad": _read_squad}[input_format]
    examples = reader(name=name, text=text, kind=kind, settings=settings, options=options, input_format=input_format)
    if all(e.skipped for e in examples):
        raise ValueError(f"{name}: no examples (the input is empty).")
    return examples


def read_text(path):
    """The whole input (`-`: stdin) as str; not-UTF-8 bytes are an error naming the line."""
    name = STDIN if path == "-" else path
    if path == "-":
        data = sys.stdin.buffer.read()
    else:
        if not os.path.exists(path):
            raise FileNotFoundError(f"Input file not found: {path}")
        if os.path.isdir(path):
            raise IsADirectoryError(f"{path} is a folder; --input takes a file.")
        with open(path, "rb") as f:
            data = f.read()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        column = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise ValueError(f"{name}:{line}: not UTF-8 text (byte {data[e.start]:#04x} at column {column}).") from None


def _detect(path, text, kind):
    extension = os.path.splitext(path)[1].lower() if path != "-" else ""
    if _EXTENSIONS.get(extension):
        return _EXTENSIONS[extension]
    first = next((line for line in text.splitlines() if line.strip()), "")
    if first.lstrip().startswith("{"):
        try:
            json.loads(first)
            return "jsonl"
        except json.JSONDecodeError:
            return "squad"  # an object over several lines
    if kind == TAGGING and _looks_like_conll(text):
        return "conll"
    return "text"


def _looks_like_conll(text):
    """Every one of the first data lines ends in a tag column (O, X-TYPE) or is a -DOCSTART- line."""
    rows = [line.split() for line in text.splitlines()[:50] if line.strip()]
    tag = re.compile(r"^(O|[BIES]-\S+)$")
    return bool(rows) and all(row[0] == "-DOCSTART-" or (len(row) > 1 and tag.match(row[-1])) for row in rows)


# --- TSV / CSV ---------------------------------------------------------------------------------


def _read_table(name, text, kind, settings, options, input_format):
    if input_format == "tsv":
        reader = csv.reader(text.splitlines(), delimiter="\t", quoting=csv.QUOTE_NONE)
    else:
        reader = csv.reader(text.splitlines(keepends=True))
    rows = _numbered(reader)
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
            return _resolve(name, header, value, flag)
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
            examples.append(Example(None, line=line, skipped=BLANK))
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
        gold = None if label is None else _label(row[label], settings, name, line)
        examples.append(Example(inputs, gold, line))
    return examples


def _numbered(reader):
    """`(first line, row)` of each row of a `csv.reader` (a quoted field may span lines; a blank line: `[]`)."""
    previous = 0
    for row in reader:
        yield previous + 1, row
        previous = reader.line_num


def _resolve(name, header, value, flag):
    """A column given by header name or index."""
    if re.fullmatch(r"-?\d+", str(value)):
        return int(value)
    if header is None or value not in header:
        raise ValueError(f"{name}:1: --{flag}={value!r} names no column; the header has {header}.")
    return header.index(value)


def _label(value, settings, name, line):
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


# --- JSON Lines, text lines ------------------------------------------------------------------


def _read_jsonl(name, text, kind, settings, options, input_format):
    examples = []
    for line, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            examples.append(Example(None, line=line, skipped=BLANK))
            continue
        try:
            record = json.loads(raw)
        except json.JSONDecodeError as e:
            raise ValueError(f"{name}:{line}: not valid JSON ({e.msg} at column {e.colno}).") from None
        if not isinstance(record, dict):
            raise ValueError(f"{name}:{line}: expected a JSON object, found {type(record).__name__}.")
        examples.append(_json_example(record, kind, settings, name, line))
    return examples


def _field(record, keys, name, line, required=True, kind=str):
    for key in keys:
        if key in record:
            value = record[key]
            if not isinstance(value, kind):
                raise ValueError(f"{name}:{line}: \"{key}\" must be a {kind.__name__}, found "
                                 f"{type(value).__name__}.")
            return value
    if required:
        raise ValueError(f"{name}:{line}: no \"{keys[0]}\" field (keys: {sorted(record)}).")
    return None


def _json_example(record, kind, settings, name, line):
    if kind == CLASSIFICATION:
        inputs = {"text": _field(record, ("text", "text_a", "sentence"), name, line)}
        if settings.get("pair"):
            inputs["text_b"] = _field(record, ("text_b",), name, line)
        gold = record.get("label")
        if gold is not None:
            gold = _label(str(gold), settings, name, line)
        return Example(inputs, gold, line)
    if kind == TAGGING:
        if "words" not in record:
            return Example({"text": _field(record, ("text",), name, line)}, None, line)
        words = _field(record, ("words",), name, line, kind=list)
        _check_words(words, name, line)
        tags = _field(record, ("tags",), name, line, required=False, kind=list)
        if tags is not None:
            if len(tags) != len(words) or not all(isinstance(t, str) for t in tags):
                raise ValueError(f"{name}:{line}: \"tags\" must be {len(words)} strings, one per word.")
            tags = _iob2(tags, settings, name, line)
        return Example({"text": " ".join(words)}, tags, line, words=list(words))
    question = _field(record, ("question",), name, line)
    context = _field(record, ("context",), name, line)
    qid = record.get("id")
    answers = record.get("answers")
    if answers is not None:
        answers = _answer_texts(answers, name, line)
    return _qa_example(question, context, answers, line, None if qid is None else str(qid), f"{name}:{line}")


def _answer_texts(answers, name, line):
    """Gold answer texts: a list of strings or of {"text": ...}, or {"text": [...]} (Hugging Face datasets)."""
    if isinstance(answers, dict):
        answers = answers.get("text", [])
    if not isinstance(answers, list):
        raise ValueError(f"{name}:{line}: \"answers\" must be a list of texts.")
    texts = [a.get("text") if isinstance(a, dict) else a for a in answers]
    if not all(isinstance(t, str) for t in texts):
        raise ValueError(f"{name}:{line}: \"answers\" must be texts (or objects with a \"text\").")
    return texts


def _qa_example(question, context, answers, line, qid, where):
    for field, value in (("question", question), ("context", context)):
        if not value.strip():
            raise ValueError(f"{where}: empty {field}" + (f" (question id {qid!r})." if qid else "."))
    return Example({"question": question, "context": context}, answers, line, id=qid)


def _check_words(words, name, line):
    for word in words:
        if not isinstance(word, str) or not word or any(c.isspace() for c in word):
            raise ValueError(f"{name}:{line}: every word must be a non-empty string without whitespace. "
                             f"Received: {word!r}")


def _read_lines(name, text, kind, settings, options, input_format):
    examples = []
    for line, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            examples.append(Example(None, line=line, skipped=BLANK))
            continue
        if kind == CLASSIFICATION and settings.get("pair"):
            if "\t" not in raw:
                raise ValueError(f"{name}:{line}: a sentence-pair model reads `text_a<TAB>text_b` lines; "
                                 "this line has no tab.")
            text_a, text_b = raw.split("\t", 1)
            examples.append(Example({"text": text_a, "text_b": text_b}, None, line))
        else:
            examples.append(Example({"text": raw}, None, line))
    return examples


# --- CoNLL, SQuAD (the fine-tuning readers) ----------------------------------------------------


def _spooled(name, text, read):
    """`read(path)` on the input: a real file, or stdin's text in a temporary one (errors name `<stdin>`)."""
    if name != STDIN:
        return read(name)
    with tempfile.NamedTemporaryFile("w", suffix=".txt", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        try:
            return read(f.name)
        except ValueError as e:
            raise ValueError(str(e).replace(f.name, STDIN)) from None


def _read_conll(name, text, kind, settings, options, input_format):
    from electra_tf.finetuning.conll import read_conll

    first = next((line.split() for line in text.splitlines() if line.split() and line.split()[0] != "-DOCSTART-"),
                 None)
    if first is None:
        return []
    labelled = len(first) > 1
    label_column = -1 if options.label_column is None else int(options.label_column)
    scheme = options.tag_scheme if settings.get("spans") else None
    sentences = _spooled(name, text, lambda p: read_conll(p, options.token_column,
                                                          label_column if labelled else options.token_column,
                                                          scheme if labelled else None))
    examples = []
    for sentence in sentences:
        gold = _known_tags(sentence.tags, sentence.lines, settings, name) if labelled else None
        words = list(sentence.words)
        examples.append(Example({"text": " ".join(words)}, gold, sentence.lines[0], words=words))
    return examples


def _known_tags(tags, lines, settings, name):
    """Gold tags the model has (as a classification label must be one of its labels), else an error naming the
    line: of a span model, each entity type; else each tag."""
    known = settings.get("label_names") or []
    spans = settings.get("spans")
    types = sorted({tag[2:] for tag in known if tag != "O"}) if spans else known
    for tag, line in zip(tags, lines):
        if (tag[2:] if spans and tag != "O" else tag) not in (types if spans and tag != "O" else known):
            what = f"entity type {tag[2:]!r}" if spans else f"tag {tag!r}"
            raise ValueError(f"{name}:{line}: gold {what} is none of the model's {'types' if spans else 'tags'} "
                             f"{types}: the model cannot predict it, so it cannot be scored (predict without the "
                             "gold tags, or with a model trained on them).")
    return list(tags)


def _iob2(tags, settings, name, line):
    """JSON gold tags: of a span model, checked as IOB2 (B-/I- repaired as conlleval reads them); each known."""
    if settings.get("spans"):
        for tag in tags:
            if not re.fullmatch(r"O|[BI]-\S+", tag):
                raise ValueError(f"{name}:{line}: {tag!r} is not an IOB2 tag (O, B-TYPE or I-TYPE).")
    return _known_tags(tags, [line] * len(tags), settings, name)


def _read_squad(name, text, kind, settings, options, input_format):
    from electra_tf.finetuning.squad import read_squad

    examples = []
    for e in _spooled(name, text, read_squad):
        gold = [a for a, _ in e.answers]
        examples.append(_qa_example(e.question, e.context, gold, None, e.qid, f"{name}, question id {e.qid!r}"))
    return examples
