"""Tokenizer settings saved beside the vocabulary: read everywhere, each combination equal to HF's BERT tokenizer."""

import json

import pytest

from helpers import write_records
from electra_tf.data.tokenizer import WordPieceTokenizer, copy_vocab, read_settings, write_settings

TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "paris", "Paris", "cafe", "café", "Café", "CAFE", "!"]
TEXTS = ["Paris café!", "paris CAFE", "Café Paris"]


@pytest.fixture
def vocab(tmp_path):
    path = tmp_path / "vocab" / "vocab.txt"
    path.parent.mkdir()
    path.write_text("".join(t + "\n" for t in TOKENS))
    return path


@pytest.mark.parametrize("lower_case,strip_accents", [(True, True), (False, False), (True, False), (False, True)])
def test_each_setting_tokenizes_as_hugging_face_bert(vocab, lower_case, strip_accents):
    tokenizers = pytest.importorskip("tokenizers")
    write_settings(str(vocab.parent), {"lower_case": lower_case, "strip_accents": strip_accents})
    ours = WordPieceTokenizer(str(vocab))  # settings read from beside the file
    assert ours.settings == {"lower_case": lower_case, "strip_accents": strip_accents}
    reference = tokenizers.BertWordPieceTokenizer(str(vocab), lowercase=lower_case, strip_accents=strip_accents)
    expected = [reference.encode(t, add_special_tokens=False).ids for t in TEXTS]
    assert ours.tokenize(TEXTS).to_list() == expected


def test_a_vocabulary_without_settings_is_uncased_and_copies_carry_them(vocab, tmp_path):
    assert read_settings(str(vocab)) is None
    assert WordPieceTokenizer(str(vocab)).settings == {"lower_case": True, "strip_accents": True}
    write_settings(str(vocab.parent), {"lower_case": False, "strip_accents": False})
    (tmp_path / "run").mkdir()
    copy_vocab(str(vocab), str(tmp_path / "run" / "vocab.txt"))
    assert json.loads((tmp_path / "run" / "tokenizer_config.json").read_text())["lower_case"] is False


def test_contradicting_the_saved_settings_is_an_error_naming_the_file(vocab):
    write_settings(str(vocab.parent), {"lower_case": False, "strip_accents": False})
    with pytest.raises(ValueError, match=r"tokenizer_config.json: \{'lower_case': False"):
        WordPieceTokenizer(str(vocab), lower_case=True)


def test_pretraining_refuses_records_built_with_another_vocabulary_or_casing(vocab, tmp_path):
    from electra_tf.config import get_config
    from electra_tf.data.tokenizer import vocab_digest
    from electra_tf.training.pretraining import resolve_data

    data = write_records(tmp_path / "data", num_files=1, num_examples=4)
    config = get_config("tiny", data=data, vocab_file=str(vocab), seq_length=32)
    stats = tmp_path / "data" / "stats.json"
    stats.write_text(json.dumps({"vocab_sha256": "0" * 64}))
    with pytest.raises(ValueError, match="built with another vocabulary than `--vocab_file="):
        resolve_data(config, "unused")
    stats.write_text(json.dumps({"vocab_sha256": vocab_digest(str(vocab)),
                                 "tokenizer": {"lower_case": False, "strip_accents": False}}))
    with pytest.raises(ValueError, match=r"tokenized with \{'lower_case': False"):
        resolve_data(config, "unused")
    write_settings(str(vocab.parent), {"lower_case": False, "strip_accents": False})
    assert resolve_data(config, "unused").vocab_size == len(TOKENS)
