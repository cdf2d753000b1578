"""SQuAD-format JSON (1.1 and 2.0) -> `QAExample`s, with errors that name the file and the JSON path.

Any file laid out as SQuAD is read:

    {"version": ..., "data": [{"title": ..., "paragraphs": [{"context": str,
        "qas": [{"id": str, "question": str, "answers": [{"text": str, "answer_start": int}],
                 "is_impossible": bool (2.0, optional)}]}]}]}

A question with `is_impossible: true`, or with no answers at all, is
unanswerable (SQuAD 2.0). A question without answers is refused in a file that
is not SQuAD 2.0 (no `"version": "v2.0"` at the top level and no question with
an `is_impossible` field): in a 1.1 file it is a data error, and it would
silently turn the run into SQuAD 2.0. Question ids must be unique (they key the
predictions and the score). An `answer_start` outside its context, or an answer
that runs past the context's end, is an error naming the file and question id
(the data is wrong, not just the tokenizer). An answer whose text is not at its
offset but is found close by (whitespace shifts) is re-anchored later, in
`features.locate_answer`.

Example:
>>> import json, os, tempfile
>>> from electra_tf.tasks.span_qa.squad import read_squad
>>> path = os.path.join(tempfile.mkdtemp(), "dev.json")
>>> _ = open(path, "w").write(json.dumps({"data": [{"title": "t", "paragraphs": [{
...     "context": "Paris is in France.",
...     "qas": [{"id": "q1", "question": "Where is Paris?", "answers": [{"text": "France", "answer_start": 12}]},
...             {"id": "q2", "question": "Who?", "answers": [], "is_impossible": True}]}]}]}))
>>> examples = read_squad(path)
>>> [(e.qid, e.answers, e.is_impossible) for e in examples]
[('q1', (('France', 12),), False), ('q2', (), True)]
"""

import dataclasses
import json
import random

import tensorflow as tf

from electra_tf.data.utf8 import check_json_escapes, decode_utf8


@dataclasses.dataclass(frozen=True)
class QAExample:
    """One question on one context.

    Args:
        qid: str. The question id (key of `predictions.json`).
        question: str.
        context: str.
        answers: tuple of `(text, char_start)`: the gold answers (several in dev sets).
        is_impossible: bool. SQuAD 2.0 unanswerable question.
        title: str. The article it comes from.
    """

    qid: str
    question: str
    context: str
    answers: tuple = ()
    is_impossible: bool = False
    title: str = ""


def _expect(value, expected_type, path, where):
    if not isinstance(value, expected_type):
        names = expected_type.__name__ if isinstance(expected_type, type) else "/".join(t.__name__ for t in expected_type)
        raise ValueError(f"{path}: `{where}` must be a {names}; found {type(value).__name__} ({str(value)[:60]!r}).")
    return value


