"""SQuAD files as fine-tuning reads them: a 2.0 file's unanswerable questions (its refusals of bad files:
tests/finetuning/test_bad_input_readers.py, through the command)."""

import json

from electra_tf.tasks.span_qa.squad import read_squad


def squad(qas, version="1.1"):
    context = "John lives in Paris. Mary lives in London."
    return {"version": version, "data": [{"title": "t", "paragraphs": [{"context": context, "qas": qas}]}]}


def question(qid, answer="Paris", **extra):
    answers = [{"text": answer, "answer_start": 14 if answer == "Paris" else 35}] if answer else []
    return {"id": qid, "question": "Where does John live?", "answers": answers, **extra}


def test_squad2_questions_without_answers_are_read(tmp_path):
    """Declared 2.0 (the version field, or an `is_impossible` field): unanswerable questions are read."""
    for name, content in (("v2.json", squad([question("a"), question("b", answer=None)], version="v2.0")),
                          ("field.json", squad([question("a"), question("b", answer=None, is_impossible=True)]))):
        (tmp_path / name).write_text(json.dumps(content))
        examples = read_squad(str(tmp_path / name))
        assert [e.is_impossible for e in examples] == [False, True]
