"""QA features are built in time linear in the context length and equal the quadratic reference they replace.

The reference below is the loop `build_qa_features` ran before: for every
context piece, a pass over every window (BERT's `_check_is_max_context`), and
character offsets from one `encode` per character. The new code must give the
same windows, flags and offsets on random contexts, on doc_stride edge cases
and on real SQuAD examples.
"""

import os
import pathlib

import numpy as np
import pytest

from electra_tf.data.tokenizer import WordPieceTokenizer
from electra_tf.tasks.span_qa import features as qa_features
from electra_tf.tasks.span_qa import squad
from electra_tf.tasks.span_qa.squad import QAExample

WORDS = ["where", "is", "paris", "in", "france", "the", "city", "of", "light", "river", "seine", "flows",
         "through", "it", "a", "and", "many", "words", "here", "café", "naïve", "?", ".", ",", "1990", "##s"]


def reference_max_context_window(windows, position):
    """The old per-piece loop over every window (quadratic over a context)."""
    best, best_score = None, None
    for k, (start, length) in enumerate(windows):
        if not start <= position < start + length:
            continue
        score = min(position - start, start + length - 1 - position) + 0.01 * length
        if best_score is None or score > best_score:
            best, best_score = k, score
    return best


def reference_char_offsets(text, byte_starts, byte_ends):
    lengths = np.fromiter((len(c.encode("utf-8")) for c in text), np.int64, len(text))
    char_of_byte = np.zeros(int(lengths.sum()) + 1, np.int64)
    char_of_byte[np.cumsum(lengths)] = 1
    char_of_byte = np.cumsum(char_of_byte)
    return char_of_byte[np.asarray(byte_starts, np.int64)], char_of_byte[np.asarray(byte_ends, np.int64)]


def reference_max_context_windows(windows, num_pieces):
    return np.array([reference_max_context_window(windows, p) for p in range(num_pieces)], np.int64)


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    path = tmp_path_factory.mktemp("vocab") / "vocab.txt"
    path.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS) + "\n", encoding="utf-8")
    return WordPieceTokenizer(str(path))


@pytest.mark.parametrize("num_pieces,max_pieces,doc_stride", [
    (0, 5, 2), (1, 5, 2), (5, 5, 2), (6, 5, 2), (7, 5, 5), (10, 5, 5), (11, 5, 7), (100, 5, 7),
    (100, 24, 8), (101, 24, 8), (97, 24, 24), (1000, 61, 13), (64, 1, 1), (64, 3, 1), (50, 50, 128),
    (1, 1, 1), (257, 128, 128), (300, 253, 128),
])
def test_max_context_equals_the_quadratic_reference_on_doc_stride_edges(num_pieces, max_pieces, doc_stride):
    windows = qa_features.plan_windows(num_pieces, max_pieces, doc_stride)
    got = qa_features.max_context_windows(windows, num_pieces)
    assert got.tolist() == reference_max_context_windows(windows, num_pieces).tolist()


def test_max_context_on_random_plans():
    rng = np.random.RandomState(0)
    for _ in range(200):
        num_pieces, max_pieces, doc_stride = rng.randint(0, 400), rng.randint(1, 80), rng.randint(1, 100)
        windows = qa_features.plan_windows(num_pieces, max_pieces, doc_stride)
        assert qa_features.max_context_windows(windows, num_pieces).tolist() == \
            reference_max_context_windows(windows, num_pieces).tolist(), (num_pieces, max_pieces, doc_stride)


def test_char_offsets_equal_the_per_character_reference():
    rng = np.random.RandomState(1)
    alphabet = list("ab c.") + ["é", "ß", "中", "😀", "\u0301", "\n"]
    for _ in range(50):
        text = "".join(rng.choice(alphabet, rng.randint(0, 200)))
        n = len(text.encode("utf-8"))
        starts = np.sort(rng.randint(0, n + 1, 20))
        ends = np.minimum(starts + rng.randint(0, 5, 20), n)
        for got, want in zip(qa_features.char_offsets(text, starts, ends),
                             reference_char_offsets(text, starts, ends)):
            assert got.tolist() == want.tolist()


def reference_features(monkeypatch, tokenizer, examples, **settings):
    with monkeypatch.context() as m:
        m.setattr(qa_features, "max_context_windows", reference_max_context_windows)
        m.setattr(qa_features, "char_offsets", reference_char_offsets)
        return qa_features.build_qa_features(tokenizer, examples, **settings)


def assert_same_features(new, old):
    assert sorted(new.arrays) == sorted(old.arrays)
    for name in new.arrays:
        assert new.arrays[name].dtype == old.arrays[name].dtype, name
        np.testing.assert_array_equal(new.arrays[name], old.arrays[name], err_msg=name)
    assert new.stats == old.stats
    assert new.examples == old.examples


@pytest.mark.parametrize("seq_length,doc_stride,max_query_length", [
    (32, 8, 8), (32, 24, 8), (32, 64, 8), (24, 1, 4), (64, 17, 64), (16, 3, 2)])
def test_features_equal_the_reference_on_random_contexts(monkeypatch, tokenizer, seq_length, doc_stride,
                                                         max_query_length):
    rng = np.random.RandomState(seq_length + doc_stride)
    examples = []
    for i in range(12):
        context = " ".join(rng.choice(WORDS[:21], rng.randint(1, 150)))
        word = context.split()[-1]
        start = context.rindex(word)
        question = " ".join(rng.choice(WORDS, rng.randint(1, 12)))
        examples.append(QAExample(f"q{i}", question, context, ((word, start),), False, "t"))
    examples.append(QAExample("none", "where is it", examples[0].context, (), True, "t"))
    for training in (False, True):
        settings = dict(seq_length=seq_length, doc_stride=doc_stride, max_query_length=max_query_length,
                        training=training)
        new = qa_features.build_qa_features(tokenizer, examples, **settings)
        assert_same_features(new, reference_features(monkeypatch, tokenizer, examples, **settings))
        assert new.stats["windows"] > len(examples)


def test_features_equal_the_reference_on_squad(monkeypatch):
    root = pathlib.Path(os.environ.get("ELECTRA_TF_BENCHMARKS",
                                       pathlib.Path.home() / ".cache" / "electra_tf" / "benchmarks"))
    path = root / "squad_v1.1" / "dev.json"
    vocab = pathlib.Path(__file__).resolve().parents[4] / "shared" / "data" / "vocab" / "bert_uncased_vocab.txt"
    if not path.exists() or not vocab.exists():
        pytest.skip("SQuAD or the shared vocabulary not available")
    tokenizer = WordPieceTokenizer(str(vocab))
    examples = squad.read_squad(str(path), limit=150)
    for settings in (dict(seq_length=128, doc_stride=32), dict(seq_length=384, doc_stride=128)):
        new = qa_features.build_qa_features(tokenizer, examples, training=True, **settings)
        assert_same_features(new, reference_features(monkeypatch, tokenizer, examples, training=True, **settings))
        assert new.stats["windows"] >= len(examples)


def test_a_long_context_is_logged_with_its_windows(monkeypatch, tokenizer, caplog):
    monkeypatch.setattr(qa_features, "LONG_CONTEXT", 500)
    context = " ".join(["many words here and"] * 200)  # 800 pieces
    example = QAExample("long", "where", context, (("and", context.rindex("and")),))
    with caplog.at_level("INFO", logger="absl"):  # an earlier in-process CLI may have set absl's level to WARNING
        features = qa_features.build_qa_features(tokenizer, [example], seq_length=64, doc_stride=32)
    assert f"'long' has a context of 800 pieces: {features.stats['windows']} windows" in caplog.text
