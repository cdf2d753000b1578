"""The tagging kind's files: the CoNLL task of a fine-tuning config (`tagging_task`: a named CoNLL-2003 task, or
generic CoNLL-column files), and `predict`'s inputs (`read_inputs`: CoNLL columns, JSON Lines, text lines)."""

import re

from electra_tf.data.lines import split_lines
from electra_tf.finetuning.examples import Example, each_line, field, json_object, spooled
from electra_tf.tasks.tagging import conll

# Generic CoNLL-column files: the first of these names that exists in `--data_dir`.
GENERIC_SPLITS = {
    "train": ("train.txt", "eng.train", "train.conll"),
    "dev": ("dev.txt", "valid.txt", "eng.testa", "dev.conll"),
    "test": ("test.txt", "eng.testb", "test.conll"),
}



def tagging_task(config):
    """The `conll.ConllTask` of `config`: a named CoNLL-2003 task, or generic CoNLL-column files.

    Example:
    >>> from electra_tf.tasks import FinetuneConfig
    >>> from electra_tf.tasks.tagging.data import tagging_task
    >>> task = tagging_task(FinetuneConfig(task="ner", task_kind="tagging", label_column="3"))
    >>> (task.token_column, task.label_column, task.scheme, task.metric)
    (0, 3, 'auto', 'entity_f1')
    >>> tagging_task(FinetuneConfig(task="pos", task_kind="tagging", tag_scheme="none")).metric
    'token_accuracy'
    """
    name = (config.task or "").lower()
    if name in conll.TASKS:
        return conll.TASKS[name]
    label_column = -1 if config.label_column is None else _int_column(config.label_column)
    scheme = None if config.tag_scheme == "none" else config.tag_scheme
    return conll.ConllTask(
        config.task or "tagging", GENERIC_SPLITS, token_column=config.token_column,
        label_column=label_column, scheme=scheme, metric="entity_f1" if scheme else "token_accuracy",
    )



def _int_column(value):
    try:
        return int(value)
    except ValueError:
        raise ValueError(
            f"CoNLL files have no header: `--label_column` must be a column index (-1: the last). "
            f"Received: `label_column={value!r}`"
        ) from None



# --- predict's input files ------------------------------------------------------------------------

WORDS_SIGNATURE = "serve_words"  # the served signature that takes whitespace-separated words as they are



def read_inputs(name, text, input_format, settings, options):
    """`predict`'s examples of an input file (`TaggingKind.read_examples`): CoNLL columns, JSON Lines or text lines."""
    if input_format == "conll":
        return _read_conll(name, text, settings, options)
    if input_format == "jsonl":
        return each_line(name, text, lambda line, raw: _json_example(json_object(name, line, raw), settings, name,
                                                                    line))
    return each_line(name, text, lambda line, raw: Example({"text": raw}, None, line))


def _read_conll(name, text, settings, options):
    rows = (conll.line_columns(line) for line in split_lines(text))
    first = next((row for row in rows if row and row[0] != conll.DOCSTART), None)
    if first is None:
        return []
    labelled = len(first) > 1
    label_column = -1 if options.label_column is None else int(options.label_column)
    scheme = options.tag_scheme if settings.get("spans") else None
    sentences = spooled(name, text, lambda p: conll.read_conll(p, options.token_column,
                                                               label_column if labelled else options.token_column,
                                                               scheme if labelled else None))
    examples = []
    for sentence in sentences:
        gold = _known_tags(sentence.tags, sentence.lines, settings, name) if labelled else None
        words = list(sentence.words)
        examples.append(Example({"text": " ".join(words)}, gold, sentence.lines[0], signature=WORDS_SIGNATURE,
                                words=words))
    return examples



def _json_example(record, settings, name, line):
    if "words" not in record:
        return Example({"text": field(record, ("text",), name, line)}, None, line)
    words = field(record, ("words",), name, line, value_type=list)
    for word in words:
        if not isinstance(word, str) or not word or any(c.isspace() for c in word):
            raise ValueError(f"{name}:{line}: every word must be a non-empty string without whitespace. "
                             f"Received: {word!r}")
    tags = field(record, ("tags",), name, line, required=False, value_type=list)
    if tags is not None:
        if len(tags) != len(words) or not all(isinstance(t, str) for t in tags):
            raise ValueError(f"{name}:{line}: \"tags\" must be {len(words)} strings, one per word.")
        if settings.get("spans"):
            for tag in tags:
                if not re.fullmatch(r"O|[BI]-\S+", tag):
                    raise ValueError(f"{name}:{line}: {tag!r} is not an IOB2 tag (O, B-TYPE or I-TYPE).")
        tags = _known_tags(tags, [line] * len(tags), settings, name)
    return Example({"text": " ".join(words)}, tags, line, signature=WORDS_SIGNATURE, words=list(words))



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

