"""Tokenizer settings saved beside the vocabulary: read everywhere, each combination equal to HF's BERT tokenizer."""

import json

import pytest

from helpers import write_records
from electra_tf.data.tokenizer import (LEGACY, WordPieceTokenizer, copy_vocab, new_settings, read_settings,
                                       write_settings)

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
    assert ours.settings == new_settings(lower_case, strip_accents)
    reference = tokenizers.BertWordPieceTokenizer(str(vocab), lowercase=lower_case, strip_accents=strip_accents)
    expected = [reference.encode(t, add_special_tokens=False).ids for t in TEXTS]
    assert ours.tokenize(TEXTS).to_list() == expected


def test_a_vocabulary_without_settings_is_uncased_and_copies_carry_them(vocab, tmp_path):
    assert read_settings(str(vocab)) is None
    assert WordPieceTokenizer(str(vocab)).settings == new_settings()
    write_settings(str(vocab.parent), {"lower_case": False, "strip_accents": False})
    (tmp_path / "run").mkdir()
    copy_vocab(str(vocab), str(tmp_path / "run" / "vocab.txt"))
    assert json.loads((tmp_path / "run" / "electra_tokenizer.json").read_text())["lower_case"] is False


def test_contradicting_the_saved_settings_is_an_error_naming_the_file(vocab):
    write_settings(str(vocab.parent), {"lower_case": False, "strip_accents": False})
    with pytest.raises(ValueError, match=r"electra_tokenizer.json: \{'lower_case': False"):
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
                                 "tokenizer": new_settings(lower_case=False)}))
    with pytest.raises(ValueError, match=r"tokenized with \{'lower_case': False"):
        resolve_data(config, "unused")
    write_settings(str(vocab.parent), {"lower_case": False, "strip_accents": False})
    assert resolve_data(config, "unused").vocab_size == len(TOKENS)


def test_hugging_faces_own_tokenizer_config_is_read(tmp_path):
    """A transformers-written folder: its `tokenizer_config.json` gives the casing (it was refused)."""
    transformers = pytest.importorskip("transformers")
    source = tmp_path / "source.txt"
    source.write_text("".join(t + "\n" for t in TOKENS))
    for do_lower_case in (False, True):
        folder = tmp_path / f"hf_{do_lower_case}"
        transformers.BertTokenizer(str(source), do_lower_case=do_lower_case).save_pretrained(str(folder))
        (folder / "vocab.txt").write_text(source.read_text())  # released folders hold it (transformers 5 writes tokenizer.json)
        assert json.loads((folder / "tokenizer_config.json").read_text())["do_lower_case"] is do_lower_case
        vocab = str(folder / "vocab.txt")
        assert read_settings(vocab) == new_settings(do_lower_case)  # Hugging Face's normalisation is BERT's
        reference = transformers.BertTokenizer.from_pretrained(str(folder))
        expected = [reference.convert_tokens_to_ids(reference.tokenize(t)) for t in TEXTS]
        assert WordPieceTokenizer(vocab).tokenize(TEXTS).to_list() == expected
        # copied into a run (fine-tuning output, export assets): the casing goes along under the project's name
        (tmp_path / f"run_{do_lower_case}").mkdir()
        copy_vocab(vocab, str(tmp_path / f"run_{do_lower_case}" / "vocab.txt"))
        copied = WordPieceTokenizer(str(tmp_path / f"run_{do_lower_case}" / "vocab.txt"))
        assert copied.settings["lower_case"] is do_lower_case
        assert copied.tokenize(TEXTS).to_list() == expected


def test_the_project_writes_its_settings_under_its_own_name_and_reads_the_old_one(vocab):
    write_settings(str(vocab.parent), {"lower_case": False, "strip_accents": False})
    assert sorted(p.name for p in vocab.parent.iterdir()) == ["electra_tokenizer.json", "vocab.txt"]
    (vocab.parent / "electra_tokenizer.json").rename(vocab.parent / "tokenizer_config.json")  # electra_tf 0.1's
    assert read_settings(str(vocab)) == new_settings(False)
    (vocab.parent / "tokenizer_config.json").write_text(json.dumps({"lower_case": False, "strip_accents": False}))
    assert read_settings(str(vocab)) == new_settings(False, normalization=LEGACY)  # no record: as written then


@pytest.mark.parametrize("name, settings", [
    ("electra_tokenizer.json", {"lower_case": False, "strip_accents": False}),
    ("tokenizer_config.json", {"lower_case": False}),  # electra_tf 0.1
    ("tokenizer_config.json", {"do_lower_case": False, "tokenizer_class": "BertTokenizer"}),  # Hugging Face's
])
def test_cased_settings_over_a_vocabulary_without_upper_case_are_refused_naming_the_file(tmp_path, name, settings):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("".join(t + "\n" for t in TOKENS if t == t.lower() or t.startswith("[")))
    (tmp_path / name).write_text(json.dumps(settings))
    with pytest.raises(ValueError, match=f"{name}: lower_case false .* has no upper-case piece"):
        read_settings(str(vocab))
    with pytest.raises(ValueError, match="has no upper-case piece"):
        WordPieceTokenizer(str(vocab))
