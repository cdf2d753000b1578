"""Words to WordPiece model inputs for token classification, and predictions back to words.

ELECTRA's tagging rule (official `finetune/tagging`): a word's label sits on its
first WordPiece; its other pieces, `[CLS]`, `[SEP]` and padding get
`IGNORE_INDEX`. A word that tokenizes to no piece at all (a control or
zero-width character) gets one `[UNK]`, so no word is lost.

A sentence longer than `seq_length - 2` pieces is split into windows that
start and end at word boundaries and overlap (`stride`). Each word is
predicted, and labelled for training, in exactly one window: the one where
its first piece has the most context (`min(left, right) + 0.01 * length`, as
BERT's `_check_is_max_context` for SQuAD). `word_predictions` gathers the
per-piece outputs of all windows back into one value per word.

Example:
>>> import os, tempfile
>>> import numpy as np
>>> from electra_tf.tasks.tagging.features import build_features, tokenize_words, word_predictions
>>> from electra_tf.data.tokenizer import WordPieceTokenizer
>>> vocab = os.path.join(tempfile.mkdtemp(), "vocab.txt")
>>> _ = open(vocab, "w").write("\\n".join(
...     ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "new", "york", "##er", "lives", "here"]))
>>> tokenizer = WordPieceTokenizer(vocab)
>>> pieces = tokenize_words(tokenizer, [["New", "Yorker", "lives", "here"]])
>>> features = build_features(tokenizer, pieces, [np.array([1, 2, 0, 0])], seq_length=8)
>>> features["token_ids"]
array([[2, 5, 6, 7, 8, 9, 3, 0]], dtype=int32)
>>> features["label_ids"]
array([[-100,    1,    2, -100,    0,    0, -100, -100]], dtype=int32)
>>> word_predictions(features["label_ids"], features, [4])
[array([1, 2, 0, 0], dtype=int32)]
"""

import dataclasses

import numpy as np

IGNORE_INDEX = -100  # label of pieces that are not a predicted word's first piece


@dataclasses.dataclass(frozen=True)
class WordPieces:
    """One sentence's WordPiece ids and where each word's pieces are.

    Args:
        ids: int32 array `(num_pieces,)`.
        word_splits: int64 array `(num_words + 1,)`. Word i is
            `ids[word_splits[i]:word_splits[i + 1]]`; every word has one piece or more.
        unknown_words: int64 array. Words that tokenized to no piece and hold one `[UNK]`.
    """

    ids: np.ndarray
    word_splits: np.ndarray
    unknown_words: np.ndarray

    @property
    def num_words(self):
        return len(self.word_splits) - 1


@dataclasses.dataclass(frozen=True)
class Window:
    """Pieces `[start, end)` of a sentence, and the words predicted from them.

    Args:
        start: int. First piece.
        end: int. One past the last piece.
        words: int64 array. The words whose label this window carries.
    """

    start: int
    end: int
    words: np.ndarray


def tokenize_words(tokenizer, sentences, max_words_per_call=100_000):
    """Tokenizes every word of every sentence, one tokenizer call per batch of words.

    Args:
        tokenizer: `electra_tf.data.tokenizer.WordPieceTokenizer`.
        sentences: list of sequences of str (the words).
        max_words_per_call: int. Words given to one ragged tokenizer call.

    Returns:
        list of `WordPieces`, one per sentence.
    """
    pieces = []
    for batch in _batches(sentences, max_words_per_call):
        pieces += _tokenize_batch(tokenizer, batch)
    return pieces


def _batches(sentences, max_words):
    """Consecutive groups of sentences holding at most `max_words` words (or one sentence)."""
    batch, size = [], 0
    for sentence in sentences:
        if batch and size + len(sentence) > max_words:
            yield batch
            batch, size = [], 0
        batch.append(sentence)
        size += len(sentence)
    if batch:
        yield batch


def _tokenize_batch(tokenizer, sentences):
    words = [word for sentence in sentences for word in sentence]
    ragged = tokenizer.tokenize(words) if words else None
    ids = ragged.flat_values.numpy() if words else np.zeros(0, np.int32)
    lengths = ragged.row_lengths().numpy() if words else np.zeros(0, np.int64)
    unknown = np.flatnonzero(lengths == 0)
    ids = np.insert(ids, np.cumsum(lengths)[unknown], tokenizer.unk_id).astype(np.int32)
    splits = np.concatenate([[0], np.cumsum(np.maximum(lengths, 1))])
    result, first = [], 0
    for sentence in sentences:
        last = first + len(sentence)
        word_splits = splits[first:last + 1]
        result.append(WordPieces(
            ids=ids[word_splits[0]:word_splits[-1]],
            word_splits=word_splits - word_splits[0],
            unknown_words=unknown[(unknown >= first) & (unknown < last)] - first,
        ))
        first = last
    return result


