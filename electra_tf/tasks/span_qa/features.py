"""Question + context -> WordPiece windows for extractive QA, with character <-> token offset maps.

The reference layout and sliding window (BERT / ELECTRA `qa_tasks`):

    [CLS] question pieces [SEP] context pieces of one window [SEP] [PAD]...
    segment 0 ------------------ segment 1 ------------------------

- The question keeps its first `max_query_length` pieces (64): a longer
  question is truncated, silently as in the reference (`stats["truncated_questions"]`
  counts them).
- The context is cut into windows of `seq_length - len(question) - 3` pieces
  whose starts are `doc_stride` (128) pieces apart; the last window ends at the
  context's end.
- A piece is *predicted* from the window in which it has the most context
  (`min(left, right) + 0.01 * window length`, first window on ties), as
  BERT's `_check_is_max_context`: `max_context` marks it.
- Offsets come from the project's one tokenizer (`WordPieceTokenizer`, in-graph
  tensorflow-text, byte offsets turned into character offsets here), so the
  pieces `(s, e)` are the text `context[token_start[s]:token_end[e]]`. An answer
  is whole words (`word_offsets`): `context[word_start[s]:word_end[e]]`, from the
  start of the word of piece `s` to the end of the word of piece `e`, never
  "ow." out of "yellow." (no gold answer of the benchmark's SQuAD dev split
  starts or ends at a `##` piece, so its label span is whole words already).

Answers (`locate_answer`, `answer_token_span`): the gold text is looked up at its
`answer_start`; if it is not there but close by (whitespace shifts of a few
characters, or the text padded with spaces), it is re-anchored to the nearest
occurrence. The answer then covers the pieces from the first one ending after
its start to the last one starting before its end. A window that does not hold
all of them labels the example as not in it: start = end = 0, the [CLS]
position (as the reference, for SQuAD 1.1 and 2.0 alike). `stats` counts
exact, re-anchored, partial (a boundary inside a piece, e.g. "1990" in
"1990s": the covering pieces are used) and unmappable answers with the reason.

Example:
>>> import os, tempfile
>>> from electra_tf.data.tokenizer import WordPieceTokenizer
>>> from electra_tf.tasks.span_qa.squad import QAExample
>>> from electra_tf.tasks.span_qa.features import build_qa_features
>>> vocab = os.path.join(tempfile.mkdtemp(), "vocab.txt")
>>> _ = open(vocab, "w").write("\\n".join(
...     ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "where", "is", "paris", "in", "france", "?", "."]))
>>> tokenizer = WordPieceTokenizer(vocab)
>>> example = QAExample("q1", "Where is Paris?", "Paris is in France.", (("France", 12),))
>>> features = build_qa_features(tokenizer, [example], seq_length=16, training=True)
>>> features.arrays["token_ids"][0].tolist()
[2, 5, 6, 7, 10, 3, 7, 6, 8, 9, 11, 3, 0, 0, 0, 0]
>>> int(features.arrays["start_positions"][0]), int(features.arrays["end_positions"][0])
(9, 9)
>>> s = features.arrays["token_start"][0, 9]; e = features.arrays["token_end"][0, 9]
>>> example.context[s:e]
'France'
"""

import collections
import dataclasses
import re
import time

import numpy as np
from absl import logging

from electra_tf.finetuning.batching import INPUTS, LENGTH_MULTIPLE, epoch_batches

ARRAYS = ("token_ids", "segment_ids", "padding_mask")
NEAR = 32  # characters around `answer_start` searched when re-anchoring an answer
LONG_CONTEXT = 100_000  # pieces: a context this long is logged with its window count
PROGRESS_SECONDS = 10  # a progress line at most this often while building features


@dataclasses.dataclass
class QAFeatures:
    """Windows of a list of `QAExample`s.

    Attributes:
        arrays: dict of arrays, one row per window: int32 `token_ids`,
            `segment_ids`, `padding_mask`, `token_start`, `token_end`
            (character offsets in the context of each piece, -1 outside the
            context), `word_start`, `word_end` (those of the piece's whole
            word) and bool `max_context`, all `(num_windows, seq_length)`;
            int32 `start_positions`, `end_positions`, `is_impossible`,
            `example_index` `(num_windows,)`.
        stats: dict of counts: `answers`, `exact`, `reanchored`, `partial`,
            `unmappable`, `unmappable_reasons` (reason -> count),
            `truncated_questions`, `windows`, `examples`, `skipped_examples`
            (training: examples whose first answer is unmappable).
        examples: the examples whose windows are here (training drops the skipped ones).
    """

    arrays: dict
    stats: dict
    examples: list


