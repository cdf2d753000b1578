"""The one tokenizer: BERT WordPiece rules and BERT pair truncation, against independent references."""

import gzip
import pathlib

import numpy as np
import pytest

from helpers import shared_data
from electra_tf.data.tokenizer import WordPieceTokenizer, load_vocab


@pytest.fixture
def vocab_file(tmp_path):
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "world", "un", "##aff",
              "##able", ",", "!", "cafe", "a", "b", "c", "d", "e", "f"]
    path = tmp_path / "vocab.txt"
    path.write_text("\n".join(tokens) + "\n")
    return str(path)


def test_wordpiece_lower_cases_strips_accents_and_splits_punctuation(vocab_file):
    tokenizer = WordPieceTokenizer(vocab_file)
    ids = tokenizer.tokenize(["Hello, WORLD! unaffable Café zzz"]).to_list()[0]
    words = [tokenizer.vocab[i] for i in ids]
    assert words == ["hello", ",", "world", "!", "un", "##aff", "##able", "cafe", "[UNK]"]


def test_bert_uncased_vocab_matches_huggingface_style_reference():
    vocab = str(shared_data("vocab", "bert_uncased_vocab.txt"))
    tokenizer = WordPieceTokenizer(vocab)
    assert tokenizer.special_ids == dict(pad_id=0, unk_id=100, cls_id=101, sep_id=102, mask_id=103)
    ids = tokenizer.tokenize(["The quick brown fox jumped."]).to_list()[0]
    # bert-base-uncased ids, as published with the vocabulary.
    assert ids == [1996, 4248, 2829, 4419, 5598, 1012]


def reference_truncate(a, b, budget):
    """BERT's `_truncate_seq_pair`, verbatim logic: pop from the longer, `b` on ties."""
    a, b = list(a), list(b)
    while len(a) + len(b) > budget:
        (a if len(a) > len(b) else b).pop()
    return a, b


def test_pair_packing_truncates_like_bert(vocab_file):
    tokenizer = WordPieceTokenizer(vocab_file)
    rng = np.random.RandomState(0)
    letters = "abcdef"
    texts_a = [" ".join(rng.choice(list(letters), rng.randint(0, 12))) for _ in range(200)]
    texts_b = [" ".join(rng.choice(list(letters), rng.randint(0, 12))) for _ in range(200)]
    for seq_length in (8, 9, 16):
        packed = tokenizer.pack(texts_a, texts_b, seq_length=seq_length)
        ids_a = tokenizer.tokenize(texts_a).to_list()
        ids_b = tokenizer.tokenize(texts_b).to_list()
        for i in range(200):
            a, b = reference_truncate(ids_a[i], ids_b[i], seq_length - 3)
            expected = [2] + a + [3] + b + [3]
            expected += [0] * (seq_length - len(expected))
            segments = [0] * (len(a) + 2) + [1] * (len(b) + 1)
            segments += [0] * (seq_length - len(segments))
            assert packed["token_ids"][i].numpy().tolist() == expected
            assert packed["segment_ids"][i].numpy().tolist() == segments
            assert packed["padding_mask"][i].numpy().sum() == len(a) + len(b) + 3


def test_single_segment_packing_truncates_and_accepts_empty_text(vocab_file):
    tokenizer = WordPieceTokenizer(vocab_file)
    packed = tokenizer.pack(["a b c d e f a b c", ""], seq_length=6)
    assert packed["token_ids"].numpy().tolist() == [[2, 13, 14, 15, 16, 3], [2, 3, 0, 0, 0, 0]]


def test_vocab_without_mask_token_is_rejected_with_the_file_name(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\n")
    with pytest.raises(ValueError, match=r"vocab.txt lacks the special token\(s\) \['\[MASK\]'\]"):
        load_vocab(str(path))
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        load_vocab(str(tmp_path / "missing.txt"))


LINES_TEXT = (
    "Hello, WORLD!\n\n  \nunaffable Café hola qué\r\n中文字 \x00 control\t tab\n"
    + "a" * 150 + " long word\n· \u00a0 nbsp\nno newline at the end"
)


def reference_lines(tokenizer, text):
    """`tokenize` on each line: the per-string path `tokenize_lines` must agree with."""
    ragged = tokenizer.tokenize(text.split(b"\n"))
    return ragged.flat_values.numpy(), ragged.row_splits.numpy()


def assert_same_lines(tokenizer, text):
    ids, splits = tokenizer.tokenize_lines(text)
    want_ids, want_splits = reference_lines(tokenizer, text)
    np.testing.assert_array_equal(splits, want_splits)
    np.testing.assert_array_equal(ids, want_ids)


def test_tokenize_lines_equals_tokenizing_each_line(vocab_file, tmp_path):
    path = tmp_path / "vocab_punct.txt"
    path.write_text(pathlib.Path(vocab_file).read_text() + "¡\n§\n¶\ntab\nlong\nword\n")
    tokenizer = WordPieceTokenizer(str(path))
    marks = [m.decode() for m, _ in tokenizer._markers()]
    assert marks[:3] == ["¡", "§", "¶"]  # non-ASCII first
    assert_same_lines(tokenizer, LINES_TEXT.encode())
    assert tokenizer._line_marker[0].decode() == "¡"
    # The text holds the mark in use: too many marks come back; a free one is searched for and kept.
    assert_same_lines(tokenizer, (LINES_TEXT + "\n¡hola!").encode())
    assert tokenizer._line_marker[0].decode() == "§"
    # The text holds every mark: it falls back to one string per line.
    assert_same_lines(tokenizer, (LINES_TEXT + "\n" + " ".join(marks)).encode())
    for text in (b"", b"\n", b"\n\n", b"one line", "ünïcödé only\n".encode()):
        assert_same_lines(tokenizer, text)


def test_tokenize_lines_with_a_vocab_without_punctuation(vocab_file, tmp_path):
    path = tmp_path / "no_punct.txt"
    kept = [t for t in pathlib.Path(vocab_file).read_text().split("\n") if t not in (",", "!")]
    path.write_text("\n".join(kept) + "\n")
    tokenizer = WordPieceTokenizer(str(path))
    assert tokenizer._markers() == ()
    assert_same_lines(tokenizer, b"Hello, world!\n\nunaffable cafe")
    assert_same_lines(WordPieceTokenizer(vocab_file), b"Hello, world!\n\nunaffable cafe\n")


def test_tokenize_lines_on_real_text():
    tokenizer = WordPieceTokenizer(str(shared_data("vocab", "bert_uncased_vocab.txt")))
    for name in ("linuxdocs.txt.gz", "austen.txt.gz"):  # non-ASCII, long lines, blank lines
        with gzip.open(shared_data("corpus", name)) as f:
            text = f.read(1 << 20)
        assert_same_lines(tokenizer, text[: text.rfind(b"\n")])
