"""Embedding task files: JSON Lines and TSV rows, and one error naming the file and line for each bad row."""

import json
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
from helpers import digests, error_line, make_run_dir, run_python, write_vocab  # noqa: E402
from embedding_toy import write_task  # noqa: E402

from electra_tf import tasks  # noqa: E402
from electra_tf.tasks.embedding.data import Pair, read_pairs  # noqa: E402
from electra_tf.tasks.embedding.kind import EmbeddingKind  # noqa: E402
from electra_tf.tasks.embedding.metrics import corpus_of  # noqa: E402

SURROGATE = ("\\ud800 at column 16 is a lone UTF-16 surrogate (half of a pair), which is no character: write the "
             "character itself, or both escapes of its pair.")


def write(path, text):
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_jsonl_and_tsv_rows_with_and_without_hard_negatives(tmp_path):
    rows = [{"query": "q1", "positive": "p1", "negative": "n1"}, {"query": "q2", "positive": "p2", "negative": "n2"}]
    jsonl = write(tmp_path / "a.jsonl", "\n".join(json.dumps(r) for r in rows) + "\n\n")
    tsv = write(tmp_path / "b.tsv", "q1\tp1\r\n\nq2\tp2\n")
    assert read_pairs(jsonl) == [Pair("q1", "p1", "n1", 1), Pair("q2", "p2", "n2", 2)]
    assert read_pairs(tsv) == [Pair("q1", "p1", None, 1), Pair("q2", "p2", None, 3)]
    assert read_pairs(jsonl, limit=1) == [Pair("q1", "p1", "n1", 1)]


@pytest.mark.parametrize("name, text, expected", [
    ("a.jsonl", '{"query": "q", "positive": "p"}\n{"query": "q"}\n', r"a.jsonl:2: no \"positive\" field"),
    ("a.jsonl", '{"query": "q", "positive": "p"}\nnot json\n', r"a.jsonl:2: not valid JSON"),
    ("a.jsonl", '{"query": "q", "positive": 3}\n', r"a.jsonl:1: \"positive\" must be a str"),
    ("a.jsonl", '{"query": " ", "positive": "p"}\n', r"a.jsonl:1: \"query\" is empty"),
    ("a.jsonl", '{"query": "q \\ud83d\\ude00", "positive": "p"}\n{"query": "bad \\ud800", "positive": "p"}\n',
     r"a.jsonl:2: \\ud800 at column 16 is a lone UTF-16 surrogate"),
    ("a.jsonl", '{"query": "q", "positive": "p", "negative": "n"}\n{"query": "q", "positive": "p"}\n',
     r"a.jsonl:2: no negative, but line 1 has one"),
    ("a.tsv", "q\tp\nq\tp\tn\tx\n", r"a.tsv:2: 4 fields"),
    ("a.tsv", "q\tp\nq\tp\tn\n", r"a.tsv:2: a negative, but line 1 has none"),
    ("a.tsv", "\n\n", r"a.tsv: no rows"),
])
def test_a_bad_row_is_named_by_file_and_line(tmp_path, name, text, expected):
    with pytest.raises(ValueError, match=expected.replace("a.", str(tmp_path / "a").replace("\\", "\\\\") + ".")):
        read_pairs(write(tmp_path / name, text))


def test_a_missing_split_names_the_files_looked_for(tmp_path):
    write(tmp_path / "train.jsonl", '{"query": "q", "positive": "p"}\n')
    config = tasks.FinetuneConfig(task="faq", task_kind="embedding", data_dir=str(tmp_path))
    with pytest.raises(FileNotFoundError, match=r"No dev split of task 'faq' .* dev.jsonl, dev.tsv"):
        EmbeddingKind(config)


def test_the_corpus_is_the_distinct_positives_and_a_repeated_query_has_each_of_its_positives():
    queries, passages, relevant = corpus_of([Pair("q1", "p1"), Pair("q2", "p1"), Pair("q1", "p2")])
    assert (queries, passages, relevant) == (["q1", "q2"], ["p1", "p2"], [{0, 1}, {0}])


def test_the_kind_is_registered_with_its_flags():
    assert tasks.get("embedding") is EmbeddingKind
    config = tasks.FinetuneConfig(task="faq", task_kind="embedding", pooling="cls", similarity_scale=10,
                                  normalize_embeddings=False)
    assert (config.pooling, config.similarity_scale, config.normalize_embeddings) == ("cls", 10.0, False)
    assert tasks.FinetuneConfig(epochs=0).epochs == 0
    with pytest.raises(ValueError, match="pooling"):
        tasks.FinetuneConfig(pooling="max")


def test_finetune_names_a_lone_surrogate_in_train_jsonl_by_file_and_line(tmp_path):
    """`{"query": "bad \\ud800"}`: one line naming the file, the line and the column, exit 1, before the model
    loads; no output folder, every file unchanged."""
    vocab = write_vocab(tmp_path / "vocab.txt")
    run = make_run_dir(tmp_path / "pretrained", vocab, embedding_dim=16, hidden_dim=16, num_layers=1,
                       intermediate_dim=32, max_sequence_length=32, seq_length=32)
    data = write_task(tmp_path / "data", splits=(("train", 8), ("dev", 4)))
    train = tmp_path / "data" / "train.jsonl"
    with open(train, "a") as f:
        f.write('{"query": "bad \\ud800", "positive": "the cat lives in the barn"}\n')
    before = digests(tmp_path)
    out = tmp_path / "out"
    result = run_python(["-m", "electra_tf.finetune", "--task_kind", "embedding", "--task", "animals", "--data_dir",
                         data, "--init", run, "--output_dir", str(out), "--epochs", "1", "--batch_size", "4",
                         "--seq_length", "32"], check=False)
    assert error_line(result) == f"error: {train}:9: {SURROGATE}"
    assert digests(tmp_path) == before and not out.exists()
