"""Words -> pieces -> words: hand-made sentences, random windowed ones, and the real CoNLL-2003 dev set."""

import numpy as np
import pytest

from electra_tf.data.tokenizer import WordPieceTokenizer
from electra_tf.tasks.tagging import conll
from electra_tf.tasks.tagging.features import (
    IGNORE_INDEX, build_features, plan_windows, tokenize_words, word_predictions)

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "new", "york", "##er", "##s", "lives",
         "here", "un", "##aff", "##able", ".", "a", "b", "c"]
ID = {token: i for i, token in enumerate(VOCAB)}


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    path = tmp_path_factory.mktemp("vocab") / "vocab.txt"
    path.write_text("\n".join(VOCAB) + "\n")
    return WordPieceTokenizer(str(path))


def test_pieces_labels_and_word_ids_by_hand(tokenizer):
    # "\u200b" (zero-width space) tokenizes to nothing and gets [UNK]; "zzz" is out of vocabulary.
    sentences = [["New", "Yorkers", "\u200b", "unaffable", "zzz", "."], ["a"]]
    pieces = tokenize_words(tokenizer, sentences)
    assert pieces[0].ids.tolist() == [
        ID["new"], ID["york"], ID["##er"], ID["##s"], ID["[UNK]"], ID["un"], ID["##aff"], ID["##able"],
        ID["[UNK]"], ID["."]]
    assert pieces[0].word_splits.tolist() == [0, 1, 4, 5, 8, 9, 10]
    assert pieces[0].unknown_words.tolist() == [2]
    assert pieces[1].ids.tolist() == [ID["a"]] and pieces[1].unknown_words.tolist() == []
    features = build_features(tokenizer, pieces, [np.array([1, 2, 3, 4, 5, 6]), np.array([7])],
                              seq_length=14)
    i = IGNORE_INDEX
    assert features["token_ids"][0].tolist() == [ID["[CLS]"]] + pieces[0].ids.tolist() + [ID["[SEP]"], 0, 0]
    assert features["label_ids"][0].tolist() == [i, 1, 2, i, i, 3, 4, i, i, 5, 6, i, i, i]
    assert features["word_ids"][0].tolist() == [-1, 0, 1, -1, -1, 2, 3, -1, -1, 4, 5, -1, -1, -1]
    assert features["padding_mask"][0].tolist() == [1] * 12 + [0] * 2
    assert features["token_ids"][1].tolist() == [ID["[CLS]"], ID["a"], ID["[SEP]"]] + [0] * 11
    assert features["label_ids"][1].tolist() == [i, 7] + [i] * 12
    assert features["segment_ids"].sum() == 0 and features["sentence_ids"].tolist() == [0, 1]


def test_plan_windows_by_hand():
    # 7 one-piece words, 4 pieces per window, stride 2: windows [0,4) [2,6) [4,7).
    # Context min(left, right) of word 2: 1 in the first window, 0 in the second -> first.
    windows = plan_windows(np.arange(8), 4, 2)
    assert [(w.start, w.end, w.words.tolist()) for w in windows] == [
        (0, 4, [0, 1, 2]), (2, 6, [3, 4]), (4, 7, [5, 6])]
    # Words of 2, 3, 1, 2 pieces (splits 0 2 5 6 8), 4 per window: the first window backs off to
    # the boundary at 2 (4 would cut word 1); the next starts at word 1 and ends at 6.
    windows = plan_windows([0, 2, 5, 6, 8], 4, 4)
    assert [(w.start, w.end, w.words.tolist()) for w in windows] == [
        (0, 2, [0]), (2, 6, [1, 2]), (6, 8, [3])]
    # A word longer than a window is cut after its first piece, never dropped.
    windows = plan_windows([0, 1, 7, 8], 3, 3)
    assert [(w.start, w.end, w.words.tolist()) for w in windows] == [
        (0, 1, [0]), (1, 4, [1]), (7, 8, [2])]
    assert [(w.start, w.end) for w in plan_windows([0, 9], 4, 2)] == [(0, 4)]