def read_squad(path, limit=None):
    """Reads a SQuAD 1.1 / 2.0 JSON file.

    Args:
        path: str. The file.
        limit: int or None. Keep only the first `limit` questions.

    Returns:
        list of `QAExample`, in file order.

    Raises:
        FileNotFoundError, or ValueError naming `path` and the JSON path of the
        offending value (`data[3].paragraphs[0].qas[2].answers[0].answer_start`),
        or the question id for an answer offset outside its context, or `path`
        alone for a file with no question (`"data": []`).
    """
    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(f"SQuAD file not found: {path}")
    with tf.io.gfile.GFile(path, "rb") as f:
        raw = f.read()
    text = decode_utf8(raw, path)
    try:
        root = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"{path} is not valid JSON: {e.msg} at line {e.lineno} column {e.colno}.") from None
    check_json_escapes(text, path)
    _expect(root, dict, path, "(top level)")
    if "data" not in root:
        raise ValueError(f"{path}: no `data` list at the top level (keys: {sorted(root)[:10]}); not SQuAD format.")
    declared_v2 = _is_v2(root)
    examples, places, unanswered = [], {}, []
    for a, article in enumerate(_expect(root["data"], list, path, "data")):
        where = f"data[{a}]"
        _expect(article, dict, path, where)
        title = article.get("title", "")
        for p, paragraph in enumerate(_expect(article.get("paragraphs"), list, path, f"{where}.paragraphs")):
            pwhere = f"{where}.paragraphs[{p}]"
            _expect(paragraph, dict, path, pwhere)
            context = _expect(paragraph.get("context"), str, path, f"{pwhere}.context")
            for q, qa in enumerate(_expect(paragraph.get("qas"), list, path, f"{pwhere}.qas")):
                qwhere = f"{pwhere}.qas[{q}]"
                _expect(qa, dict, path, qwhere)
                qid = str(_expect(qa.get("id"), (str, int), path, f"{qwhere}.id"))
                question = _expect(qa.get("question"), str, path, f"{qwhere}.question")
                impossible = bool(_expect(qa.get("is_impossible", False), (bool, int), path,
                                          f"{qwhere}.is_impossible"))
                answers = []
                for n, answer in enumerate(_expect(qa.get("answers", []), list, path, f"{qwhere}.answers")):
                    awhere = f"{qwhere}.answers[{n}]"
                    _expect(answer, dict, path, awhere)
                    text = _expect(answer.get("text"), str, path, f"{awhere}.text")
                    start = answer.get("answer_start")
                    if isinstance(start, bool) or not isinstance(start, int):
                        _expect(start, int, path, f"{awhere}.answer_start")
                    if not 0 <= start or start + len(text) > len(context):
                        raise ValueError(
                            f"{path}, question id {qid!r} ({awhere}): answer {text[:40]!r} at character {start} "
                            f"(+{len(text)}) lies outside its context of {len(context)} characters.")
                    answers.append((text, start))
                if impossible:
                    answers = []  # 2.0 files may list plausible answers of an impossible question
                if "is_impossible" in qa:
                    declared_v2 = True
                elif not answers:
                    unanswered.append(f"{qid!r} ({qwhere})")
                places.setdefault(qid, []).append(qwhere)
                examples.append(QAExample(qid, question, context, tuple(answers), impossible or not answers,
                                          title))
                if limit is not None and len(examples) >= limit:
                    return _checked(examples, places, unanswered, declared_v2, path)
    return _checked(examples, places, unanswered, declared_v2, path)


def _is_v2(root):
    """Whether the file's top-level `version` says SQuAD 2.0 ("v2.0", "2.0", 2)."""
    return str(root.get("version", "")).lower().lstrip("v").startswith("2")


def _checked(examples, places, unanswered, declared_v2, path):
    """`examples`, after refusing no question at all, repeated question ids and unanswerable questions in a
    SQuAD 1.1 file."""
    if not examples:
        raise ValueError(f"{path}: no questions (`data` holds no article with a paragraph with a question); "
                         "nothing to train on or score.")
    repeated = {qid: where for qid, where in places.items() if len(where) > 1}
    if repeated:
        shown = "; ".join(f"{qid!r} at {', '.join(where)}" for qid, where in list(repeated.items())[:5])
        raise ValueError(f"{path}: {len(repeated)} question id(s) repeated (ids must be unique; they key the "
                         f"predictions and the score): {shown}{' ...' if len(repeated) > 5 else ''}.")
    if unanswered and not declared_v2:
        raise ValueError(
            f"{path}: question id {unanswered[0]} has no answers, but the file is SQuAD 1.1 (no `\"version\": "
            f"\"v2.0\"`, no `is_impossible` field); {len(unanswered)} such question(s). For SQuAD 2.0, set "
            f"`\"version\": \"v2.0\"` or mark them `\"is_impossible\": true`.")
    return examples


def swap_contexts(examples, seed=0):
    """Unanswerable questions: each question paired with the context of another article.

    No SQuAD 2.0 data is available here, so the unanswerable path is trained and
    tested on these: every question keeps its id (suffixed `_swapped`) and gets a
    context drawn from a different `title`, with no answers and `is_impossible`.

    Args:
        examples: list of `QAExample` from at least two articles.
        seed: int.

    Returns:
        list of `QAExample`, one per input.
    """
    contexts = {}
    for e in examples:
        contexts.setdefault(e.title, [])
        if e.context not in contexts[e.title]:
            contexts[e.title].append(e.context)
    titles = sorted(contexts)
    if len(titles) < 2:
        raise ValueError(f"Need examples from two articles or more to swap contexts; found {titles}.")
    rng = random.Random(seed)
    swapped = []
    for e in examples:
        other = rng.choice([t for t in titles if t != e.title])
        swapped.append(QAExample(f"{e.qid}_swapped", e.question, rng.choice(contexts[other]), (), True, other))
    return swapped


def gold_answers(examples):
    """dict qid -> list of gold answer texts (`[""]` for an unanswerable question, as the official script)."""
    return {e.qid: [text for text, _ in e.answers] or [""] for e in examples}