def plan_windows(word_splits, max_pieces, stride):
    """Windows over one sentence's pieces, each word predicted from exactly one.

    A window holds at most `max_pieces` pieces and ends at a word boundary
    (only a single word longer than `max_pieces` is cut, after its first
    piece). The next window starts at the last word start at most `stride`
    pieces further on (never past the previous window's end, so no word is
    skipped). A window left with no word to predict (small strides) is dropped.

    Args:
        word_splits: int array `(num_words + 1,)` (see `WordPieces`).
        max_pieces: int. Pieces per window (`seq_length - 2`).
        stride: int. Pieces the window moves forward, 1 to `max_pieces`.

    Returns:
        list of `Window`.

    Example:
    >>> from electra_tf.tasks.tagging.features import plan_windows
    >>> [(w.start, w.end, w.words.tolist()) for w in plan_windows([0, 1, 2, 3, 4, 5, 6, 7], 4, 2)]
    [(0, 4, [0, 1, 2]), (2, 6, [3, 4]), (4, 7, [5, 6])]
    """
    word_splits = np.asarray(word_splits, np.int64)
    starts, total = word_splits[:-1], int(word_splits[-1])
    spans, start = [], 0
    while True:
        end = min(start + max_pieces, total)
        boundary = word_splits[np.searchsorted(word_splits, end, side="right") - 1]
        if end < total and boundary > start:
            end = int(boundary)
        spans.append((start, end))
        if end >= total:
            break
        limit = min(start + stride, end)
        candidate = starts[np.searchsorted(starts, limit, side="right") - 1]
        later = starts[starts > start]
        if candidate <= start and not len(later):
            break  # the last word alone is longer than a window: its first piece is in this one
        start = int(candidate if candidate > start else later[0])
    best = _most_context(starts, spans)
    windows = [Window(s, e, np.flatnonzero(best == k)) for k, (s, e) in enumerate(spans)]
    return [w for w in windows if len(w.words)] or windows[:1]


def _most_context(starts, spans):
    """For each word (its first piece), the window where it has the most context; first on ties."""
    scores = np.full((len(spans), len(starts)), -np.inf)
    for k, (start, end) in enumerate(spans):
        inside = (starts >= start) & (starts < end)
        context = np.minimum(starts - start, end - 1 - starts) + 0.01 * (end - start)
        scores[k] = np.where(inside, context, -np.inf)
    return np.argmax(scores, axis=0)


