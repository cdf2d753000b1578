"""The normalisation record of the tokenizer settings, the previous release's normalisation, BERT's word limit.

References: Python's `unicodedata` (NFKC, `str.casefold`, NFD) for the previous release's
normalisation, transformers' Python port of BERT's tokenizer and the Rust `tokenizers` for the
word limit, which BERT counts in characters.
"""

import json
import unicodedata

import pytest

from helpers import python_bert_tokenizer, run_python, shared_data
from electra_tf.data.tokenizer import (BERT, LEGACY, MAX_CHARS_PER_WORD, SETTINGS_FILE, WordPieceTokenizer,
                                       copy_vocab, new_settings, read_settings, write_settings)

pytestmark = pytest.mark.large  # slow tier: together these tests take minutes

ISSUE_TEXTS = ["ﬁne ǅ İstanbul ß Straße", "é́́ ﬁne Straße was built in 1901."]
MORE_TEXTS = ["Fußach ÉCOLE ½ Ａｂｃ ﬂow x² naïve café", "ΣΟΦΙΑ Ångström ǈubljana"]


def nfkc_casefold(text):
    """ICU's NFKC_Casefold followed by NFD without combining marks, in Python's `unicodedata`."""
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    return "".join(c for c in unicodedata.normalize("NFD", folded) if unicodedata.category(c) != "Mn")


@pytest.fixture
def uncased(tmp_path):
    """The shared BERT vocabulary in a folder of its own (its settings written by each test)."""
    vocab = tmp_path / "vocab" / "vocab.txt"
    vocab.parent.mkdir()
    vocab.write_bytes(shared_data("vocab", "bert_uncased_vocab.txt").read_bytes())
    return vocab


def test_a_settings_file_without_the_record_reads_as_the_previous_releases_normalisation(uncased):
    """`{"lower_case": true, "strip_accents": true}` (what the previous release wrote): NFKC case folding,
    the ids Python's NFKC + casefold + NFD give to BERT's WordPiece; BERT's own normalisation gives others."""
    (uncased.parent / SETTINGS_FILE).write_text(json.dumps({"lower_case": True, "strip_accents": True}))
    assert read_settings(str(uncased)) == new_settings(normalization=LEGACY)
    legacy = WordPieceTokenizer(str(uncased))
    assert (legacy.normalization, legacy.normalization_version) == (LEGACY, 1)
    wordpiece = python_bert_tokenizer(uncased, do_lower_case=False, strip_accents=False)
    texts = ISSUE_TEXTS + MORE_TEXTS
    expected = [wordpiece.encode(nfkc_casefold(t), add_special_tokens=False) for t in texts]
    assert legacy.tokenize(texts).to_list() == expected
    assert wordpiece.convert_ids_to_tokens(expected[0]) == ["fine", "d", "##z", "istanbul", "ss", "st", "##ras",
                                                            "##se"]
    write_settings(str(uncased.parent), {"lower_case": True, "strip_accents": True})  # a new vocabulary's
    assert json.loads((uncased.parent / SETTINGS_FILE).read_text())["normalization"] == BERT
    bert = WordPieceTokenizer(str(uncased))
    assert bert.tokenize(ISSUE_TEXTS).to_list() != expected[:2]
    reference = python_bert_tokenizer(uncased, do_lower_case=True)
    assert bert.tokenize(ISSUE_TEXTS).to_list() == [reference.encode(t, add_special_tokens=False)
                                                    for t in ISSUE_TEXTS]


