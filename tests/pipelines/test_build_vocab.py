"""WordPiece vocabulary training: layout, determinism, agreement with the tokenizer."""

import pytest

from electra_tf.data.tokenizer import WordPieceTokenizer, load_vocab
from electra_tf.pipelines import build_vocab

from pipeline_testdata import SAMPLE_TEXT


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    path = tmp_path_factory.mktemp("vocab") / "text.txt"
    words = SAMPLE_TEXT * 5 + "\n".join(
        f"Sentence {i} mentions tokenization, detokenization and retokenizing." for i in range(200)
    )
    path.write_text(words, encoding="utf-8")
    return str(path)


def test_layout_and_special_tokens(tmp_path, corpus):
    output = str(tmp_path / "vocab.txt")
    vocab = build_vocab.build_vocab(corpus, vocab_size=300, output=output, num_unused=10)
    assert load_vocab(output) == vocab
    assert len(vocab) == 300 and len(set(vocab)) == 300
    assert vocab[:15] == ["[PAD]"] + [f"[unused{i}]" for i in range(10)] + ["[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    assert "##s" in vocab and "e" in vocab
    assert all(t == t.lower() for t in vocab[15:])  # lower_case=True
    assert "é" not in vocab and "ü" not in vocab  # accents stripped, as the tokenizer does


def test_deterministic(tmp_path, corpus):
    """Same bytes in this process and in a fresh one (the Rust trainer's hash seeds differ)."""
    import os
    import subprocess
    import sys

    from pipeline_testdata import REPO

    a = build_vocab.build_vocab(corpus, vocab_size=300, output=str(tmp_path / "a.txt"))
    b = build_vocab.build_vocab(corpus, vocab_size=300, output=str(tmp_path / "b.txt"))
    assert a == b
    subprocess.run(
        [sys.executable, "-m", "electra_tf.pipelines.build_vocab", f"--input={corpus}", "--vocab_size=300",
         f"--vocab_file={tmp_path / 'c.txt'}"],
        cwd=REPO, env=dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL="2"), check=True,
        capture_output=True,
    )
    assert (tmp_path / "a.txt").read_bytes() == (tmp_path / "c.txt").read_bytes()
    assert (tmp_path / "a.txt").read_bytes() == (tmp_path / "b.txt").read_bytes()


def test_tokenizer_uses_learned_pieces(tmp_path, corpus):
    output = str(tmp_path / "vocab.txt")
    build_vocab.build_vocab(corpus, vocab_size=400, output=output, num_unused=0)
    tokenizer = WordPieceTokenizer(output)
    ids = tokenizer.tokenize(["Tokenization and detokenization."]).to_list()[0]
    pieces = [tokenizer.vocab[i] for i in ids]
    assert "[UNK]" not in pieces
    assert "".join(p[2:] if p.startswith("##") else " " + p for p in pieces).strip() == \
        "tokenization and detokenization ."


def test_too_small(tmp_path, corpus):
    with pytest.raises(ValueError, match="vocab_size"):
        build_vocab.build_vocab(corpus, vocab_size=50, output=str(tmp_path / "v.txt"), num_unused=100)