def char_offsets(text, byte_starts, byte_ends):
    """Byte offsets of pieces in UTF-8 `text` -> character offsets.

    Example:
    >>> from electra_tf.tasks.span_qa.features import char_offsets
    >>> [c.tolist() for c in char_offsets("é a", [0, 3], [2, 4])]
    [[0, 2], [1, 3]]
    """
    codes = np.frombuffer(text.encode("utf-32-le"), np.uint32)
    lengths = 1 + (codes >= 0x80) + (codes >= 0x800) + (codes >= 0x10000)  # UTF-8 bytes per character
    char_of_byte = np.zeros(int(lengths.sum()) + 1, np.int64)
    char_of_byte[np.cumsum(lengths)] = 1
    char_of_byte = np.cumsum(char_of_byte)
    return char_of_byte[np.asarray(byte_starts, np.int64)], char_of_byte[np.asarray(byte_ends, np.int64)]


def tokenize_with_char_offsets(tokenizer, texts):
    """Each text -> `(ids, char_starts, char_ends)` int arrays, one tokenizer call for all."""
    if not texts:
        return []
    ids, starts, ends = tokenizer.tokenize_with_offsets(list(texts))
    ids, starts, ends = ids.to_list(), starts.to_list(), ends.to_list()
    out = []
    for text, i, s, e in zip(texts, ids, starts, ends):
        cs, ce = char_offsets(text, s, e)
        out.append((np.asarray(i, np.int32), cs.astype(np.int32), ce.astype(np.int32)))
    return out


def word_offsets(ids, starts, ends, continues):
    """Each piece's whole word: `(word_start, word_end)`, the characters of its word's first and last piece.

    Args:
        ids: int array, the pieces of one text.
        starts, ends: int arrays, their character offsets.
        continues: bool array over the vocabulary (`WordPieceTokenizer.continues_word`).

    Example:
    >>> import numpy as np
    >>> from electra_tf.tasks.span_qa.features import word_offsets
    >>> continues = np.array([False, False, True, False])  # ids: 0 "ye", 1 "yel", 2 "##low", 3 "."
    >>> [w.tolist() for w in word_offsets(np.array([1, 2, 3]), np.array([0, 3, 6]), np.array([3, 6, 7]), continues)]
    [[0, 0, 6], [6, 6, 7]]
    """
    ids = np.asarray(ids)
    first = ~continues[ids]
    if len(first):
        first[0] = True
    word = np.cumsum(first) - 1
    firsts = np.flatnonzero(first)
    lasts = np.append(firsts[1:] - 1, len(ids) - 1) if len(firsts) else firsts
    return np.asarray(starts)[firsts][word], np.asarray(ends)[lasts][word]


def locate_answer(context, text, start):
    """The answer's `(char_start, char_end, how)`, or `(None, None, reason)`.

    `how` is "exact" when `context[start:start + len(text)] == text`, else
    "reanchored" when the (stripped) text, or the text with any whitespace
    between its words, is found within `NEAR` characters: the nearest occurrence.

    Example:
    >>> from electra_tf.tasks.span_qa.features import locate_answer
    >>> locate_answer("a  cat sat", "cat", 2)
    (3, 6, 'reanchored')
    >>> locate_answer("a cat", "dog", 2)
    (None, None, 'answer text not found at or near its answer_start')
    """
    if context[start:start + len(text)] == text and text.strip():
        return start, start + len(text), "exact"
    words = text.split()
    if not words:
        return None, None, "answer text is empty or whitespace"
    pattern = re.compile(r"\s+".join(re.escape(w) for w in words))
    low, high = max(0, start - NEAR), min(len(context), start + len(text) + NEAR)
    found = [(abs(m.start() - start), m.start(), m.end()) for m in pattern.finditer(context, low, high)]
    if not found:
        return None, None, "answer text not found at or near its answer_start"
    _, s, e = min(found)
    return s, e, "reanchored"


