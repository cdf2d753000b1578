"""Bad input to the data builders: an earlier build kept, silent failures made loud, files named."""

import gzip
import hashlib
import json
import logging
import os
import pathlib

import pytest

from electra_tf.data.tokenizer import load_vocab
from electra_tf.pipelines import build_pretraining_data as build_lib
from electra_tf.pipelines import build_vocab as vocab_lib
from electra_tf.pipelines import inspect_records as inspect_lib
from electra_tf.pipelines import text_io

from pipeline_testdata import IN_MEMORY, SAMPLE_TEXT


def checksums(folder):
    folder = pathlib.Path(folder)
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _build(inputs, vocab_file, output_dir, **kwargs):
    kwargs.setdefault("max_seq_length", 64)
    return build_lib.build_pretraining_data(inputs, vocab_file, str(output_dir), pipeline_args=IN_MEMORY, **kwargs)


@pytest.fixture
def earlier_build(tmp_path, vocab_file):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(SAMPLE_TEXT * 30, encoding="utf-8")
    _build(str(corpus), vocab_file, tmp_path / "out", num_shards=3)
    return str(corpus), tmp_path / "out"


def test_complete_earlier_build_is_refused_without_overwrite(earlier_build, vocab_file):
    corpus, out = earlier_build
    before = checksums(out)
    with pytest.raises(FileExistsError, match=r"`--output_dir=.*out` holds a complete earlier build .*--overwrite"):
        _build(corpus, vocab_file, out, num_shards=2)
    assert checksums(out) == before


def test_overwrite_keeps_the_earlier_build_when_the_new_one_fails(earlier_build, vocab_file, tmp_path):
    _, out = earlier_build
    before = checksums(out)
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    with pytest.raises(ValueError, match="hold no text"):
        _build(str(empty), vocab_file, out, num_shards=2, overwrite=True)
    assert checksums(out) == before
    assert not [n for n in os.listdir(out) if n.startswith((".tmp-", ".partial-"))]


def test_overwrite_replaces_the_earlier_build_once_the_new_one_succeeded(earlier_build, vocab_file):
    corpus, out = earlier_build
    stats = _build(corpus, vocab_file, out, num_shards=2, overwrite=True)
    names = sorted(os.listdir(out))
    assert names == ["_SUCCESS", "pretrain_data.tfrecord-00000-of-00002", "pretrain_data.tfrecord-00001-of-00002",
                     "stats.json"]
    assert json.loads((out / "stats.json").read_text())["num_shards"] == 2 == stats["num_shards"]


