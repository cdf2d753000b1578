"""The embedded demo corpus: records parse with the official spec, vocab loads, cache hits."""

import os
import pathlib

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


def test_each_seq_length_is_its_own_folder_built_aside_and_renamed_whole(tmp_path, monkeypatch):
    """Another seq_length builds another folder (the first is left as it was, its corpus and vocabulary
    reused); a run that finds the folder built meanwhile uses it; a failed build leaves nothing behind."""
    from helpers import checksums

    monkeypatch.setattr(demo_corpus, "TARGET_BYTES", 150_000)
    root = tmp_path / "demo"
    first = demo_corpus.build_demo_data(str(root), seq_length=64, vocab_size=2000, num_shards=2)
    folder = pathlib.Path(first["vocab_file"]).parent
    assert folder == pathlib.Path(demo_corpus.build_folder(str(root), 64, 2000, 2)) and folder.parent == root
    before = checksums(root)
    assert demo_corpus.MANIFEST_FILE in {pathlib.Path(p).name for p in before}

    def corpus_unused(*args, **kwargs):
        raise AssertionError("the corpus of the earlier build was not reused")

    monkeypatch.setattr(demo_corpus, "build_demo_corpus", corpus_unused)
    second = demo_corpus.build_demo_data(str(root), seq_length=32, vocab_size=2000, num_shards=2)
    _check(second, 32, 2000)
    assert second["stats"]["cached"] is False and pathlib.Path(second["vocab_file"]).parent != folder
    assert {p: d for p, d in checksums(root).items() if p in before} == before  # the seq_length 64 build unchanged
    assert open(second["vocab_file"]).read() == open(first["vocab_file"]).read()

    # Two runs at once: this one missed the cache, built, and finds the folder there when it renames.
    built = checksums(root)
    calls, cached = [], demo_corpus._cached_stats

    def missed_first(*args):
        calls.append(args)
        return cached(*args) if len(calls) > 1 else None

    monkeypatch.setattr(demo_corpus, "_cached_stats", missed_first)
    third = demo_corpus.build_demo_data(str(root), seq_length=32, vocab_size=2000, num_shards=2)
    assert len(calls) == 2  # the miss, then the folder found at the rename
    assert third["stats"]["cached"] is True and third["vocab_file"] == second["vocab_file"]
    assert checksums(root) == built and not [n for n in os.listdir(root) if n.startswith(".")]

    # A build that fails (or is killed) leaves no folder that looks built, and no staging folder.
    def fails(*args, **kwargs):
        raise RuntimeError("packing failed")

    monkeypatch.setattr(demo_corpus.build_lib, "build_pretraining_data", fails)
    with pytest.raises(RuntimeError, match="packing failed"):
        demo_corpus.build_demo_data(str(root), seq_length=48, vocab_size=2000, num_shards=2)
    assert checksums(root) == built and len(os.listdir(root)) == 2  # the two builds, nothing else


def test_a_seq_length_too_short_for_the_demo_records_is_refused_before_anything_is_built(tmp_path):
    from helpers import checksums, run_python

    demo_dir, model_dir = tmp_path / "demo", tmp_path / "run"
    demo_dir.mkdir()
    (demo_dir / "kept.txt").write_text("an earlier cache file\n")
    before = checksums(demo_dir)
    result = run_python(["-m", "electra_tf.pretrain", "--config", "tiny", "--model_dir", str(model_dir),
                         "--demo_dir", str(demo_dir), "--seq_length", "2"], check=False)
    lines = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert result.returncode == 1 and len(lines) == 1 and "Traceback" not in result.stderr, result.stderr[-3000:]
    assert lines[0].startswith("error: `--seq_length=2` is too short for `--data=demo`") and ">= 5" in lines[0]
    assert demo_corpus.MIN_SEQ_LENGTH == 5
    assert checksums(demo_dir) == before and not model_dir.exists()