def answer_token_span(token_start, token_end, char_start, char_end):
    """Pieces `(first, last)` covering characters `[char_start, char_end)`, or None if they cover none."""
    first = int(np.searchsorted(token_end, char_start, side="right"))
    last = int(np.searchsorted(token_start, char_end, side="left")) - 1
    if first >= len(token_start) or last < first:
        return None
    return first, last


def plan_windows(num_pieces, max_pieces, doc_stride):
    """`(start, length)` of each window over `num_pieces` context pieces (the reference's loop)."""
    windows, start = [], 0
    while True:
        length = min(num_pieces - start, max_pieces)
        windows.append((start, length))
        if start + length >= num_pieces:
            return windows
        start += min(length, doc_stride)


def max_context_windows(windows, num_pieces):
    """Index of the window where each of `num_pieces` pieces has the most context (first on ties).

    BERT's `_check_is_max_context` scores a piece at `position` of a window
    `(start, length)` as `min(position - start, start + length - 1 - position)
    + 0.01 * length`. Each window updates only its own pieces, so the cost is
    the windows' total length (linear in `num_pieces`), not pieces x windows.

    Example:
    >>> from electra_tf.tasks.span_qa.features import max_context_windows, plan_windows
    >>> windows = plan_windows(10, 6, 2)
    >>> windows
    [(0, 6), (2, 6), (4, 6)]
    >>> max_context_windows(windows, 10).tolist()
    [0, 0, 0, 0, 1, 1, 2, 2, 2, 2]
    """
    best = np.zeros(num_pieces, np.int64)
    best_score = np.full(num_pieces, -np.inf)
    for k, (start, length) in enumerate(windows):
        position = np.arange(length)
        score = np.minimum(position, length - 1 - position) + 0.01 * length
        better = score > best_score[start:start + length]
        best_score[start:start + length][better] = score[better]
        best[start:start + length][better] = k
    return best