def build_features(tokenizer, word_pieces, labels=None, seq_length=128, stride=None):
    """Model inputs `[CLS] pieces [SEP] [PAD]...`, one row per window.

    Args:
        tokenizer: `WordPieceTokenizer` (for the `[CLS]`, `[SEP]`, `[PAD]` ids).
        word_pieces: list of `WordPieces` (`tokenize_words`).
        labels: list of int arrays `(num_words,)`, or None at prediction time.
        seq_length: int. Row length, `[CLS]` and `[SEP]` included.
        stride: int or None. Pieces between window starts; default half a window.

    Returns:
        dict of int32 arrays: `token_ids`, `segment_ids`, `padding_mask`,
        `label_ids` (`IGNORE_INDEX` except on the first piece of the words
        the window predicts) and `word_ids` (that word's index, -1 elsewhere),
        all `(num_windows, seq_length)`; `sentence_ids` `(num_windows,)`.
    """
    max_pieces = seq_length - 2
    stride = max(1, max_pieces // 2) if stride is None else stride
    if max_pieces < 1 or not 1 <= stride <= max_pieces:
        raise ValueError(
            f"Need `seq_length >= 3` and `1 <= stride <= seq_length - 2`. "
            f"Received: `seq_length={seq_length}`, `stride={stride}`"
        )
    if labels is not None:
        _check_labels(word_pieces, labels)
    rows = [(i, window) for i, pieces in enumerate(word_pieces)
            for window in plan_windows(pieces.word_splits, max_pieces, stride)]
    shape = (len(rows), seq_length)
    features = dict(
        token_ids=np.full(shape, tokenizer.pad_id, np.int32),
        segment_ids=np.zeros(shape, np.int32),
        padding_mask=np.zeros(shape, np.int32),
        label_ids=np.full(shape, IGNORE_INDEX, np.int32),
        word_ids=np.full(shape, -1, np.int32),
        sentence_ids=np.array([i for i, _ in rows], np.int32).reshape(-1),
    )
    for row, (i, window) in enumerate(rows):
        pieces = word_pieces[i]
        length = window.end - window.start
        features["token_ids"][row, :length + 2] = np.concatenate(
            [[tokenizer.cls_id], pieces.ids[window.start:window.end], [tokenizer.sep_id]])
        features["padding_mask"][row, :length + 2] = 1
        positions = pieces.word_splits[window.words] - window.start + 1
        features["word_ids"][row, positions] = window.words
        if labels is not None:
            features["label_ids"][row, positions] = np.asarray(labels[i])[window.words]
    return features


def _check_labels(word_pieces, labels):
    if len(labels) != len(word_pieces):
        raise ValueError(f"{len(labels)} label arrays for {len(word_pieces)} sentences.")
    for i, (pieces, sentence_labels) in enumerate(zip(word_pieces, labels)):
        if len(sentence_labels) != pieces.num_words:
            raise ValueError(
                f"Sentence {i}: {len(sentence_labels)} labels for {pieces.num_words} words."
            )


def word_predictions(piece_values, features, num_words):
    """Per-piece model outputs of all windows -> one value per word, per sentence.

    Args:
        piece_values: array `(num_windows, seq_length, ...)`: label ids,
            logits or probabilities, in the row order of `features`.
        features: dict from `build_features` (`word_ids`, `sentence_ids` are read).
        num_words: sequence of int. Words of each sentence.

    Returns:
        list of arrays `(num_words[i], ...)`, the value at each word's first
        piece in the window that predicts it.

    Raises:
        ValueError when a word is predicted zero times or more than once.
    """
    if not len(num_words):
        return []
    piece_values = np.asarray(piece_values)
    word_ids = np.asarray(features["word_ids"])
    rows, columns = np.nonzero(word_ids >= 0)
    offsets = np.concatenate([[0], np.cumsum(num_words)]).astype(np.int64)
    flat = offsets[np.asarray(features["sentence_ids"])[rows]] + word_ids[rows, columns]
    counts = np.bincount(flat, minlength=offsets[-1])
    if len(counts) != offsets[-1] or np.any(counts != 1):
        word = int(np.flatnonzero(counts != 1)[0])
        sentence = int(np.searchsorted(offsets, word, side="right") - 1)
        raise ValueError(
            f"Sentence {sentence}, word {word - offsets[sentence]}: predicted "
            f"{counts[word]} times (expected once); do `features` and `num_words` match?"
        )
    values = np.empty((offsets[-1],) + piece_values.shape[2:], piece_values.dtype)
    values[flat] = piece_values[rows, columns]
    return np.split(values, offsets[1:-1])


def long_sentences(sentences, word_pieces, seq_length):
    """What happens to sentences longer than a window, naming the first one's file and line; None if none is.

    Such sentences are not an error: they are split into overlapping windows
    (`plan_windows`), every word trained on and predicted once.

    Example:
    >>> import numpy as np
    >>> from electra_tf.tasks.tagging import conll
    >>> from electra_tf.tasks.tagging.features import WordPieces, long_sentences
    >>> pieces = WordPieces(np.arange(9, dtype=np.int32), np.array([0, 3, 6, 9]), np.array([], np.int64))
    >>> long_sentences([conll.Sentence(("a", "b", "c"), ("O",) * 3, "train.txt", (4, 5, 6))], [pieces], 8)
    '1 sentence(s) longer than seq_length - 2 = 6 pieces are split into overlapping windows (no word is dropped); the first at train.txt:4 (9 pieces).'
    """
    limit = seq_length - 2
    long = [(s, p) for s, p in zip(sentences, word_pieces) if len(p.ids) > limit]
    if not long:
        return None
    sentence, pieces = long[0]
    where = f"{sentence.path}:{sentence.lines[0]}" if sentence.lines else sentence.path or "?"
    return (f"{len(long)} sentence(s) longer than seq_length - 2 = {limit} pieces are split into overlapping "
            f"windows (no word is dropped); the first at {where} ({len(pieces.ids)} pieces).")

