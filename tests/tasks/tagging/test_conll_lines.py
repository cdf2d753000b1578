"""A line ends at `\\n` (or `\\r\\n`) and nowhere else in CoNLL files.

The lines hold the characters `str.splitlines` also breaks at (`helpers.LINE_TEXTS`); the list is the reference.
"""

import pytest

from electra_tf.predicting.inputs import read_examples
from electra_tf.tasks.tagging import conll
from electra_tf.tasks.tagging.kind import TaggingKind
from helpers import LINE_TEXTS as TEXTS, write_lines as write


def conll_lines():
    """CoNLL lines whose words hold the breaking characters, the (line, word, tag) of each word, the line of
    each sentence's first word."""
    lines = ["-DOCSTART- -X- O", ""]
    words, starts = [], []
    for i, text in enumerate(TEXTS):
        starts.append(len(lines) + 1)
        for word in text.split(" "):
            lines.append(f"{word} NN {'B-PER' if i else 'O'}")
            words.append((len(lines), word, "B-PER" if i else "O"))
        lines.append("")
    return lines, words, starts


@pytest.mark.parametrize("end", ["\n", "\r\n"])
def test_conll_words_keep_the_characters_and_their_lines_in_predict_and_fine_tuning(tmp_path, end):
    lines, words, starts = conll_lines()
    path = write(tmp_path / "dev.txt", lines, end)  # told by content, as CoNLL-2003's own .txt files
    sentences = conll.read_conll(path, scheme="IOB2")
    assert [(line, word, tag) for s in sentences for line, word, tag in zip(s.lines, s.words, s.tags)] == words
    settings = {"label_names": ["O", "B-PER", "I-PER"], "spans": True}
    examples = read_examples(path, "auto", TaggingKind, settings)
    assert [e.words for e in examples] == [t.split(" ") for t in TEXTS]
    assert [e.line for e in examples] == starts == [3, 8, 10]

