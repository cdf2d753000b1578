"""The embedded demo corpus: records parse with the official spec, vocab loads, cache hits."""

import os

import pytest
import tensorflow as tf

from electra_tf.data.tokenizer import WordPieceTokenizer
from electra_tf.pipelines import demo_corpus


def _check(result, seq_length, vocab_size, num_shards=2):
    tokenizer = WordPieceTokenizer(result["vocab_file"])  # validates the special tokens
    assert tokenizer.vocab_size == vocab_size and tokenizer.pad_id == 0
    files = sorted(tf.io.gfile.glob(result["data"]))
    assert len(files) == num_shards
    spec = {n: tf.io.FixedLenFeature([seq_length], tf.int64) for n in ("input_ids", "input_mask", "segment_ids")}
    count = 0
    for record in tf.data.TFRecordDataset(files):
        example = tf.io.parse_single_example(record, spec)
        ids = example["input_ids"].numpy()
        assert ids[0] == tokenizer.cls_id and ids.max() < vocab_size
        count += 1
    assert count == result["stats"]["examples"] > 50
    assert result["stats"]["unknown_token_rate"] < 0.01
    text = open(os.path.join(os.path.dirname(result["vocab_file"]), "corpus.txt"), encoding="utf-8").read()
    assert ">>>" not in text and "\n\n" in text


def test_small_demo_build_and_cache(tmp_path, monkeypatch):
    monkeypatch.setattr(demo_corpus, "TARGET_BYTES", 150_000)
    out = str(tmp_path / "demo")
    first = demo_corpus.build_demo_data(out, seq_length=64, vocab_size=2000, num_shards=2, seed=1)
    assert first["stats"]["cached"] is False
    _check(first, 64, 2000)
    mtimes = {n: os.path.getmtime(os.path.join(out, n)) for n in os.listdir(out)}
    second = demo_corpus.build_demo_data(out, seq_length=64, vocab_size=2000, num_shards=2, seed=1)
    assert second["stats"]["cached"] is True
    assert {k: v for k, v in second.items() if k != "stats"} == {k: v for k, v in first.items() if k != "stats"}
    assert {n: os.path.getmtime(os.path.join(out, n)) for n in os.listdir(out)} == mtimes
    # A different parameter is a miss.
    third = demo_corpus.build_demo_data(out, seq_length=64, vocab_size=2000, num_shards=2, seed=2)
    assert third["stats"]["cached"] is False


@pytest.mark.large
def test_full_demo_build(demo_data):
    """The full build, with the defaults the demo pre-training uses (`conftest.demo_data`, built once per session)."""
    result = demo_data
    _check(result, 128, 8192, num_shards=4)
    assert 2_000_000 <= result["stats"]["bytes"] <= 10_000_000
