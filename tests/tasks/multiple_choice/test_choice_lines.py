"""A line ends at `\\n` (or `\\r\\n`) and nowhere else in multiple-choice CSV and JSON Lines files.

The lines hold the characters `str.splitlines` also breaks at (`helpers.LINE_TEXTS`); the list is the reference.
"""

import json

import pytest

from electra_tf.tasks.multiple_choice.data import read_questions
from helpers import LINE_TEXTS as TEXTS, write_lines as write


@pytest.mark.parametrize("end", ["\n", "\r\n"])
def test_multiple_choice_files_give_a_question_per_line(tmp_path, end):
    jsonl = write(tmp_path / "dev.jsonl", [json.dumps({"question": t, "choices": [t, "no"], "answer": 1},
                                                      ensure_ascii=False) for t in TEXTS], end)
    assert [(q.line, q.context, q.choices) for q in read_questions(jsonl)] == [
        (i, t, (t, "no")) for i, t in enumerate(TEXTS, 1)]
    swag = write(tmp_path / "val.csv", ["sent1,sent2,ending0,ending1,label", f'"{TEXTS[0]}{end}{TEXTS[1]}",s,a,b,0',
                                        f"{TEXTS[2]},s,a,b,1"], end)
    assert [(q.line, q.context, q.label) for q in read_questions(swag)] == [
        (2, TEXTS[0] + end + TEXTS[1], 0), (4, TEXTS[2], 1)]


@pytest.mark.parametrize("text,line", [
    ('sent1,sent2,ending0,ending1\na,b,c,d\n"open,b,c,d\ne,f,g,h\ni,j,k,l\n', 3),
    ('sent1,sent2,ending0,ending1\na,b,c,"open\ne,f,g,h\n', 2),
])
def test_a_quote_never_closed_is_named_by_the_line_it_opens_on(tmp_path, text, line):
    path = tmp_path / "val.csv"
    path.write_text(text)
    with pytest.raises(ValueError, match=rf"^{path}:{line}: a quote opened in the record that starts on this line is "
                                         r"never closed \(the file ends inside the quoted field\)\.$"):
        read_questions(str(path))

