"""CoNLL reader, tag schemes and label sets, against hand-written files and seqeval's span reading."""

import logging
import random
import re

import pytest
from seqeval.metrics.sequence_labeling import get_entities

from electra_tf.tasks.tagging import conll

CONLL_TEXT = """-DOCSTART- -X- -X- O

EU NNP B-NP I-ORG
rejects VBZ B-VP O
German JJ B-NP I-MISC
call NN I-NP O

Peter NNP B-NP I-PER
Blackburn NNP I-NP I-PER


-DOCSTART- -X- -X- O
S.\tNNP\tB-NP\tI-LOC
Africa NNP I-NP I-LOC
Lions NNP B-NP B-LOC
"""


def write(tmp_path, text, name="eng.train"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_reads_sentences_docstart_blank_lines_and_line_numbers(tmp_path):
    path = write(tmp_path, CONLL_TEXT)
    sentences = conll.read_conll(path, scheme="IOB1")
    assert [s.words for s in sentences] == [
        ("EU", "rejects", "German", "call"), ("Peter", "Blackburn"), ("S.", "Africa", "Lions")]
    # IOB1 -> IOB2 by hand: I- after O starts a span; B- splits two adjacent LOC spans.
    assert [s.tags for s in sentences] == [
        ("B-ORG", "O", "B-MISC", "O"), ("B-PER", "I-PER"), ("B-LOC", "I-LOC", "B-LOC")]
    assert [s.lines for s in sentences] == [(3, 4, 5, 6), (8, 9), (13, 14, 15)]
    assert sentences[0].path == path


def test_token_and_label_columns(tmp_path):
    path = write(tmp_path, CONLL_TEXT)
    chunks = conll.read_conll(path, token_column=0, label_column=2, scheme="IOB2")
    assert chunks[0].tags == ("B-NP", "B-VP", "B-NP", "I-NP")
    pos = conll.read_conll(path, token_column=-4, label_column=1, scheme=None)
    assert pos[2].words == ("S.", "Africa", "Lions") and pos[2].tags == ("NNP", "NNP", "NNP")


def test_a_limit_reads_the_first_sentences_and_not_the_lines_after_them(tmp_path):
    broken_later = CONLL_TEXT.replace("Lions NNP B-NP B-LOC", "Lions B-LOC")  # sentence 3: a line of 2 columns
    path = write(tmp_path, broken_later)
    full = conll.read_conll(path, scheme="IOB1", limit=2)
    assert [s.words for s in full] == [("EU", "rejects", "German", "call"), ("Peter", "Blackburn")]
    assert [s.tags for s in full] == [("B-ORG", "O", "B-MISC", "O"), ("B-PER", "I-PER")]
    with pytest.raises(ValueError, match=re.escape(f"{path}:15: 2 columns")):
        conll.read_conll(path, scheme="IOB1", limit=3)


def test_wrong_column_count_names_file_and_line(tmp_path):
    path = write(tmp_path, CONLL_TEXT.replace("Blackburn NNP I-NP I-PER", "Blackburn NNP I-PER"))
    with pytest.raises(ValueError, match=re.escape(f"{path}:9: 3 columns, but the first data line (3) has 4")):
        conll.read_conll(path)


@pytest.mark.parametrize("text", ["", "\n\n", "-DOCSTART- -X- -X- O\n\n"])
def test_empty_file_is_an_error(tmp_path, text):
    path = write(tmp_path, text)
    with pytest.raises(ValueError, match=re.escape(f"{path}: no words")):
        conll.read_conll(path)


def test_missing_file_and_bad_column_and_bad_tag(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.txt"):
        conll.read_conll(str(tmp_path / "nope.txt"))
    path = write(tmp_path, CONLL_TEXT)
    with pytest.raises(ValueError, match=re.escape(f"{path}:3: `label_column=4`")):
        conll.read_conll(path, label_column=4)
    with pytest.raises(ValueError, match=re.escape(f"{path}:3: 'NNP' is not a IOB2 tag")):
        conll.read_conll(path, label_column=1)
    bioes_in_iob2 = write(tmp_path, "a X S-PER\nb X O\n", "bioes.txt")
    with pytest.raises(ValueError, match=re.escape(f"{bioes_in_iob2}:1: 'S-PER' is not a IOB2 tag")):
        conll.read_conll(bioes_in_iob2)
    assert conll.read_conll(bioes_in_iob2, scheme="BIOES")[0].tags == ("B-PER", "O")


def test_ill_formed_iob2_i_starting_a_span_is_converted_with_a_warning(tmp_path, caplog):
    path = write(tmp_path, "a I-PER\nb I-PER\nc O\nd B-LOC\ne I-LOC\nf I-ORG\n")
    with caplog.at_level(logging.WARNING):
        sentences = conll.read_conll(path, scheme="IOB2")
    assert sentences[0].tags == ("B-PER", "I-PER", "O", "B-LOC", "I-LOC", "B-ORG")
    assert f"{path}: 2 I- tag(s) start a span (ill-formed IOB2), first at line 1" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        conll.read_conll(path, scheme="IOB1")  # the normal IOB1 start: no warning
    assert "ill-formed" not in caplog.text


@pytest.mark.parametrize("tags, source, expected", [
    (["I-PER", "I-PER", "B-PER", "O", "I-LOC", "I-ORG"], "IOB1",
     ["B-PER", "I-PER", "B-PER", "O", "B-LOC", "B-ORG"]),
    (["B-PER", "I-PER", "O", "I-LOC"], "IOB2", ["B-PER", "I-PER", "O", "B-LOC"]),
    (["S-LOC", "B-PER", "I-PER", "E-PER", "E-PER", "I-PER", "O", "E-ORG"], "BIOES",
     ["B-LOC", "B-PER", "I-PER", "I-PER", "B-PER", "B-PER", "O", "B-ORG"]),
])
def test_convert_scheme_hand_cases(tags, source, expected):
    assert conll.convert_scheme(tags, source) == expected


def test_iob2_to_bioes_hand_case():
    tags = ["B-PER", "I-PER", "I-PER", "B-PER", "O", "B-LOC", "B-ORG", "I-ORG"]
    assert conll.convert_scheme(tags, "IOB2", "BIOES") == [
        "B-PER", "I-PER", "E-PER", "S-PER", "O", "S-LOC", "B-ORG", "E-ORG"]


def random_tags(rng, prefixes, length, types=("PER", "LOC", "ORG")):
    """Any tag sequence, well-formed or not."""
    return [rng.choice(["O"] + [f"{p}-{t}" for p in prefixes for t in types]) for _ in range(length)]


@pytest.mark.parametrize("source", conll.SCHEMES)
def test_conversion_keeps_the_spans_seqeval_reads(source):
    rng = random.Random(source)
    for _ in range(2000):
        tags = random_tags(rng, "BIES" if source == "BIOES" else "BI", rng.randint(0, 12))
        iob2 = conll.convert_scheme(tags, source)
        assert get_entities(iob2) == get_entities(tags), tags
        assert all(t == "O" or t[0] in "BI" for t in iob2)
        bioes = conll.convert_scheme(tags, source, "BIOES")
        assert get_entities(bioes) == get_entities(tags), tags
        assert conll.convert_scheme(bioes, "BIOES") == iob2


def test_convert_scheme_rejects_unknown_tags_and_schemes():
    with pytest.raises(ValueError, match="'E-PER' is not a IOB1 tag"):
        conll.convert_scheme(["E-PER"], "IOB1")
    with pytest.raises(ValueError, match="`source=.IOB3.`"):
        conll.convert_scheme([], "IOB3")
    with pytest.raises(ValueError, match="`target=.IOB1.`"):
        conll.convert_scheme([], "IOB2", "IOB1")


def test_label_set_is_sorted_with_o_first():
    sentences = [conll.Sentence(("a",) * 4, ("I-PER", "B-PER", "O", "B-LOC")),
                 conll.Sentence(("a",), ("B-MISC",))]
    assert conll.label_set(sentences) == ["O", "B-LOC", "B-MISC", "B-PER", "I-PER"]
    assert conll.label_set(sentences[::-1]) == ["O", "B-LOC", "B-MISC", "B-PER", "I-PER"]
    assert conll.label_set(sentences, spans=True) == [
        "O", "B-LOC", "B-MISC", "B-PER", "I-LOC", "I-MISC", "I-PER"]
    assert conll.label_set([conll.Sentence(("a", "b"), ("VB", "DT"))]) == ["DT", "VB"]


def test_labels_file_and_unknown_label_error(tmp_path):
    labels_file = write(tmp_path, "O\nB-PER\nI-PER\n\n", "labels.txt")
    labels = conll.read_labels(labels_file)
    assert labels == ["O", "B-PER", "I-PER"]
    path = write(tmp_path, CONLL_TEXT)
    sentences = conll.read_conll(path, scheme="IOB1")
    ids = conll.encode_labels(sentences[1:2], labels)
    assert ids[0].tolist() == [1, 2]
    with pytest.raises(ValueError, match=re.escape(f"{path}:3: label 'B-ORG' is not in the label set")):
        conll.encode_labels(sentences, labels)
    repeated = write(tmp_path, "O\nB-PER\nO\n", "repeated.txt")
    with pytest.raises(ValueError, match=re.escape(f"{repeated}:3: label 'O' repeated")):
        conll.read_labels(repeated)


def test_task_reads_labels_file_or_train_split(tmp_path):
    write(tmp_path, CONLL_TEXT, "eng.train")
    write(tmp_path, CONLL_TEXT, "eng.testa")
    task = conll.CONLL2003
    assert task.path(str(tmp_path), "dev").endswith("eng.testa")
    assert task.labels(str(tmp_path)) == [
        "O", "B-LOC", "B-MISC", "B-ORG", "B-PER", "I-LOC", "I-MISC", "I-ORG", "I-PER"]
    write(tmp_path, "O\nB-LOC\nI-LOC\n", "labels.txt")
    assert task.labels(str(tmp_path)) == ["O", "B-LOC", "I-LOC"]
    with pytest.raises(FileNotFoundError, match="eng.testb"):
        task.path(str(tmp_path), "test")


def test_real_conll2003(conll2003_dir):
    train = conll.CONLL2003.read(conll2003_dir, "train")
    dev = conll.CONLL2003.read(conll2003_dir, "dev")
    # Published sizes of eng.train / eng.testa (Tjong Kim Sang & De Meulder 2003, Table 1).
    assert (len(train), sum(len(s.words) for s in train)) == (14041, 203621)
    assert (len(dev), sum(len(s.words) for s in dev)) == (3250, 51362)
    assert sum(len(get_entities(list(s.tags))) for s in dev) == 5942
    assert sum(len(get_entities(list(s.tags))) for s in train) == 23499
    # The fetched copy is IOB2 already: reading it as IOB1 changes nothing.
    as_iob2 = conll.read_conll(conll.CONLL2003.path(conll2003_dir, "dev"), scheme="IOB2")
    assert [s.tags for s in as_iob2] == [s.tags for s in dev]
    labels = conll.CONLL2003.labels(conll2003_dir, train)
    assert labels == ["O", "B-LOC", "B-MISC", "B-ORG", "B-PER", "I-LOC", "I-MISC", "I-ORG", "I-PER"]
    assert sum(len(ids) for ids in conll.encode_labels(dev, labels)) == 51362


# Every character Python counts as whitespace, the line ends of `str.splitlines` among them.
WHITESPACE = [chr(c) for c in range(0x3001) if chr(c).isspace() and chr(c) not in "\n\r"]


@pytest.mark.parametrize("gap", WHITESPACE, ids=[f"U+{ord(c):04X}" for c in WHITESPACE])
def test_columns_split_at_the_same_whitespace_with_or_without_a_line_end_character_in_the_file(tmp_path, gap):
    # A file without any of `NOT_LINE_ENDS` is split by `str.split`, one with one by a regular expression
    # (`line_columns`). The reference: each line split at `[^\S<the line ends of str.splitlines>]+`, written here.
    gap_pattern = re.compile("[^\\S\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]+")
    lines = [f"Pe{gap}ter NNP I-PER", f"Black{gap}burn NNP\tI-PER", "", f"Ger{gap}man JJ  I-MISC"]
    for name, extra in (("plain.train", []), ("with_form_feed.train", ["", f"Vi\x0cen{gap}na NNP B-LOC"])):
        text = "\n".join(lines + extra) + "\n"
        rows = [[c for c in gap_pattern.split(line) if c] for line in text.split("\n")]
        sentences = conll.read_conll(write(tmp_path, text, name), scheme=None)
        expected = [(row[0], row[-1]) for row in rows if row]
        assert [(w, t) for s in sentences for w, t in zip(s.words, s.tags)] == expected
        assert {len(row) for row in rows if row} == {4 if gap_pattern.match(gap) else 3}
