"""Fixtures for the pipeline tests: the shared data (skipped when absent) and a vocabulary."""

import os

import pytest

from pipeline_testdata import BERT_VOCAB, CORPUS_DIR, SAMPLE_TEXT


@pytest.fixture(scope="session")
def vocab_file(tmp_path_factory):
    """The BERT uncased vocabulary when the shared data is there, else one trained here."""
    if os.path.exists(BERT_VOCAB):
        return BERT_VOCAB
    from electra_tf.pipelines import build_vocab

    root = tmp_path_factory.mktemp("vocab")
    text = root / "text.txt"
    text.write_text(SAMPLE_TEXT * 20, encoding="utf-8")
    output = str(root / "vocab.txt")
    build_vocab.build_vocab(str(text), vocab_size=400, output=output, num_unused=5)
    return output


@pytest.fixture(scope="session")
def corpus_dir():
    if not os.path.isdir(CORPUS_DIR):
        pytest.skip(f"shared corpus not found at {CORPUS_DIR}")
    return CORPUS_DIR