@pytest.mark.parametrize("lower_case,strip_accents", [(True, False), (False, True)])
def test_the_previous_releases_single_settings_are_kept(uncased, lower_case, strip_accents):
    """One of lower-casing and accent stripping alone: `tf.strings.lower`, or NFD without marks, before
    tensorflow-text's tokenizer, as that release did (Python's `str.lower` / NFD as the reference)."""
    (uncased.parent / SETTINGS_FILE).write_text(json.dumps({"lower_case": lower_case, "strip_accents": strip_accents}))
    if not lower_case:
        (uncased.parent / "vocab.txt").write_text(uncased.read_text() + "Straße\nIstanbul\n")
    legacy = WordPieceTokenizer(str(uncased))
    assert legacy.settings == new_settings(lower_case, strip_accents, normalization=LEGACY)
    texts = ["Straße İstanbul naïve", "Ångström ÉCOLE café"]
    prepared = [t.lower() if lower_case else
                "".join(c for c in unicodedata.normalize("NFD", t) if unicodedata.category(c) != "Mn") for t in texts]
    wordpiece = python_bert_tokenizer(uncased.parent / "vocab.txt", do_lower_case=False, strip_accents=False)
    assert legacy.tokenize(texts).to_list() == [wordpiece.encode(t, add_special_tokens=False) for t in prepared]


def test_copies_keep_the_record_and_contradictions_are_refused(uncased, tmp_path):
    (uncased.parent / SETTINGS_FILE).write_text(json.dumps({"lower_case": True, "strip_accents": True}))
    (tmp_path / "run").mkdir()
    copy_vocab(str(uncased), str(tmp_path / "run" / "vocab.txt"))  # a run's or an export's copy: recorded now
    assert json.loads((tmp_path / "run" / SETTINGS_FILE).read_text()) == new_settings(normalization=LEGACY)
    with pytest.raises(ValueError, match=r"differ from those saved .*'normalization': 'nfkc_casefold'"):
        WordPieceTokenizer(str(uncased), normalization=BERT)
    assert WordPieceTokenizer(str(uncased), normalization=LEGACY).normalization == LEGACY


