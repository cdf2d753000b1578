"""A fine-tuned tagger (NER, chunking, POS) as a TensorFlow Serving model: raw text in, words, tags
and entities with character offsets out.

Layout as `electra_tf.tasks.classification.serving` (`<base_dir>/<model_name>/<version>/`, assets
`labels.txt`, `vocab.txt`, `tokenizer_config.json`, `serving_config.json`).

Signature `serving_default`: `text` string `(batch,)` ->

    words          string (batch, max_words)     "" after the last word
    tags           string (batch, max_words)     IOB2 (span tasks) or the label ("" padding)
    word_start     int32  (batch, max_words)     character offsets in `text`, end exclusive
    word_end       int32  (batch, max_words)     (-1 padding)
    num_words      int32  (batch,)
    entity_type    string (batch, max_entities)  span tasks: PER, LOC, ... ("" padding)
    entity_text    string (batch, max_entities)  `text[entity_start:entity_end]`
    entity_start   int32  (batch, max_entities)  character offsets (-1 padding)
    entity_end     int32  (batch, max_entities)
    num_entities   int32  (batch,)

Signature `serve_words`: `text` string `(batch,)` whose whitespace-separated tokens
are taken as the words, unchanged (pre-split input such as CoNLL's words
joined by single spaces) -> the outputs of `serving_default`.

Signature `predict_ids`: `token_ids`, `segment_ids`, `padding_mask` int32
`(batch, seq_len)` -> `probabilities` float32 `(batch, seq_len, num_labels)`,
`label_id` int32 and `label` string `(batch, seq_len)`: the tag of every
piece (read a word's tag at its first piece, as in training).

`serving_default` cuts words as the CoNLL-2003 tokens the taggers are trained on
are cut (PTB style), in the graph: whitespace separates; within a whitespace
token, letters and digits form a word together with inner punctuation
(`1.5`, `5:30`, `O'Neil`, `e-mail`, `Müller-Lüdenscheidt`); abbreviations of
letters with periods (`U.S.`, `p.m.`) and initials (`J.` of `J. Smith`) keep
their final period, as do `Corp. Inc. Mr. St. Oct.` and the like (`ABBREVIATIONS`);
currencies `C$ US$`, dashes `--` and ellipses `...` are one word; the clitics `'s 'm 'd 'll 've 're` standing apart (CoNLL's
`Germany 's`) are one word; any other punctuation or symbol character is a word
of its own (`Friday,` -> `Friday` `,`; `(ÉCOLE)` -> `(` `ÉCOLE` `)`), and so is
each CJK ideograph. A whitespace token is never joined to the next. Character offsets count Unicode code points, as Python's `str` indexing. Each
word is tagged at its first WordPiece, as in training (`tagging_features`). A
text longer than `seq_length - 2` pieces is split in the graph into the same
overlapping windows as at training and prediction time
(`tagging_features.plan_windows`, the fine-tuning `stride`), and each word is
tagged from the window where it has the most context, so no word is dropped.
Entities are read from the IOB2 tags as conlleval reads them
(`tagging_metrics.get_entities`).
"""

import typing

import tensorflow as tf
import tensorflow_text as tf_text

from electra_tf.data.tokenizer import SERVING_PAD_MULTIPLE, pad_ragged
from electra_tf.export.assets import (SERVING_CONFIG_ASSET, ServedModel, add_assets, check_texts,
                                      save_version, version_dir)

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


