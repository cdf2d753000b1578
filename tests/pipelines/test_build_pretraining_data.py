"""The Beam builder: serving-tokenizer ids, byte-identical re-runs, crash recovery, bad input."""

import bz2
import gzip
import json
import os

import pytest
import tensorflow as tf

from electra_tf.data.tokenizer import WordPieceTokenizer
from electra_tf.pipelines import build_pretraining_data as build_lib

from pipeline_testdata import IN_MEMORY, SAMPLE_TEXT

MAX_LEN = 64


def _records(output_dir, max_len=MAX_LEN):
    spec = {n: tf.io.FixedLenFeature([max_len], tf.int64) for n in ("input_ids", "input_mask", "segment_ids")}
    files = sorted(tf.io.gfile.glob(os.path.join(output_dir, "pretrain_data.tfrecord-*")))
    return [
        {k: v.numpy() for k, v in tf.io.parse_single_example(r, spec).items()}
        for r in tf.data.TFRecordDataset(files)
    ]


def _shard_bytes(output_dir):
    return {
        name: open(os.path.join(output_dir, name), "rb").read()
        for name in sorted(os.listdir(output_dir))
        if name.startswith("pretrain_data.tfrecord-")
    }


def _build(inputs, vocab_file, output_dir, **kwargs):
    kwargs.setdefault("max_seq_length", MAX_LEN)
    kwargs.setdefault("num_shards", 3)
    return build_lib.build_pretraining_data(inputs, vocab_file, str(output_dir), pipeline_args=IN_MEMORY, **kwargs)


def test_ids_equal_serving_tokenizer(tmp_path, vocab_file):
    # One sentence per document: every example is `[CLS] sentence [SEP]`, exactly what the
    # serving tokenizer's `pack` builds for a single text.
    lines = [s for s in SAMPLE_TEXT.splitlines() if s] + [
        "UPPER lower MiXeD ÅÄÖ ñandú Ελληνικά русский 中文字符 emoji 😀 tab\there.",
        "Hyphen-ated words, (brackets) [square] {curly} $100.00 50% #tag @user e-mail@x.org.",
        "supercalifragilisticexpialidocious " + "x" * 150 + " end.",
    ]
    corpus = tmp_path / "lines.txt"
    corpus.write_text("\n\n".join(lines) + "\n", encoding="utf-8")
    stats = _build(str(corpus), vocab_file, tmp_path / "out", num_shards=2)
    assert stats["documents"] == len(lines) == stats["examples"]
    tokenizer = WordPieceTokenizer(vocab_file)
    expected = tokenizer.pack(lines, seq_length=MAX_LEN)
    expected = sorted(
        zip(*(expected[k].numpy().tolist() for k in ("token_ids", "segment_ids", "padding_mask")))
    )
    got = sorted(
        (r["input_ids"].tolist(), r["segment_ids"].tolist(), r["input_mask"].tolist())
        for r in _records(tmp_path / "out")
    )
    assert got == expected
    assert stats["unknown_token_rate"] > 0  # the 150-character word is [UNK]


def _corpus(tmp_path, docs=40):
    text = "\n\n".join(
        "\n".join(f"Document {d} sentence {s} talks about topic {(d * s) % 7} and more words here."
                  for s in range(3 + d % 9))
        for d in range(docs)
    )
    path = tmp_path / "corpus.txt.gz"
    path.write_bytes(gzip.compress(text.encode("utf-8"), mtime=0))
    return str(path)


def test_rebuild_is_byte_identical(tmp_path, vocab_file):
    corpus = _corpus(tmp_path)
    first = _build(corpus, vocab_file, tmp_path / "a", seed=3)
    _build(corpus, vocab_file, tmp_path / "b", seed=3)
    shards = _shard_bytes(tmp_path / "a")
    assert list(shards) == [f"pretrain_data.tfrecord-{i:05d}-of-00003" for i in range(3)]
    assert shards == _shard_bytes(tmp_path / "b")
    assert sum(1 for _ in tf.data.TFRecordDataset(sorted(tf.io.gfile.glob(str(tmp_path / "a" / "pretrain*"))))) \
        == first["examples"]
    other_seed = _build(corpus, vocab_file, tmp_path / "c", seed=4)
    assert _shard_bytes(tmp_path / "c") != shards and other_seed["examples"] > 0
    stats = json.loads((tmp_path / "a" / "stats.json").read_text())
    assert stats["examples"] == first["examples"] and os.path.exists(tmp_path / "a" / "_SUCCESS")


def test_crash_then_rerun_gives_identical_shards(tmp_path, vocab_file, monkeypatch):
    corpus = _corpus(tmp_path)
    _build(corpus, vocab_file, tmp_path / "ref", num_shards=4)
    reference = _shard_bytes(tmp_path / "ref")

    out = tmp_path / "out"
    out.mkdir()
    # Leftovers of an earlier crashed run: a half-written temp file, a shard of another
    # sharding, a garbage shard under a final name, a stale success marker.
    (out / ".partial-dead0000-pretrain_data.tfrecord-00001-of-00004").write_bytes(b"partial")
    (out / "pretrain_data.tfrecord-00000-of-00002").write_bytes(b"old")
    (out / "pretrain_data.tfrecord-00002-of-00004").write_bytes(b"garbage")
    (out / "_SUCCESS").write_text("")

    from electra_tf import atomic

    real_replace, renames = atomic.replace, []

    def crashing_replace(partial, path):
        if os.path.basename(path).startswith("pretrain_data.tfrecord-"):
            renames.append(path)
            if len(renames) == 3:  # die after two shards reached their final names
                raise RuntimeError("simulated worker crash")
        return real_replace(partial, path)

    monkeypatch.setattr(atomic, "replace", crashing_replace)
    with pytest.raises(Exception, match="simulated worker crash"):
        _build(corpus, vocab_file, out, num_shards=4)
    monkeypatch.setattr(atomic, "replace", real_replace)

    names = os.listdir(out)
    assert "_SUCCESS" not in names and "stats.json" not in names
    assert "pretrain_data.tfrecord-00000-of-00002" not in names
    for name, data in _shard_bytes(out).items():  # a final name only ever holds a whole shard
        assert data == reference[name] or (name == "pretrain_data.tfrecord-00002-of-00004" and data == b"garbage")
    # The failed write removed its temp; each finished shard's counts (`.partial-shard-stats-N.json`) wait for
    # the build that completes the folder.
    assert not [n for n in names if n.startswith(".partial-") and "dead" not in n and "-shard-stats-" not in n]

    _build(corpus, vocab_file, out, num_shards=4)
    assert _shard_bytes(out) == reference
    assert not [n for n in os.listdir(out) if n.startswith((".tmp-", ".partial-"))]
    assert os.path.exists(out / "_SUCCESS")


