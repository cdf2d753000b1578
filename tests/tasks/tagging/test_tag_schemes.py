"""The tag scheme of a CoNLL file told from its tags (`--tag_scheme auto`), CoNLL-2003's own IOB1 included."""

from electra_tf.tasks.tagging import conll
from toy_tasks import CONLL_IOB1 as IOB1


def test_the_scheme_is_detected_from_the_file(tmp_path):
    for i, (text, scheme) in enumerate(((IOB1, "IOB1"), ("a B-PER\nb I-PER\nc O\n", "IOB2"),
                                        ("a S-PER\nb O\n", "BIOES"), ("a B-PER\nb I-LOC\n", "IOB1"),
                                        ("a B-PER\n\nb I-PER\n", "IOB1"))):  # the last: I- opens a sentence
        path = tmp_path / f"{i}.txt"
        path.write_text(text)
        written = conll.read_conll(str(path), scheme=None)  # the tags as written
        found = conll.detect_scheme([pair for s in written for pair in [(None, "O"), *zip(s.lines, s.tags)]])
        assert found[0] == scheme, (text, found)
    assert [s.tags for s in conll.read_conll(str(tmp_path / "0.txt"), scheme="auto")][1] == (
        "B-LOC", "B-LOC", "O", "B-PER", "O", "B-PER", "I-PER")