class TaggingServingModule(ServedModel):
    """`tf.Module` with a token classifier, its tokenizer and the two serving functions.

    Args:
        tagger: `ElectraTokenClassifier`.
        vocab_file: str.
        label_names: list of str. Tag of each output unit.
        seq_length: int. Pieces per window, [CLS]/[SEP] included.
        spans: bool. Whether the tags are IOB2 spans (entities are output).
        task: str. Recorded in `serving_config.json`.
        stride: int or None. Pieces between window starts (default half a
            window, as `tagging_features.build_features`).
    """

    def __init__(self, tagger, vocab_file, label_names, seq_length=128, spans=True, task="", stride=None,
                 name=None):
        stride = window_stride(seq_length, stride)
        super().__init__(tagger, vocab_file, seq_length, name=name)
        self.stride = stride
        self.spans = spans
        self._tmp = add_assets(
            self, "electra_tagging_serving_", vocab_file, SERVING_CONFIG_ASSET,
            {"task": task, "kind": "tagging", "seq_length": seq_length, "stride": stride, "spans": spans,
             "label_names": list(label_names)},
            label_names=label_names)
        self.label_names = tf.constant(list(label_names), tf.string)
        text = [tf.TensorSpec([None], tf.string, name="text")]
        self.serve_text = tf.function(self._serve_text, input_signature=text)
        self.serve_words = tf.function(self._serve_words, input_signature=text)
        ids = [tf.TensorSpec([None, None], tf.int32, name=n) for n in ("token_ids", "segment_ids", "padding_mask")]
        self.predict_ids = tf.function(self._predict_ids, input_signature=ids)

    def _predict_ids(self, token_ids, segment_ids, padding_mask):
        return self._outputs(self.check_ids(token_ids, segment_ids, padding_mask))

    def _outputs(self, inputs):
        """`predict_ids`' outputs (a tag per piece) for checked id inputs."""
        logits = tf.cast(self._model.obj(inputs, training=False), tf.float32)
        label_id = tf.argmax(logits, axis=-1, output_type=tf.int32)
        return {"probabilities": tf.nn.softmax(logits, axis=-1), "label_id": label_id,
                "label": tf.gather(self.label_names, label_id)}

    def _serve_text(self, text):
        """Words cut as CoNLL tokens are (`KEPT_DELIMITERS`), tagged."""
        text, _ = check_texts(text)
        return self._tag(text, *split_words(text))

    def _serve_words(self, text):
        """Pre-split words (e.g. CoNLL's, joined by spaces): each whitespace-separated token is a word, as it is."""
        text, _ = check_texts(text)
        return self._tag(text, *split_words(text, pre_split=True))

    def _tag(self, text, words, byte_starts, byte_ends):
        """Tags of `words` (ragged, per text, with their byte offsets in `text`): the outputs of both signatures."""
        num_words = tf.cast(words.row_lengths(), tf.int32)
        word_rows = words.value_rowids()
        windows = word_windows(self.tokenizer, words, self.seq_length, self.stride, self.pad_multiple)
        label_ids = tf.argmax(self._model.obj(windows.inputs, training=False), axis=-1, output_type=tf.int32)
        # Each word's tag at its first piece in its window.
        word_label = tf.gather_nd(label_ids, tf.stack([windows.word_window, windows.position], axis=1))
        word_tags = tf.RaggedTensor.from_row_lengths(tf.gather(self.label_names, word_label), words.row_lengths())
        # Byte offsets -> character offsets.
        row_text = tf.gather(text, word_rows)
        char_start = _char_offset(row_text, byte_starts.flat_values)
        char_end = _char_offset(row_text, byte_ends.flat_values)
        outputs = {
            "words": words.to_tensor(""),
            "tags": word_tags.to_tensor(""),
            "word_start": words.with_flat_values(char_start).to_tensor(-1),
            "word_end": words.with_flat_values(char_end).to_tensor(-1),
            "num_words": num_words,
        }
        if self.spans:
            outputs.update(_entities(text, word_tags, byte_starts, byte_ends, char_start, char_end))
        return outputs

    def signatures(self):
        return {"serving_default": self.serve_text, "serve_words": self.serve_words, "predict_ids": self.predict_ids}


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
    # the longest window + 2 rounded up to a multiple of 16, at most seq_length (`tokenizer.padded_length`)
    pieces: tf.RaggedTensor  # int32 (num_words, None): the pieces of every word of the batch, in order
    word_window: tf.Tensor  # int64 (num_words,): the window each word is read from
    position: tf.Tensor  # int64 (num_words,): its first piece's position in that window ([CLS] is 0)
    window_text: tf.Tensor  # int64 (num_windows,): the text each window is cut from
    window_length: tf.Tensor  # int64 (num_windows,): its pieces ([CLS] and [SEP] not counted)


def word_windows(tokenizer, words, seq_length, stride, pad_multiple=SERVING_PAD_MULTIPLE):
    """The words of a batch of texts, as WordPieces, cut into windows of at most `seq_length` tokens.

    Every word gets its pieces (a word with none, e.g. only control characters, one `[UNK]`, as
    `tagging_features.tokenize_words`); a text that fits `seq_length - 2` pieces is one window,
    a longer one the overlapping windows of `tagging_features.plan_windows` (word boundaries,
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
    """`tagging_features.plan_windows` in the graph, for a batch of sentences.

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
        >>> from electra_tf.tasks.tagging.serving import split_words
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


def _char_offset(texts, byte_offsets):
    """Characters of `texts[i]` before byte `byte_offsets[i]` (UTF-8)."""
    prefix = tf.strings.substr(texts, tf.zeros_like(byte_offsets, tf.int32), tf.cast(byte_offsets, tf.int32))
    return tf.strings.length(prefix, unit="UTF8_CHAR")