def build_qa_features(tokenizer, examples, seq_length=384, doc_stride=128, max_query_length=64, training=False):
    """Windows of every example (see the module docstring).

    Args:
        tokenizer: `WordPieceTokenizer`.
        examples: list of `squad.QAExample`.
        seq_length: int. Pieces per window, special tokens included.
        doc_stride: int. Pieces between window starts.
        max_query_length: int. Question pieces kept.
        training: bool. Label each window with the first answer; examples
            whose first answer is unmappable are dropped (counted).

    Returns:
        `QAFeatures`.
    """
    if max_query_length < 1 or doc_stride < 1 or seq_length < 4:
        raise ValueError(f"Need `max_query_length >= 1`, `doc_stride >= 1` and `seq_length >= 4`. "
                         f"Received: seq_length={seq_length}, doc_stride={doc_stride}, "
                         f"max_query_length={max_query_length}")
    contexts = list(dict.fromkeys(e.context for e in examples))
    context_pieces = dict(zip(contexts, tokenize_with_char_offsets(tokenizer, contexts)))
    continues = tokenizer.continues_word()
    context_words = {c: word_offsets(ids, starts, ends, continues) for c, (ids, starts, ends) in context_pieces.items()}
    question_ids = [q[0] for q in tokenize_with_char_offsets(tokenizer, [e.question for e in examples])]
    stats = collections.Counter()
    reasons = collections.Counter()
    rows, kept, plans = collections.defaultdict(list), [], {}
    last_log = time.monotonic()
    for index, example in enumerate(examples):
        if time.monotonic() - last_log > PROGRESS_SECONDS:
            logging.info("QA features: %d / %d questions, %d windows.", index, len(examples), len(rows["token_ids"]))
            last_log = time.monotonic()
        ids, starts, ends = context_pieces[example.context]
        word_starts, word_ends = context_words[example.context]
        spans = []
        for text, answer_start in example.answers:
            stats["answers"] += 1
            s, e, how = locate_answer(example.context, text, answer_start)
            span = None if s is None else answer_token_span(starts, ends, s, e)
            if s is not None and span is None:
                how = "answer covers no word piece"
            if span is None:
                stats["unmappable"] += 1
                reasons[how] += 1
                spans.append(None)
                continue
            exact_boundaries = starts[span[0]] == s and ends[span[1]] == e
            stats[how if exact_boundaries else "partial"] += 1
            spans.append(span)
        if training and not example.is_impossible and (not spans or spans[0] is None):
            stats["skipped_examples"] += 1
            continue
        kept.append(example)
        query = question_ids[index]
        if len(query) > max_query_length:
            stats["truncated_questions"] += 1
            query = query[:max_query_length]
        max_pieces = seq_length - len(query) - 3
        if max_pieces < 1:
            raise ValueError(f"Question {example.qid!r}: {len(query)} question pieces leave no room for the context "
                             f"in `seq_length={seq_length}`; lower `max_query_length` ({max_query_length}).")
        key = (example.context, max_pieces)
        if key not in plans:
            windows = plan_windows(len(ids), max_pieces, doc_stride)
            plans[key] = windows, max_context_windows(windows, len(ids))
            if len(ids) >= LONG_CONTEXT:
                logging.info("QA features: question %r has a context of %d pieces: %d windows.",
                             example.qid, len(ids), len(windows))
        windows, best = plans[key]
        answer = None if example.is_impossible or not spans else spans[0]
        offset = len(query) + 2
        for k, (start, length) in enumerate(windows):
            row_ids = np.full(seq_length, tokenizer.pad_id, np.int32)
            used = offset + length + 1
            row_ids[:used] = np.concatenate([[tokenizer.cls_id], query, [tokenizer.sep_id],
                                             ids[start:start + length], [tokenizer.sep_id]])
            segment = np.zeros(seq_length, np.int32)
            segment[offset:used] = 1
            mask = np.zeros(seq_length, np.int32)
            mask[:used] = 1
            token_start = np.full(seq_length, -1, np.int32)
            token_end = np.full(seq_length, -1, np.int32)
            token_start[offset:offset + length] = starts[start:start + length]
            token_end[offset:offset + length] = ends[start:start + length]
            word_start = np.full(seq_length, -1, np.int32)
            word_end = np.full(seq_length, -1, np.int32)
            word_start[offset:offset + length] = word_starts[start:start + length]
            word_end[offset:offset + length] = word_ends[start:start + length]
            max_context = np.zeros(seq_length, bool)
            max_context[offset:offset + length] = best[start:start + length] == k
            start_position = end_position = 0
            if answer is not None and start <= answer[0] and answer[1] < start + length:
                start_position, end_position = answer[0] - start + offset, answer[1] - start + offset
            for name, value in (("token_ids", row_ids), ("segment_ids", segment), ("padding_mask", mask),
                                ("token_start", token_start), ("token_end", token_end),
                                ("word_start", word_start), ("word_end", word_end),
                                ("max_context", max_context), ("start_positions", start_position),
                                ("end_positions", end_position),
                                ("is_impossible", int(example.is_impossible)),
                                ("example_index", len(kept) - 1)):
                rows[name].append(value)
    stats["windows"] = len(rows["token_ids"])
    stats["examples"] = len(kept)
    arrays = {}
    for name in ARRAYS + ("token_start", "token_end", "word_start", "word_end", "max_context"):
        dtype = bool if name == "max_context" else np.int32
        arrays[name] = np.array(rows[name], dtype).reshape(-1, seq_length)
    for name in ("start_positions", "end_positions", "is_impossible", "example_index"):
        arrays[name] = np.array(rows[name], np.int32).reshape(-1)
    stats = dict(stats)
    for name in ("answers", "exact", "reanchored", "partial", "unmappable", "truncated_questions",
                 "skipped_examples"):
        stats.setdefault(name, 0)
    stats["unmappable_reasons"] = dict(reasons)
    return QAFeatures(arrays, stats, kept)


def qa_dataset(features, batch_size, answerable, shuffle_seed=None, epoch=0, skip=0, multiple=LENGTH_MULTIPLE):
    """`tf.data` of `(inputs + start_positions, labels)` batches for `ElectraQuestionAnswerer.fit`.

    Batches are cut to their longest row rounded up to `multiple` (padding is masked: no output
    changes). `shuffle_seed`, `epoch`, `skip`, `multiple`: as `batching.epoch_batches`.
    """
    a = features.arrays
    inputs = {name: a[name] for name in INPUTS}
    inputs["start_positions"] = a["start_positions"]
    labels = {"start_logits": a["start_positions"], "end_logits": a["end_positions"]}
    if answerable:
        labels["answerable_logit"] = a["is_impossible"].astype(np.float32)
    return epoch_batches((inputs, labels), batch_size, shuffle_seed, epoch, skip, multiple)