def test_text_without_line_breaks_warns_and_records_truncation_and_empty_shards(tmp_path, vocab_file, caplog):
    one_line = tmp_path / "one_line.txt"
    one_line.write_text(" ".join(f"word{i % 50} of text" for i in range(60_000)), encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        stats = _build(str(one_line), vocab_file, tmp_path / "out", num_shards=4)
    assert stats["examples"] == 1 and stats["truncated_token_share"] > 0.99 and stats["empty_shards"] == 3
    saved = json.loads((tmp_path / "out" / "stats.json").read_text())
    assert saved["warnings"] == stats["warnings"] and len(saved["warnings"]) == 2
    assert "of the word pieces were truncated away" in saved["warnings"][0]
    assert "3 of 4 shards hold no example" in saved["warnings"][1]
    logged = " ".join(r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING)
    assert "truncated away" in logged and "shards hold no example" in logged


def test_corrupt_input_message_is_kept_from_a_runner_traceback(tmp_path, vocab_file, monkeypatch):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(SAMPLE_TEXT)
    buried = "\n".join(["Traceback (most recent call last):"] + [f'  File "beam{i}.py", line {i}' for i in range(448)]
                       + ["electra_tf.pipelines.text_io.CorruptInputError: /data/cut.txt.gz: truncated at byte 123",
                          "RuntimeError: Pipeline failed"])

    def run_pipeline(*args, **kwargs):
        raise RuntimeError(buried)

    monkeypatch.setattr(build_lib, "_run_pipeline", run_pipeline)
    with pytest.raises(text_io.CorruptInputError) as info:
        _build(str(corpus), vocab_file, tmp_path / "out")
    assert str(info.value) == "/data/cut.txt.gz: truncated at byte 123"


def run_builder(*args):
    """The builder's CLI as a user starts it: their environment, TF_CPP_MIN_LOG_LEVEL unset."""
    import subprocess
    import sys

    from helpers import REPO

    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    return subprocess.run([sys.executable, "-m", "electra_tf.pipelines.build_pretraining_data", *args], cwd=REPO,
                          env=dict(env, PYTHONPATH=str(REPO)), capture_output=True, text=True, timeout=600)


@pytest.mark.large
def test_truncated_gzip_through_the_multiprocessing_cli_is_one_line(tmp_path, vocab_file):

    data = gzip.compress(("A sentence about nothing in particular.\n" * 20000).encode())
    (tmp_path / "cut.txt.gz").write_bytes(data[: len(data) // 2])
    result = run_builder("--input", str(tmp_path / "cut.txt.gz"), "--vocab_file", vocab_file,
                         "--output_dir", str(tmp_path / "out"))  # multi-processing: the default
    assert result.returncode == 1
    # The worker's traceback and start-up lines are left out (`cli.quiet_beam_workers`): the file, then one line.
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert lines[-1].startswith("error: Truncated or corrupt input ") and "cut.txt.gz' at byte" in lines[-1]
    assert "Building from 1 files" in lines[0] and len(lines) <= 4, lines  # + "Reading ..." from a worker
    assert not [line for line in lines if "Traceback" in line or "apache_beam" in line or "oneDNN" in line]


@pytest.mark.large
def test_the_multiprocessing_cli_prints_its_progress_and_no_worker_noise(tmp_path, vocab_file):
    """A good build with Beam's worker processes: the builder's own lines only (was about 90 lines of Beam's)."""
    (tmp_path / "corpus.txt").write_text(SAMPLE_TEXT * 50, encoding="utf-8")
    result = run_builder("--input", str(tmp_path / "corpus.txt"), "--vocab_file", vocab_file,
                         "--output_dir", str(tmp_path / "out"), "--num_shards", "2",
                         "--direct_running_mode=multi_processing", "--direct_num_workers=2")
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads(result.stdout)["examples"] > 0 and (tmp_path / "out" / "_SUCCESS").exists()
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    own = ("build_pretraining_data.py:", "INFO:absl:Reading ", "INFO:absl:Read ", "INFO:absl:Wrote ",
           "INFO:absl:TokenizeAndPack: ")
    assert [line for line in lines if not any(text in line for text in own)] == []
    assert sum("INFO:absl:Wrote " in line for line in lines) == 2  # each shard once (not again as a relayed copy)


def test_build_vocab_on_an_empty_corpus_writes_nothing(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n \n")
    with pytest.raises(ValueError, match=r"hold no text: no vocabulary can be learned"):
        vocab_lib.build_vocab(str(empty), vocab_size=200, output=str(tmp_path / "v" / "vocab.txt"))
    assert not (tmp_path / "v").exists()


def test_binary_vocabulary_names_the_file(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_bytes(b"[PAD]\n\xff\xfe\x00binary\n")
    with pytest.raises(ValueError, match=r"vocab.txt:2: not UTF-8 \(byte 0xff at column 1\)"):
        load_vocab(str(path))


def test_inspect_records_with_other_feature_names_names_the_file(tmp_path, vocab_file):
    from helpers import write_records

    data = write_records(tmp_path / "data", num_files=2, features=("ids", "mask", "segments"))
    with pytest.raises(ValueError, match=r"records-0.tfrecord: records lack feature\(s\) \['input_ids', "):
        inspect_lib.decode_examples(data, vocab_file, num=2)
