"""Readers: BERT text files, books, sentence splitting, several sources in one build."""

import bz2
import gzip

import pytest

from electra_tf.pipelines import books
from electra_tf.pipelines import build_pretraining_data as build_lib
from electra_tf.pipelines import sentences
from electra_tf.pipelines import sources
from electra_tf.pipelines import text_files
from electra_tf.pipelines import text_io

from pipeline_testdata import IN_MEMORY


def test_split_sentences():
    text = ('Mr. Smith went to Washington D.C. on Monday. He met Dr. J. R. Jones at 5 p.m. and left! '
            '"Was it worth it?" she asked. See No. 5 for details. Prices rose 3.5 percent.\nThe end.')
    assert sentences.split_sentences(text) == [
        "Mr. Smith went to Washington D.C. on Monday.",
        "He met Dr. J. R. Jones at 5 p.m. and left!",
        '"Was it worth it?" she asked.',
        "See No. 5 for details.",
        "Prices rose 3.5 percent.",
        "The end.",
    ]


def test_text_files_documents_and_compression(tmp_path):
    text = "First sentence.\nSecond one.\n\n\nOther doc.\n  \nThird doc line.\n"
    for name, data in (("a.txt", text.encode()), ("a.txt.gz", gzip.compress(text.encode())),
                       ("a.txt.bz2", bz2.compress(text.encode()))):
        (tmp_path / name).write_bytes(data)
        docs = list(text_files.read_text_file(str(tmp_path / name), key="k"))
        assert [d.sentences for d in docs] == [["First sentence.", "Second one."], ["Other doc."], ["Third doc line."]]
        assert [d.key for d in docs] == ["k:0", "k:1", "k:2"]


def test_book_is_one_sentence_split_document(tmp_path):
    (tmp_path / "book.txt").write_text(
        "CHAPTER I.\n\nIt was a dark and stormy\nnight. The rain fell in torrents.\n\n"
        "Except at occasional intervals, it was checked.\n", encoding="utf-8")
    (doc,) = books.read_book(str(tmp_path / "book.txt"), key="book")
    assert doc.sentences == ["CHAPTER I.", "It was a dark and stormy night.", "The rain fell in torrents.",
                             "Except at occasional intervals, it was checked."]


def test_expand_inputs_formats_and_errors(tmp_path):
    (tmp_path / "books").mkdir()
    (tmp_path / "books" / "b1.txt").write_text("A book sentence here. Another one.\n")
    (tmp_path / "t.txt").write_text("x\n")
    (tmp_path / "enwiki-pages-articles1.xml.bz2").write_bytes(b"")
    files = sources.expand_inputs(
        [str(tmp_path / "books"), f"{tmp_path}/t.txt,{tmp_path}/enwiki-pages-articles1.xml.bz2"])
    assert [(f.format, f.key) for f in files] == [
        ("books", "books/b1.txt"), ("text", "t.txt"), ("wikipedia", "enwiki-pages-articles1.xml.bz2")]
    with pytest.raises(ValueError, match="matched no files"):
        sources.expand_inputs(f"text:{tmp_path}/nothing*.txt")


def test_mixed_sources_in_one_build(tmp_path, vocab_file):
    from test_wikipedia_reader import PAGES, _dump

    (tmp_path / "books").mkdir()
    (tmp_path / "books" / "novel.txt").write_text(
        "It was the best of times. It was the worst of times.\n\nIt was the age of wisdom.\n")
    (tmp_path / "news.txt").write_text("Stocks rose today.\nBonds fell.\n\nRain is expected.\n")
    (tmp_path / "enwiki-pages-articles1.xml.bz2").write_bytes(bz2.compress(_dump(PAGES)))
    inputs = [f"books:{tmp_path}/books", f"text:{tmp_path}/news.txt",
              f"wikipedia:{tmp_path}/enwiki-*.xml.bz2"]
    stats = build_lib.build_pretraining_data(inputs, vocab_file, str(tmp_path / "out"), max_seq_length=32,
                                             num_shards=2, pipeline_args=IN_MEMORY)
    per_source = stats["per_source"]
    assert sorted(per_source) == sorted(inputs)
    assert per_source[inputs[0]]["documents"] == 1 and per_source[inputs[0]]["sentences"] == 3
    assert per_source[inputs[1]]["documents"] == 2 and per_source[inputs[1]]["sentences"] == 3
    assert per_source[inputs[2]]["documents"] == 2
    assert stats["documents"] == 5
    assert stats["examples"] == sum(s["examples"] for s in per_source.values())


def reference_text_documents(data):
    """The BERT text convention read line by line (independent of `text_files`): per document, its
    stripped sentences, invalid UTF-8 count and bytes (its lines with their newlines, up to and
    including the blank line that ends it; blank lines before it count towards it)."""
    docs, sentences, invalid, size = [], [], 0, 0
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    for raw in lines:
        text, bad = text_io.decode_utf8(raw)
        size += len(raw) + 1
        invalid += bad
        if text.strip():
            sentences.append(text.strip())
        elif sentences:
            docs.append((sentences, invalid, size))
            sentences, invalid, size = [], 0, 0
    if sentences:
        docs.append((sentences, invalid, size - (0 if data.endswith(b"\n") else 1)))
    return docs


def random_text(rng, num_lines):
    pieces = ["word", "Ünïcode", "中文", "\t", " ", "\u00a0", "\u3000", "\r", ".", "\x1f", "\x00"]
    lines = []
    for _ in range(num_lines):
        kind = rng.random()
        if kind < 0.15:
            lines.append(b"")
        elif kind < 0.25:  # whitespace only, ASCII or not: blank too
            lines.append("".join(rng.choice([" ", "\t", "\u00a0", "\u3000", "\r", "\x1c"]) for _ in range(3)).encode())
        elif kind < 0.3:  # invalid UTF-8
            lines.append(b"bad \xff\xfe bytes \xc3")
        else:
            lines.append(" ".join(rng.choice(pieces) for _ in range(rng.randint(1, 40))).encode())
    return b"\n".join(lines) + (b"\n" if rng.random() < 0.5 else b"")


@pytest.mark.parametrize("seed", range(4))
def test_text_batches_equal_a_line_by_line_reading(tmp_path, seed):
    import random  # pylint: disable=import-outside-toplevel

    import numpy as np  # pylint: disable=import-outside-toplevel

    rng = random.Random(seed)
    data = random_text(rng, 3000)
    path = tmp_path / "t.txt.gz"
    path.write_bytes(gzip.compress(data))
    want = reference_text_documents(data)
    for batch_bytes in (1, 997, 1 << 20):
        batches = list(text_files.read_text_batches(str(path), key="k", batch_bytes=batch_bytes))
        assert all(len(b.blank) == len(b.text.split(b"\n")) for b in batches)
        docs = [d for b in batches for d in text_io.unbatch_documents(b)]
        assert [(d.sentences, d.invalid_utf8, d.num_bytes) for d in docs] == want
        assert [d.key for d in docs] == [f"k:{i}" for i in range(len(want))]
        for b in batches:  # documents tile the batch's lines
            assert b.document_lines[0] == 0 and b.document_lines[-1] == len(b.blank)
            assert np.all(np.diff(b.document_lines) > 0) and len(b.keys) == len(b.document_lines) - 1
