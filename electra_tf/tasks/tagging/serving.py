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
word is tagged at its first WordPiece, as in training (`features`). A
text longer than `seq_length - 2` pieces is split in the graph into the same
overlapping windows as at training and prediction time
(`features.plan_windows`, the fine-tuning `stride`), and each word is
tagged from the window where it has the most context, so no word is dropped.
Entities are read from the IOB2 tags as conlleval reads them
(`metrics.get_entities`).
"""

import tensorflow as tf

from electra_tf.data.tokenizer import SERVING_PAD_MULTIPLE
from electra_tf.exporting.assets import (SERVING_CONFIG_ASSET, ServedModel, add_assets, check_texts,
                                      save_version, version_dir)
from electra_tf.exporting.word_windows import char_offset, split_words, window_stride, word_windows



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
            window, as `features.build_features`).
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
        logits = tf.cast(self.model_outputs(inputs), tf.float32)
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
        label_ids = tf.argmax(self.model_outputs(windows.inputs), axis=-1, output_type=tf.int32)
        # Each word's tag at its first piece in its window.
        word_label = tf.gather_nd(label_ids, tf.stack([windows.word_window, windows.position], axis=1))
        word_tags = tf.RaggedTensor.from_row_lengths(tf.gather(self.label_names, word_label), words.row_lengths())
        # Byte offsets -> character offsets.
        row_text = tf.gather(text, word_rows)
        char_start = char_offset(row_text, byte_starts.flat_values)
        char_end = char_offset(row_text, byte_ends.flat_values)
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
