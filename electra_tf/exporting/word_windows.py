"""Words of raw text and the overlapping windows of pieces over them, in the serving graph: what every served
model that reads words shares (a tagger's entities, replaced-token scores per word, answers as whole words).

`split_words` cuts a text into words (whitespace, PTB-style punctuation kept as words, each CJK
ideograph; `pre_split`: the whitespace-separated tokens unchanged) with their UTF-8 byte offsets;
`char_offset` turns byte offsets into characters (Python's `str` indexing). `word_windows` splits
each text's words into WordPieces and cuts texts longer than `seq_length - 2` pieces into
overlapping windows at word boundaries, `window_stride` pieces apart, and says which window scores
each word (the one where its first piece has the most context), so no word is dropped.
"""

import typing

import tensorflow as tf
import tensorflow_text as tf_text

from electra_tf.data.tokenizer import SERVING_PAD_MULTIPLE, pad_ragged

# Python's `str.isspace` characters (BERT's whitespace plus the other separators).
_SPACE = r"\t-\r\x{1C}-\x{1F}\x{85}\p{Z}"
# BERT's `_is_chinese_char` blocks: each character is a word of its own.
_CJK = (r"\x{4E00}-\x{9FFF}\x{3400}-\x{4DBF}\x{20000}-\x{2A6DF}\x{2A700}-\x{2B73F}\x{2B740}-\x{2B81F}"
        r"\x{2B820}-\x{2CEAF}\x{F900}-\x{FAFF}\x{2F800}-\x{2FA1F}")
_LETTERS = rf"[^{_SPACE}\p{{P}}\p{{S}}{_CJK}]"  # letters, digits, marks: what words are made of
# Abbreviations CoNLL-2003 / PTB keep with their period (matched in any case).
ABBREVIATIONS = ("Mr", "Mrs", "Ms", "Dr", "St", "Jr", "Sr", "Co", "Corp", "Inc", "Ltd", "Bros", "Gen", "Gov", "Sen",
                 "Rep", "Jan", "Feb", "Aug", "Sep", "Sept", "Oct", "Nov", "Dec", "Fla", "Calif")
# The words of a text, as CoNLL-2003 (PTB-style) tokens are cut, in order of preference (RE2 takes the
# first alternative that matches where the next word starts):
KEPT_DELIMITERS = "|".join([
    rf"[{_CJK}]",  # a CJK ideograph (as BERT)
    r"\pL\.(?:\pL\.)+",  # an abbreviation of letters with periods: U.S. p.m. U.N.
    rf"(?i:{'|'.join(ABBREVIATIONS)})\.\B",  # Corp. Inc. Mr. Oct. St. (followed by no letter or digit)
    r"\p{Lu}\.\B",  # an initial: the `J.` of `J. Smith` (not the `U.` of `U.S`)
    r"'(?:s|S|m|M|d|D|ll|LL|ve|VE|re|RE)\b",  # a clitic as CoNLL writes it apart: 's 'm 'd 'll 've 're
    r"\p{Lu}{1,2}\$",  # a currency: C$ A$ US$
    rf"{_LETTERS}+(?:[\p{{P}}\p{{S}}]+{_LETTERS}+)*",  # letters and digits, inner punctuation kept: 1.5 O'Neil e-mail
    r"--+|\.\.+",  # dashes, an ellipsis
    r"[\p{P}\p{S}]",  # any other punctuation or symbol character: a word of its own
])
WORD_DELIMITERS = rf"[{_SPACE}]+|{KEPT_DELIMITERS}"  # split on these, keep the words
WHITESPACE = rf"[{_SPACE}]+"  # `serve_words`: the whitespace-separated tokens are the words


