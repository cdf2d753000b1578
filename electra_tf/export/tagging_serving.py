"""A fine-tuned tagger (NER, chunking, POS) as a TensorFlow Serving model: raw text in, words, tags
and entities with character offsets out.

Layout as `electra_tf.export.serving` (`<base_dir>/<model_name>/<version>/`, assets
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

Words are split in the graph as BERT's basic tokenizer splits (whitespace, and
every punctuation or symbol character is a word of its own); each word is
tagged at its first WordPiece, as in training (`tagging_features`). A word
whose first piece lies beyond `seq_length - 2` pieces is tagged `O` (no
windows at serving time). Entities are read from the IOB2 tags as conlleval
reads them (`tagging_metrics.get_entities`).
"""

import os

import tensorflow as tf
import tensorflow_text as tf_text

from electra_tf.export.assets import SERVING_CONFIG_ASSET, ServedModel, add_assets, check_texts

WORD_DELIMITERS = r"\s+|[\p{P}\p{S}]"  # split on these ...
KEPT_DELIMITERS = r"[\p{P}\p{S}]"  # ... and keep these as words


class TaggingServingModule(ServedModel):
    """`tf.Module` with a token classifier, its tokenizer and the text -> tags function.

    Args:
        tagger: `ElectraTokenClassifier`.
        vocab_file: str.
        label_names: list of str. Tag of each output unit.
        seq_length: int. Pieces per request text, [CLS]/[SEP] included.
        spans: bool. Whether the tags are IOB2 spans (entities are output).
        task: str. Recorded in `serving_config.json`.
    """

    def __init__(self, tagger, vocab_file, label_names, seq_length=128, spans=True, task="", name=None):
        super().__init__(tagger, vocab_file, seq_length, name=name)
        self.spans = spans
        self._tmp = add_assets(
            self, "electra_tagging_serving_", vocab_file, SERVING_CONFIG_ASSET,
            {"task": task, "kind": "tagging", "seq_length": seq_length, "spans": spans,
             "label_names": list(label_names)},
            label_names=label_names)
        self.label_names = tf.constant(list(label_names), tf.string)
        self.serve_text = tf.function(self._serve_text, input_signature=[tf.TensorSpec([None], tf.string, name="text")])

    def _serve_text(self, text):
        text, _ = check_texts(text)
        words, byte_starts, byte_ends = tf_text.regex_split_with_offsets(text, WORD_DELIMITERS, KEPT_DELIMITERS)
        num_words = tf.cast(words.row_lengths(), tf.int32)
        word_rows = words.value_rowids()
        # Pieces of every word; a word with none gets one [UNK] (as `tokenize_words`).
        pieces = self.tokenizer.tokenize(words.flat_values)
        counts = pieces.row_lengths()
        unk = tf.RaggedTensor.from_row_lengths(
            tf.fill([tf.size(counts)], tf.constant(self.tokenizer.unk_id, tf.int32)), tf.ones_like(counts))
        keep = tf.ragged.range(counts + 1) < tf.maximum(counts, 1)[:, None]
        pieces = tf.ragged.boolean_mask(tf.concat([pieces, unk], axis=1), keep)
        counts = pieces.row_lengths()
        # First piece of each word within its sentence, +1 for [CLS].
        sentence_counts = tf.RaggedTensor.from_row_lengths(counts, words.row_lengths())
        first = tf.cumsum(sentence_counts, axis=1, exclusive=True) + 1
        max_pieces = self.seq_length - 2
        sentence_pieces = tf.RaggedTensor.from_row_lengths(pieces.flat_values, tf.reduce_sum(sentence_counts, axis=1))
        sentence_pieces = sentence_pieces[:, :max_pieces]
        batch = tf.shape(text)[0]
        cls = tf.fill([batch, 1], tf.constant(self.tokenizer.cls_id, tf.int32))
        sep = tf.fill([batch, 1], tf.constant(self.tokenizer.sep_id, tf.int32))
        ids = tf.concat([cls, sentence_pieces, sep], axis=1)
        token_ids = ids.to_tensor(self.tokenizer.pad_id)
        inputs = {"token_ids": token_ids, "segment_ids": tf.zeros_like(token_ids),
                  "padding_mask": tf.ones_like(ids).to_tensor(0)}
        logits = self._model.obj(inputs, training=False)
        # Tags at first pieces; words past the window are O.
        seen = first <= max_pieces
        positions = first.with_flat_values(tf.where(seen.flat_values, first.flat_values, 0)).to_tensor(0)
        label_ids = tf.gather(tf.argmax(logits, axis=-1, output_type=tf.int32), positions, batch_dims=1)
        word_tags = tf.RaggedTensor.from_row_lengths(
            tf.gather(self.label_names, tf.gather_nd(label_ids, _ragged_indices(first))), words.row_lengths())
        word_tags = word_tags.with_flat_values(tf.where(seen.flat_values, word_tags.flat_values, "O"))
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
        return {"serving_default": self.serve_text}


def _ragged_indices(ragged):
    """`[row, column]` of every value of a 2-D ragged tensor, `(num_values, 2)`."""
    rows = ragged.value_rowids()
    columns = tf.range(tf.size(rows, out_type=tf.int64)) - tf.gather(ragged.row_starts(), rows)
    return tf.stack([rows, columns], axis=1)


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
                           seq_length=128, spans=None, task=""):
    """Writes `tagger` as `<base_dir>/<model_name>/<version>/` for TF Serving.

    Args:
        tagger: `ElectraTokenClassifier` (fine-tuned).
        vocab_file: str. Its vocabulary.
        base_dir: str. TF Serving model base folder's parent.
        model_name: str. Model name in TF Serving.
        version: int. Version folder; must not exist yet.
        label_names: list of str. One per output unit.
        seq_length: int. Pieces per request (longer texts: later words tagged O).
        spans: bool or None. IOB2 span tags (entities output); default: every
            label is O, B-X or I-X.
        task: str. Recorded in the assets.

    Returns:
        str, the version folder.

    Example:
        ```python
        path = export_tagging_serving(tagger, "vocab.txt", "/tmp/serving", "ner", 1,
                                      label_names=["O", "B-PER", "I-PER"])
        loaded = tf.saved_model.load(path)
        loaded.signatures["serving_default"](text=tf.constant(["Peter lives in Paris."]))["entity_text"]
        ```
    """
    if label_names is None or len(label_names) != tagger.num_labels:
        raise ValueError(f"Need one label name per output unit ({tagger.num_labels}). "
                         f"Received: `label_names={label_names}`")
    if spans is None:
        spans = all(label == "O" or label[:2] in ("B-", "I-") for label in label_names)
    if seq_length > tagger.encoder.max_sequence_length:
        raise ValueError(f"`seq_length={seq_length}` exceeds the encoder's "
                         f"`max_sequence_length={tagger.encoder.max_sequence_length}`.")
    if not isinstance(version, int) or version < 1:
        raise ValueError(f"`version` must be a positive int (TF Serving folder name). Received: `version={version!r}`")
    path = os.path.join(base_dir, model_name, str(version))
    if tf.io.gfile.exists(path):
        raise FileExistsError(f"{path} exists; TF Serving versions are immutable, choose a new `version`.")
    module = TaggingServingModule(tagger, vocab_file, label_names, seq_length, spans, task)
    tf.saved_model.save(module, path, signatures=module.signatures())
    return path
