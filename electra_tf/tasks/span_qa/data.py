"""The span-QA kind's files: a fine-tuning split's questions (`read_split`, SQuAD JSON through `squad.read_squad`)
and `predict`'s inputs (`read_inputs`: SQuAD JSON or JSON Lines)."""

import os

from electra_tf.finetuning.examples import Example, each_line, field, json_object, spooled
from electra_tf.tasks.span_qa import squad

SPLIT_FILES = {"train": "train.json", "dev": "dev.json", "test": "test.json"}



def read_split(config, split, limit):
    """The questions of `split` (`SPLIT_FILES`), with their swapped-context copies under `--swap_contexts`."""
    path = os.path.join(config.data_dir, SPLIT_FILES[split])
    examples = squad.read_squad(path)
    if config.swap_contexts:
        examples = examples + squad.swap_contexts(examples, seed=config.seed)
        examples.sort(key=lambda e: e.qid.replace("_swapped", "~"))  # each question next to its swapped copy
    return examples[:limit * (2 if config.swap_contexts else 1)] if limit else examples



# --- predict's input files ------------------------------------------------------------------------


def read_inputs(name, text, input_format):
    """`predict`'s examples of an input file (`SpanQAKind.read_examples`): SQuAD 1.1 / 2.0 JSON (answers scored), or
    JSON Lines `{"id", "question", "context", "answers"}`."""
    if input_format == "squad":
        return [_qa_example(e.question, e.context, [a for a, _ in e.answers], None, e.qid,
                            f"{name}, question id {e.qid!r}") for e in spooled(name, text, squad.read_squad)]
    return each_line(name, text, lambda line, raw: _json_example(json_object(name, line, raw), name, line))


def _json_example(record, name, line):
    question = field(record, ("question",), name, line)
    context = field(record, ("context",), name, line)
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
    for name, value in (("question", question), ("context", context)):
        if not value.strip():
            raise ValueError(f"{where}: empty {name}" + (f" (question id {qid!r})." if qid else "."))
    return Example({"question": question, "context": context}, answers, line, id=qid)