def window_stride(seq_length, stride=None):
    """The pieces between window starts (`stride`, default half a window), checked against `seq_length`."""
    max_pieces = seq_length - 2
    stride = max(1, max_pieces // 2) if stride is None else int(stride)
    if max_pieces < 1 or not 1 <= stride <= max_pieces:
        raise ValueError(f"Need `seq_length >= 3` and `1 <= stride <= seq_length - 2`. "
                         f"Received: `seq_length={seq_length}`, `stride={stride}`")
    return stride


class WordWindows(typing.NamedTuple):
    """The windows `word_windows` cuts a batch of texts' words into, and where each word is read."""

    inputs: dict  # token_ids, segment_ids, padding_mask int32 (num_windows, length): [CLS] pieces [SEP] padded to
    # the longest window + 2 rounded up to a multiple of 8, at most seq_length (`tokenizer.padded_length`)
    pieces: tf.RaggedTensor  # int32 (num_words, None): the pieces of every word of the batch, in order
    word_window: tf.Tensor  # int64 (num_words,): the window each word is read from
    position: tf.Tensor  # int64 (num_words,): its first piece's position in that window ([CLS] is 0)
    window_text: tf.Tensor  # int64 (num_windows,): the text each window is cut from
    window_length: tf.Tensor  # int64 (num_windows,): its pieces ([CLS] and [SEP] not counted)


def word_windows(tokenizer, words, seq_length, stride, pad_multiple=SERVING_PAD_MULTIPLE):
    """The words of a batch of texts, as WordPieces, cut into windows of at most `seq_length` tokens.

    Every word gets its pieces (a word with none, e.g. only control characters, one `[UNK]`, as
    `tasks.tagging.features.tokenize_words`); a text that fits `seq_length - 2` pieces is one window,
    a longer one the overlapping windows of `tasks.tagging.features.plan_windows` (word boundaries,
    `stride` pieces apart), and each word is read from the window where its first piece has the
    most context. The windows of the whole batch are one batch of model inputs.

    Args:
        tokenizer: `WordPieceTokenizer`.
        words: string ragged `(batch, None)`: the words of each text (`split_words`).
        seq_length: int. Tokens per window, [CLS] and [SEP] included.
        stride: int. Pieces between window starts.
        pad_multiple: int. The windows are padded to the longest rounded up to a multiple of it
            (at most `seq_length`: `tokenizer.padded_length`).

    Returns:
        `WordWindows`.
    """
    # Pieces of every word; a word with none gets one [UNK] (as `tokenize_words`).
    pieces = tokenizer.tokenize(words.flat_values)
    counts = pieces.row_lengths()
    unk = tf.RaggedTensor.from_row_lengths(
        tf.fill([tf.size(counts)], tf.constant(tokenizer.unk_id, tf.int32)), tf.ones_like(counts))
    keep = tf.ragged.range(counts + 1) < tf.maximum(counts, 1)[:, None]
    pieces = tf.ragged.boolean_mask(tf.concat([pieces, unk], axis=1), keep)
    counts = pieces.row_lengths()
    # First piece of each word within its sentence, and the sentences' piece counts.
    sentence_counts = tf.RaggedTensor.from_row_lengths(counts, words.row_lengths())
    first = tf.cumsum(sentence_counts, axis=1, exclusive=True)
    totals = tf.reduce_sum(sentence_counts, axis=1)
    sentence_starts = tf.cumsum(totals, exclusive=True)  # in pieces.flat_values
    # Windows (as `plan_windows`): [start, end) pieces of a sentence; the window of each word.
    max_pieces = seq_length - 2
    one_each = (tf.range(tf.size(totals, out_type=tf.int64)), tf.zeros_like(totals), totals, words.value_rowids())
    # When every text fits one window, each is its own window: `_plan_windows`' while loops are skipped.
    window_sentence, window_start, window_end, word_window = tf.cond(
        tf.reduce_all(totals <= max_pieces), lambda: one_each,
        lambda: _plan_windows(first, totals, max_pieces, stride))
    global_start = tf.gather(sentence_starts, window_sentence) + window_start
    window_pieces = tf.gather(pieces.flat_values,
                              tf.ragged.range(global_start, global_start + window_end - window_start))
    num_windows = tf.size(window_start)
    cls = tf.fill([num_windows, 1], tf.constant(tokenizer.cls_id, tf.int32))
    sep = tf.fill([num_windows, 1], tf.constant(tokenizer.sep_id, tf.int32))
    ids = tf.concat([cls, window_pieces, sep], axis=1)
    inputs = pad_ragged({"token_ids": ids, "segment_ids": tf.zeros_like(ids)}, seq_length, pad_multiple,
                        pad_id=tokenizer.pad_id)
    position = first.flat_values - tf.gather(window_start, word_window) + 1  # +1: [CLS]
    return WordWindows(inputs, pieces, word_window, position, window_sentence, window_end - window_start)


def _plan_windows(first, totals, max_pieces, stride):
    """`tasks.tagging.features.plan_windows` in the graph, for a batch of sentences.

    Args:
        first: int64 ragged `(batch, words)`. First piece of each word in its sentence.
        totals: int64 `(batch,)`. Pieces of each sentence.
        max_pieces: int. Pieces per window.
        stride: int. Pieces the window moves forward.

    Returns:
        `(window_sentence, window_start, window_end, word_window)`, int64: the
        sentence and piece range of every window (sentences in order; a
        sentence without words has one empty window), and for every word of
        `first.flat_values` the window it is predicted from.
    """
    batch = tf.shape(totals, out_type=tf.int64)[0]

    def sentence(i, window_count, arrays):
        starts = first.flat_values[first.row_splits[i]:first.row_splits[i + 1]]
        begin, end, best = _sentence_windows(starts, totals[i], max_pieces, stride)
        n = tf.size(begin, out_type=tf.int64)
        values = (tf.fill([n], i), begin, end, best + window_count)
        arrays = tuple(a.write(tf.cast(i, tf.int32), v) for a, v in zip(arrays, values))
        return i + 1, window_count + n, arrays

    arrays = tuple(tf.TensorArray(tf.int64, size=0, dynamic_size=True, infer_shape=False,
                                  element_shape=tf.TensorShape([None])) for _ in range(4))
    _, _, arrays = tf.while_loop(lambda i, *_: i < batch, sentence,
                                 (tf.constant(0, tf.int64), tf.constant(0, tf.int64), arrays))
    return tuple(tf.cond(batch > 0, a.concat, lambda: tf.zeros([0], tf.int64)) for a in arrays)


def _sentence_windows(starts, total, max_pieces, stride):
    """Windows of one sentence (`starts`: its words' first pieces) and each word's window index."""
    splits = tf.concat([starts, [total]], axis=0)  # `word_splits`
    max_pieces, stride = tf.constant(max_pieces, tf.int64), tf.constant(stride, tf.int64)

    def step(start, done, begins, ends):
        end = tf.minimum(start + max_pieces, total)
        boundary = tf.gather(splits, tf.searchsorted(splits, [end], side="right")[0] - 1)
        end = tf.where((end < total) & (boundary > start), boundary, end)
        begins, ends = begins.write(begins.size(), start), ends.write(ends.size(), end)
        limit = tf.minimum(start + stride, end)
        candidate = tf.gather(splits, tf.maximum(tf.searchsorted(starts, [limit], side="right")[0] - 1, 0))
        later = tf.boolean_mask(starts, starts > start)
        has_later = tf.size(later) > 0
        next_start = tf.where(candidate > start, candidate, tf.concat([later, [start]], axis=0)[0])
        done = (end >= total) | ((candidate <= start) & tf.logical_not(has_later))
        return next_start, done, begins, ends

    arrays = [tf.TensorArray(tf.int64, size=0, dynamic_size=True) for _ in range(2)]
    _, _, begins, ends = tf.while_loop(lambda start, done, *_: tf.logical_not(done), step,
                                       (tf.constant(0, tf.int64), tf.constant(False), *arrays))
    begins, ends = begins.stack(), ends.stack()
    # The window where each word's first piece has the most context (first on ties, as `_most_context`).
    s, e, w = begins[:, None], ends[:, None], starts[None, :]
    context = tf.cast(tf.minimum(w - s, e - 1 - w), tf.float64) + 0.01 * tf.cast(e - s, tf.float64)
    scores = tf.where((w >= s) & (w < e), context, tf.constant(-float("inf"), tf.float64))
    num_windows = tf.size(begins, out_type=tf.int64)
    index = tf.range(num_windows)[:, None] + tf.zeros_like(w)
    best = tf.reduce_min(tf.where(scores == tf.reduce_max(scores, axis=0, keepdims=True), index, num_windows), axis=0)
    # Windows that predict no word are dropped (all but the first when no window predicts one).
    used = tf.reduce_any(tf.equal(tf.range(num_windows)[:, None], best[None, :]), axis=1)
    used = used | ((tf.range(num_windows) == 0) & tf.logical_not(tf.reduce_any(used)))
    new_index = tf.cumsum(tf.cast(used, tf.int64)) - 1
    return tf.boolean_mask(begins, used), tf.boolean_mask(ends, used), tf.gather(new_index, best)


def split_words(text, pre_split=False):
    """The words of each text and their UTF-8 byte offsets, as `serving_default` (or `serve_words`) cuts them.

    Args:
        text: string tensor `(batch,)`.
        pre_split: bool. Whitespace-separated tokens are the words, unchanged (`serve_words`); else
            CoNLL-style words (`KEPT_DELIMITERS`, see the module docstring).

    Returns:
        `(words, starts, ends)`: ragged `(batch, None)` strings (as in `text`) and int64 byte offsets.

    Example:
        >>> from electra_tf.exporting.word_windows import split_words
        >>> [w.decode() for w in split_words(["The U.S. Treasury said on Friday, 1.5%"])[0][0].numpy()]
        ['The', 'U.S.', 'Treasury', 'said', 'on', 'Friday', ',', '1.5', '%']
    """
    # `regex_split_with_offsets` stops at a NUL byte (losing the rest of the text): split a copy where NUL is
    # U+0001, another control character (same byte offsets), and read the words from `text`.
    text = tf.convert_to_tensor(text, tf.string)
    clean = tf.strings.regex_replace(text, "\x00", "\x01")
    if pre_split:
        _, starts, ends = tf_text.regex_split_with_offsets(clean, WHITESPACE)
    else:
        _, starts, ends = tf_text.regex_split_with_offsets(clean, WORD_DELIMITERS, KEPT_DELIMITERS)
    rows = tf.gather(text, starts.value_rowids())
    words = tf.strings.substr(rows, tf.cast(starts.flat_values, tf.int32),
                              tf.cast(ends.flat_values - starts.flat_values, tf.int32))
    return starts.with_flat_values(words), starts, ends


def char_offset(texts, byte_offsets):
    """Characters of `texts[i]` before byte `byte_offsets[i]` (UTF-8)."""
    prefix = tf.strings.substr(texts, tf.zeros_like(byte_offsets, tf.int32), tf.cast(byte_offsets, tf.int32))
    return tf.strings.length(prefix, unit="UTF8_CHAR")