@pytest.mark.large
def test_cli_with_multiprocessing_runner(tmp_path, vocab_file):
    """The CLI on the default multi-processing DirectRunner gives the in-memory bytes."""
    import subprocess
    import sys

    corpus = _corpus(tmp_path, docs=10)
    _build(corpus, vocab_file, tmp_path / "mem", num_shards=2)
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    result = subprocess.run(
        [sys.executable, "-m", "electra_tf.pipelines.build_pretraining_data", f"--input={corpus}", f"--vocab_file={vocab_file}",
         f"--output_dir={tmp_path / 'mp'}", f"--seq_length={MAX_LEN}", "--num_shards=2",
         "--direct_num_workers=2"],
        cwd=repo, capture_output=True, text=True, timeout=300,
        env=dict(os.environ, PYTHONPATH=repo, TF_CPP_MIN_LOG_LEVEL="2"),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert _shard_bytes(tmp_path / "mp") == _shard_bytes(tmp_path / "mem")


# --- Bad input ---------------------------------------------------------------------------


def test_input_matching_nothing(tmp_path, vocab_file):
    with pytest.raises(ValueError, match="matched no files"):
        _build(str(tmp_path / "missing-*.txt"), vocab_file, tmp_path / "out")


def test_empty_input(tmp_path, vocab_file):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n  \n")
    with pytest.raises(ValueError, match="hold no text"):
        _build(str(empty), vocab_file, tmp_path / "out")
    assert not os.path.exists(tmp_path / "out" / "_SUCCESS")


def test_invalid_utf8_is_replaced_and_counted(tmp_path, vocab_file):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"Good line one.\nBad \xff\xfe bytes \xc3 here.\n\nSecond doc \x80 ok.\n")
    stats = _build(str(path), vocab_file, tmp_path / "out")
    assert stats["invalid_utf8"] == 4  # \xff, \xfe, lone \xc3, lone \x80
    assert stats["documents"] == 2 and stats["examples"] == 2


def test_extremely_long_line(tmp_path, vocab_file):
    path = tmp_path / "long.txt"
    words = " ".join(f"word{i % 50}" for i in range(200_000))
    path.write_text(f"Short intro.\n{words}\n{'z' * 100_000}\nShort outro here.\n", encoding="utf-8")
    stats = _build(str(path), vocab_file, tmp_path / "out")
    records = _records(tmp_path / "out")
    assert len(records) == stats["examples"] >= 1
    assert all(r["input_mask"].sum() <= MAX_LEN for r in records)
    assert stats["truncated_tokens"] > 100_000


def test_truncated_gzip_names_file(tmp_path, vocab_file):
    data = gzip.compress(("A sentence about nothing in particular.\n" * 20000).encode())
    path = tmp_path / "cut.txt.gz"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(Exception, match="cut.txt.gz") as info:
        _build(str(path), vocab_file, tmp_path / "out")
    assert "byte" in str(info.value)


def test_truncated_wikipedia_dump_in_build(tmp_path, vocab_file):
    from test_wikipedia_reader import PAGES, _dump

    data = bz2.compress(_dump(PAGES * 30))
    path = tmp_path / "enwiki-pages-articles-broken.xml.bz2"
    path.write_bytes(data[: len(data) * 2 // 3])
    with pytest.raises(Exception, match="enwiki-pages-articles-broken.xml.bz2"):
        _build(str(path), vocab_file, tmp_path / "out")


def test_vocab_without_mask_fails_before_any_work(tmp_path, vocab_file):
    tokens = [t for t in open(vocab_file, encoding="utf-8").read().splitlines() if t != "[MASK]"]
    bad = tmp_path / "vocab.txt"
    bad.write_text("\n".join(tokens) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"\[MASK\]"):
        _build(_corpus(tmp_path), str(bad), tmp_path / "out")
    assert not os.path.exists(tmp_path / "out")


def test_inspect_decodes_records(tmp_path, vocab_file):
    from electra_tf.pipelines import inspect_records as inspect_lib

    path = tmp_path / "two.txt"
    path.write_text("The cat sat on the mat.\n\nDogs bark loudly at night.\n", encoding="utf-8")
    _build(str(path), vocab_file, tmp_path / "out", num_shards=1)
    decoded = inspect_lib.decode_examples(str(tmp_path / "out" / "pretrain_data*"), vocab_file, num=5)
    assert sorted(d["a"] for d in decoded) == ["dogs bark loudly at night .", "the cat sat on the mat ."]
    assert all(d["b"] == "" for d in decoded)
