"""The passages `predict --passages` reads (`search.read_passages`): text lines or JSON Lines, told by extension,
else by content; refusals name the file and line."""

import re

import pytest

from electra_tf.tasks.embedding.kind import EmbeddingKind
from electra_tf.tasks.embedding.search import read_passages


def test_passages_are_told_text_or_json_lines_as_the_input_is(tmp_path):
    """`read_passages` (what `predict --passages` reads, after the model loads): by extension, else by content."""
    cases = {"a.txt": ("{braces} in C\nplain\n", ["{braces} in C", "plain"]),
             "b.jsonl": ('{"text": "one"}\n\n{"text": "two"}\n', ["one", "two"]),
             "c.txt": ('{"text": "one"}\n{"text": "two"}\n', ["one", "two"])}  # JSON Lines by content
    for name, (text, expected) in cases.items():
        (tmp_path / name).write_text(text)
        assert read_passages(str(tmp_path / name), EmbeddingKind) == expected, name
    (tmp_path / "d.txt").write_text('{"text": "one"\n{"text": "two"}\n')  # JSON Lines with a damaged first line
    with pytest.raises(ValueError, match=re.escape(f"{tmp_path / 'd.txt'}:1: not valid JSON")):
        read_passages(str(tmp_path / "d.txt"), EmbeddingKind)
    (tmp_path / "e.tsv").write_text("one\ttwo\n")
    with pytest.raises(ValueError, match=re.escape(f"`--passages={tmp_path / 'e.tsv'}` reads as tsv: passages are "
                                                   "text lines or JSON Lines")):
        read_passages(str(tmp_path / "e.tsv"), EmbeddingKind)
    with pytest.raises(FileNotFoundError, match=re.escape(f"`--passages={tmp_path / 'f.txt'}`: file not found.")):
        read_passages(str(tmp_path / "f.txt"), EmbeddingKind)