def check_windows(pieces, features, seq_length, stride):
    """Independent checks: each row is [CLS] + a word-aligned slice of its sentence + [SEP], and
    the window that predicts a word gives its first piece the most context min(left, right)."""
    for row, sentence in enumerate(features["sentence_ids"]):
        p = pieces[sentence]
        n = int(features["padding_mask"][row].sum()) - 2
        position = np.flatnonzero(features["word_ids"][row] >= 0)
        assert len(position) and 1 <= n <= seq_length - 2
        start = p.word_splits[features["word_ids"][row, position[0]]] - (position[0] - 1)
        end = start + n
        assert start in p.word_splits and end in p.word_splits
        assert features["token_ids"][row, 1:n + 1].tolist() == p.ids[start:end].tolist()
        assert features["token_ids"][row, [0, n + 1]].tolist() == [ID["[CLS]"], ID["[SEP]"]]
        for first in p.word_splits[features["word_ids"][row, position]]:
            best = max(min(first - s, e - 1 - first) for s, e in all_windows(p, seq_length - 2, stride)
                       if s <= first < e)
            assert min(first - start, end - 1 - first) == best


def all_windows(pieces, max_pieces, stride):
    return [(w.start, w.end) for w in plan_windows(pieces.word_splits, max_pieces, stride)]


@pytest.mark.parametrize("seq_length, stride", [(5, 1), (6, 2), (8, 3), (8, 6), (12, None), (64, None)])
def test_random_sentences_round_trip_over_windows(tokenizer, seq_length, stride):
    rng = np.random.RandomState(seq_length)
    words = ["new", "yorkers", "unaffable", "lives", "here", ".", "zzz", "\u200b", "abc", "cab"]
    sentences = [list(rng.choice(words, rng.randint(1, 40))) for _ in range(60)]
    labels = [rng.randint(0, 9, len(s)) for s in sentences]
    pieces = tokenize_words(tokenizer, sentences, max_words_per_call=50)
    features = build_features(tokenizer, pieces, labels, seq_length, stride)
    assert features["token_ids"].shape[1] == seq_length
    got = word_predictions(features["label_ids"], features, [len(s) for s in sentences])
    assert all(np.array_equal(g, l) for g, l in zip(got, labels))
    logits = np.eye(9)[np.maximum(features["label_ids"], 0)]  # a 3-D model output
    got = word_predictions(logits, features, [len(s) for s in sentences])
    assert all(np.array_equal(g.argmax(-1), l) for g, l in zip(got, labels))
    check_windows(pieces, features, seq_length, stride or (seq_length - 2) // 2)
    # Each word exactly once, from the one window that labels it.
    assert (features["label_ids"] != IGNORE_INDEX).sum() == sum(len(s) for s in sentences)


def test_word_predictions_rejects_missing_or_repeated_words(tokenizer):
    pieces = tokenize_words(tokenizer, [["a", "b"], ["c"]])
    features = build_features(tokenizer, pieces, seq_length=8)
    with pytest.raises(ValueError, match="Sentence 1, word 1: predicted 0 times"):
        word_predictions(features["word_ids"], features, [2, 2])
    features["word_ids"][0, 2] = 0  # word 0 of sentence 0 twice, word 1 never
    with pytest.raises(ValueError, match="Sentence 0, word 0: predicted 2 times"):
        word_predictions(features["word_ids"], features, [2, 1])


def test_bad_lengths_and_arguments(tokenizer):
    pieces = tokenize_words(tokenizer, [["a", "b"]])
    with pytest.raises(ValueError, match="Sentence 0: 3 labels for 2 words"):
        build_features(tokenizer, pieces, [np.array([0, 1, 2])])
    with pytest.raises(ValueError, match="`stride=7`"):
        build_features(tokenizer, pieces, seq_length=8, stride=7)


def test_real_conll2003_dev_round_trips(conll2003_dir, bert_vocab):
    tokenizer = WordPieceTokenizer(bert_vocab)
    dev = conll.CONLL2003.read(conll2003_dir, "dev")
    labels = conll.encode_labels(dev, conll.label_set(dev, spans=True))
    words = [s.words for s in dev]
    pieces = tokenize_words(tokenizer, words)
    # Independent tokenization: the sentence as one text gives the same pieces when no word is empty.
    whole = tokenizer.tokenize([" ".join(w) for w in words]).to_list()
    assert all(p.ids.tolist() == w for p, w in zip(pieces, whole) if not len(p.unknown_words))
    for seq_length in (128, 24):
        features = build_features(tokenizer, pieces, labels, seq_length)
        got = word_predictions(features["label_ids"], features, [len(w) for w in words])
        assert all(np.array_equal(g, l) for g, l in zip(got, labels))
        first_pieces = features["token_ids"][features["word_ids"] >= 0]
        expected = np.concatenate([p.ids[p.word_splits[:-1]] for p in pieces])
        assert np.array_equal(np.sort(first_pieces), np.sort(expected))