@pytest.mark.parametrize("record, message", [
    ({"normalization": "icu"}, r"unknown normalization 'icu'"),
    ({"normalization": "bert", "normalization_version": 2}, r"normalization 'bert' version 2 is newer than this electra_tf's \(1\)"),
    ({"normalization": "bert", "normalization_version": "1"}, r"normalization_version must be a whole number"),
])
def test_an_unknown_normalisation_is_refused_naming_the_file(tmp_path, record, message):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("".join(t + "\n" for t in ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a"]))
    (tmp_path / SETTINGS_FILE).write_text(json.dumps({"lower_case": True, "strip_accents": True, **record}))
    with pytest.raises(ValueError, match=f"{SETTINGS_FILE}: {message}"):
        WordPieceTokenizer(str(vocab))


def long_words(letters, lengths):
    return [(letters * (n // len(letters) + 1))[:n] for n in lengths]


LENGTHS = (34, 51, 75, MAX_CHARS_PER_WORD, MAX_CHARS_PER_WORD + 1, 150, 401)


@pytest.mark.parametrize("letters", ["бдбб", "αξα", "कर", "άξ"])
def test_the_word_limit_counts_characters_as_bert(letters):
    """Words of 34-100 Cyrillic, Greek or Devanagari letters (2-3 UTF-8 bytes each) are WordPiece's pieces
    in transformers' Python and Rust tokenizers, 101 and more one [UNK]; `ά` is counted after its accent
    is stripped."""
    tokenizers = pytest.importorskip("tokenizers")
    vocab = shared_data("vocab", "bert_uncased_vocab.txt")
    ours = WordPieceTokenizer(str(vocab))
    port = python_bert_tokenizer(vocab)
    rust = tokenizers.BertWordPieceTokenizer(str(vocab), lowercase=True)
    texts = [f"a {word} b" for word in long_words(letters, LENGTHS)] + [" ".join(long_words(letters, LENGTHS))]
    expected = [port.encode(t, add_special_tokens=False) for t in texts]
    assert [rust.encode(t, add_special_tokens=False).ids for t in texts] == expected
    assert ours.tokenize(texts).to_list() == expected
    unk = port.convert_tokens_to_ids("[UNK]")
    assert [row[1:-1] == [unk] for row in expected[:-1]] == [n > MAX_CHARS_PER_WORD for n in LENGTHS]
    ids, starts, ends = ours.tokenize_with_offsets(texts[:-1])
    for text, row, begin, end in zip(texts, ids.to_list(), starts.to_list(), ends.to_list()):
        if row[1:-1] == [unk]:  # the [UNK] spans the whole word
            assert text.encode()[begin[1]:end[1]].decode() == text[2:-2]


def test_the_build_counts_the_word_limit_in_characters(tmp_path):
    """Through `build_pretraining_data`: the records' token and [UNK] counts are transformers' for a corpus of
    long Cyrillic and Greek words (51-100 letters: pieces; 101 and more: one [UNK])."""
    vocab = shared_data("vocab", "bert_uncased_vocab.txt")
    port = python_bert_tokenizer(vocab)
    lines = [" ".join(long_words(letters, LENGTHS)) + " ." for letters in ("бдбб", "αξα", "кот")] * 2
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(lines[:3]) + "\n\n" + "\n".join(lines[3:]) + "\n")
    run_python(["-m", "electra_tf.pipelines.build_pretraining_data", "--input", str(corpus), "--vocab_file",
                str(vocab), "--output_dir", str(tmp_path / "data"), "--seq_length", "512", "--num_shards", "1",
                "--direct_running_mode=in_memory"])
    stats = json.loads((tmp_path / "data" / "stats.json").read_text())
    pieces = [port.encode(line, add_special_tokens=False) for line in lines]
    unk = port.convert_tokens_to_ids("[UNK]")
    assert stats["tokens"] == sum(len(row) for row in pieces)
    assert round(stats["unknown_token_rate"] * stats["tokens"]) == sum(row.count(unk) for row in pieces) == 3 * 2 * 3
    assert stats["tokenizer"] == new_settings()


def test_convert_to_hf_of_a_previous_release_vocabulary_warns_and_keeps_the_record(tmp_path):
    """`convert --to hf` of an encoder whose vocabulary is the previous release's: transformers' tokenizer will
    normalise otherwise, said on stderr; the folder's own settings keep the old normalisation."""
    from helpers import write_vocab
    from electra_tf.models.encoder import ElectraEncoder

    write_vocab(tmp_path / "vocab.txt", 120)
    (tmp_path / SETTINGS_FILE).write_text(json.dumps({"lower_case": True, "strip_accents": True}))
    encoder = ElectraEncoder(vocab_size=120, num_layers=1, num_heads=2, hidden_dim=16, embedding_dim=16,
                             intermediate_dim=32)
    encoder.build()
    encoder.save(str(tmp_path / "encoder.keras"))
    result = run_python(["-m", "electra_tf.convert", "--from", "keras", "--input", str(tmp_path / "encoder.keras"),
                         "--to", "hf", "--output_dir", str(tmp_path / "hf")])
    assert "record the previous release's normalisation ('nfkc_casefold'" in result.stderr
    assert json.loads((tmp_path / "hf" / SETTINGS_FILE).read_text()) == new_settings(normalization=LEGACY)
    assert json.loads((tmp_path / "hf" / "tokenizer_config.json").read_text())["do_lower_case"] is True


def test_pretraining_refuses_records_of_the_previous_releases_normalisation_with_a_new_vocabulary(tmp_path):
    """A build's `stats.json` without the record (the previous release's) against a vocabulary now read as BERT's:
    refused, naming both normalisations; with the build's own (unrecorded) settings beside the vocabulary, taken."""
    from helpers import write_records
    from electra_tf.config import get_config
    from electra_tf.data.tokenizer import vocab_digest
    from electra_tf.training.pretraining import resolve_data

    data = write_records(tmp_path / "data", num_files=1, num_examples=4)
    vocab = tmp_path / "data" / "vocab.txt"
    (tmp_path / "data" / "stats.json").write_text(json.dumps({
        "vocab_sha256": vocab_digest(str(vocab)), "tokenizer": {"lower_case": True, "strip_accents": True}}))
    config = get_config("tiny", data=data, vocab_file=str(vocab), seq_length=32)
    with pytest.raises(ValueError, match=r"tokenized with .*'normalization': 'nfkc_casefold'.* used with "
                                         r".*'normalization': 'bert'"):
        resolve_data(config, "unused")
    (tmp_path / "data" / SETTINGS_FILE).write_text(json.dumps({"lower_case": True, "strip_accents": True}))
    assert resolve_data(config, "unused").vocab_file == str(vocab)
