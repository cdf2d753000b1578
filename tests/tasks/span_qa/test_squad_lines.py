"""A line ends at `\\n` (or `\\r\\n`) and nowhere else in SQuAD JSON files.

The lines hold the characters `str.splitlines` also breaks at (`helpers.LINE_TEXTS`); the list is the reference.
"""

import json

from electra_tf.tasks.span_qa import squad
from helpers import LINE_TEXTS as TEXTS, write_lines as write


def test_squad_json_holding_the_characters_keeps_its_answers(tmp_path):
    context = " ".join(TEXTS)
    start = context.index("third")
    path = tmp_path / "dev.json"
    path.write_text(json.dumps({"version": "1.1", "data": [{"title": "t", "paragraphs": [{"context": context, "qas": [
        {"id": "q", "question": "Which?", "answers": [{"text": "third", "answer_start": start}]}]}]}]},
        ensure_ascii=False), encoding="utf-8")
    [example] = squad.read_squad(str(path))
    assert (example.context, example.answers) == (context, (("third", start),))