def _entities(text, tags, byte_starts, byte_ends, char_start, char_end):
    """Entities of IOB2 word tags: a span starts at B-X, or at I-X after O or another type."""
    flat = tags.flat_values
    prefix = tf.strings.substr(flat, 0, 2)
    types = tf.strings.regex_replace(flat, r"^[BI]-", "")
    inside = tf.logical_or(tf.equal(prefix, "B-"), tf.equal(prefix, "I-"))
    first_word = tf.equal(tf.range(tf.size(flat, out_type=tf.int64)), tf.gather(tags.row_starts(), tags.value_rowids()))
    previous_inside = tf.logical_and(tf.roll(inside, 1, 0), tf.logical_not(first_word))
    previous_type = tf.roll(types, 1, 0)
    begins = tf.logical_and(inside, tf.logical_or(
        tf.equal(prefix, "B-"), tf.logical_or(tf.logical_not(previous_inside), tf.not_equal(previous_type, types))))
    entity = tf.cumsum(tf.cast(begins, tf.int32)) - 1  # entity index over the batch, at inside words
    num_entities = tf.cast(tf.reduce_sum(tf.RaggedTensor.from_row_splits(tf.cast(begins, tf.int32),
                                                                         tags.row_splits), axis=1), tf.int32)
    total = tf.reduce_sum(num_entities)
    members = tf.where(inside)[:, 0]
    segment = tf.gather(entity, members)
    start = tf.math.unsorted_segment_min(tf.gather(char_start, members), segment, total)
    end = tf.math.unsorted_segment_max(tf.gather(char_end, members), segment, total)
    byte_start = tf.math.unsorted_segment_min(tf.gather(byte_starts.flat_values, members), segment, total)
    byte_end = tf.math.unsorted_segment_max(tf.gather(byte_ends.flat_values, members), segment, total)
    begin_words = tf.where(begins)[:, 0]
    entity_rows = tf.gather(tags.value_rowids(), begin_words)
    entity_text = tf.strings.substr(tf.gather(text, entity_rows), tf.cast(byte_start, tf.int32),
                                    tf.cast(byte_end - byte_start, tf.int32))

    def dense(values, pad):
        return tf.RaggedTensor.from_row_lengths(values, tf.cast(num_entities, tf.int64)).to_tensor(pad)

    return {
        "entity_type": dense(tf.gather(types, begin_words), ""),
        "entity_text": dense(entity_text, ""),
        "entity_start": dense(start, -1),
        "entity_end": dense(end, -1),
        "num_entities": num_entities,
    }


def export_tagging_serving(tagger, vocab_file, base_dir, model_name="electra", version=1, label_names=None,
                           seq_length=128, spans=None, task="", stride=None):
    """Writes `tagger` as `<base_dir>/<model_name>/<version>/` for TF Serving.

    Args:
        tagger: `ElectraTokenClassifier` (fine-tuned).
        vocab_file: str. Its vocabulary.
        base_dir: str. TF Serving model base folder's parent.
        model_name: str. Model name in TF Serving.
        version: int. Version folder; must not exist yet.
        label_names: list of str. One per output unit.
        seq_length: int. Pieces per window, [CLS]/[SEP] included (the fine-tuning
            `seq_length`); longer texts are windowed, every word is tagged.
        spans: bool or None. IOB2 span tags (entities output); default: every
            label is O, B-X or I-X.
        task: str. Recorded in the assets.
        stride: int or None. Pieces between window starts (the fine-tuning
            `stride`; default half a window).

    Returns:
        str, the version folder.

    Example:
        ```python
        import pathlib

        import tensorflow as tf

        from electra_tf.tasks.tagging.serving import export_tagging_serving
        from electra_tf.models.encoder import ElectraEncoder
        from electra_tf.tasks.tagging.model import ElectraTokenClassifier

        tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "world", "!", "a", "fine", "film"]
        pathlib.Path("vocab.txt").write_text("\\n".join(tokens) + "\\n")

        encoder = ElectraEncoder(vocab_size=len(tokens), num_layers=1, num_heads=2, hidden_dim=32,
                                 embedding_dim=16, intermediate_dim=64)

        tagger = ElectraTokenClassifier(encoder, num_labels=3)  # fine-tuned, in practice
        tagger.build()
        path = export_tagging_serving(tagger, "vocab.txt", "serving", "ner", 1, seq_length=16,
                                      label_names=["O", "B-PER", "I-PER"])
        loaded = tf.saved_model.load(path)
        loaded.signatures["serving_default"](text=tf.constant(["Peter lives in Paris."]))["entity_text"]
        ```
    """
    module = tagging_serving_module(tagger, vocab_file, label_names, seq_length, spans, task, stride)
    return save_version(module, version_dir(base_dir, model_name, version))


def tagging_serving_module(tagger, vocab_file, label_names=None, seq_length=128, spans=None, task="", stride=None):
    """The `TaggingServingModule` that `export_tagging_serving` saves (same arguments), arguments checked."""
    if label_names is None or len(label_names) != tagger.num_labels:
        raise ValueError(f"Need one label name per output unit ({tagger.num_labels}). "
                         f"Received: `label_names={label_names}`")
    if spans is None:
        spans = all(label == "O" or label[:2] in ("B-", "I-") for label in label_names)
    if seq_length > tagger.encoder.max_sequence_length:
        raise ValueError(f"`seq_length={seq_length}` exceeds the encoder's "
                         f"`max_sequence_length={tagger.encoder.max_sequence_length}`.")
    return TaggingServingModule(tagger, vocab_file, label_names, seq_length, spans, task, stride)
