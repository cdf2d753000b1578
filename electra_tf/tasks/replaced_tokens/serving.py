"""A pre-trained discriminator as a TensorFlow Serving model: raw text in, the probability that each word was
replaced out (`python -m electra_tf.export --format rtd`).

Layout as `electra_tf.tasks.classification.serving` (`<base_dir>/<model_name>/<version>/`, assets
`vocab.txt`, `tokenizer_config.json`, `serving_config.json` with `"kind": "rtd"`).

Signature `serving_default`: `text` string `(batch,)` ->

    words             string  (batch, max_words)   "" after the last word
    word_start        int32   (batch, max_words)   character offsets in `text`, end exclusive (-1 padding)
    word_end          int32   (batch, max_words)
    word_p_replaced   float32 (batch, max_words)   the highest probability of its pieces (-1 padding)
    num_words         int32   (batch,)
    pieces            string  (batch, max_pieces)  the WordPieces of the words, in order ("" padding)
    piece_word        int32   (batch, max_pieces)  the word each piece belongs to (-1 padding)
    piece_p_replaced  float32 (batch, max_pieces)  sigmoid of the head's logit (NaN: not scored, -1 padding)
    num_pieces        int32   (batch,)

Signature `serve_corrupted` (only when the export holds the generator: a pre-training run or an
`hf:DISC,GEN` pair): `text` string `(batch,)`, `seed` int64 `(batch,)` -> the outputs of
`serving_default`, scored on the text as the generator corrupted it, and

    corrupted_pieces  string  (batch, max_pieces)  the pieces the discriminator saw
    piece_replaced    int32   (batch, max_pieces)  1 where the generator's sample replaced the piece (-1 padding)
    corrupted_words   string  (batch, max_words)   each word as corrupted (its pieces joined, `##` dropped)
    word_replaced     int32   (batch, max_words)   1 where a piece of the word was replaced (-1 padding)

Signature `predict_ids`: `token_ids`, `segment_ids`, `padding_mask` int32 `(batch, seq_len)` ->
`logits` and `probabilities` float32 `(batch, seq_len)`: every token's (the ids checked as
every export checks them).

Words are cut as the served tagger cuts them (`export.word_windows.split_words`: whitespace, PTB-style
punctuation, each CJK ideograph; offsets in Unicode code points, as Python's `str` indexing),
and each word is split into WordPieces by the pre-training tokenizer. A word's probability is
the highest of its pieces' (a word is replaced when any of its pieces is). A text longer than
`seq_length - 2` pieces is cut into overlapping windows at word boundaries (`word_windows.word_windows`,
`stride` pieces apart) and every word is scored from the window where its first piece has the
most context, so no word is dropped; a single word longer than a window has its pieces past
the window's end unscored (NaN), its probability that of the pieces scored.

`serve_corrupted` runs the pre-training step's own corruption on each window
(`ElectraPretrainer.compute_losses`: `mask_tokens`, the generator, its sampler, the
discriminator): each window is padded to `seq_length` and seeded with `(seed, fingerprint of
its text + its index in the text)`, so a text's corruption depends on the text, the seed and
`seq_length` alone, not on the batch it is sent in. A text longer than one window is corrupted
window by window, as pre-training corrupts each example; each word is shown as the window that
scores it corrupted it.
"""

import tensorflow as tf

from electra_tf.exporting.assets import (SERVING_CONFIG_ASSET, ServedModel, Untracked, add_assets, check_texts,
                                      save_version, version_dir)
from electra_tf.exporting.word_windows import char_offset, split_words, window_stride, word_windows

KIND = "rtd"  # the "kind" of its `serving_config.json` (`electra_tf.tasks.KINDS`)
CORRUPT_SIGNATURE = "serve_corrupted"
WORD_SCORE = "max"  # how a word's probability is read from its pieces' (recorded in `serving_config.json`)


class ReplacedTokenServingModule(ServedModel):
    """`tf.Module` with a discriminator and its head, its tokenizer, the serving functions; the generator too.

    Args:
        discriminator: `ElectraDiscriminator`.
        vocab_file: str.
        seq_length: int. Tokens per window, [CLS]/[SEP] included.
        stride: int or None. Pieces between window starts (default half a window).
        pretrainer: `ElectraPretrainer` or None. Its generator and masking settings give
            `serve_corrupted`; its discriminator must be `discriminator`'s.
        source: str. Where the model was read from, recorded in `serving_config.json`.
    """

    def __init__(self, discriminator, vocab_file, seq_length=128, stride=None, pretrainer=None, source="",
                 name=None):
        stride = window_stride(seq_length, stride)
        super().__init__(discriminator, vocab_file, seq_length, name=name)
        self.stride = stride
        generator = pretrainer is not None and pretrainer.generator is not None
        self._pretrainer = Untracked(pretrainer if generator else None)
        if generator:  # the discriminator's variables are among the pretrainer's
            self.model_variables = [w.value for w in pretrainer.weights]
        self._tmp = add_assets(
            self, "electra_rtd_serving_", vocab_file, SERVING_CONFIG_ASSET,
            {"kind": KIND, "task": "replaced_token_detection", "source": source, "seq_length": seq_length,
             "stride": stride, "generator": generator, "word_score": WORD_SCORE})
        text = tf.TensorSpec([None], tf.string, name="text")
        self.serve_text = tf.function(self._serve_text, input_signature=[text])
        if generator:
            self.serve_corrupted = tf.function(
                self._serve_corrupted, input_signature=[text, tf.TensorSpec([None], tf.int64, name="seed")])
        ids = [tf.TensorSpec([None, None], tf.int32, name=n) for n in ("token_ids", "segment_ids", "padding_mask")]
        self.predict_ids = tf.function(self._predict_ids, input_signature=ids)

    def _predict_ids(self, token_ids, segment_ids, padding_mask):
        logits = self.model_outputs(self.check_ids(token_ids, segment_ids, padding_mask))
        return {"logits": logits, "probabilities": tf.sigmoid(logits)}

    def _serve_text(self, text):
        text, _ = check_texts(text)
        words, byte_starts, byte_ends = split_words(text)
        windows = word_windows(self.tokenizer, words, self.seq_length, self.stride, self.pad_multiple)
        probabilities = tf.sigmoid(self.model_outputs(windows.inputs))
        return self._outputs(text, words, byte_starts, byte_ends, windows, probabilities)

    def _serve_corrupted(self, text, seed):
        text, _ = check_texts(text)
        seed = tf.ensure_shape(seed, [None], name="seed_must_be_a_vector")
        with tf.control_dependencies([tf.debugging.assert_equal(
                tf.size(text), tf.size(seed), message="`text` and `seed` must have the same batch size")]):
            seed = tf.identity(seed)
        words, byte_starts, byte_ends = split_words(text)
        windows = word_windows(self.tokenizer, words, self.seq_length, self.stride, self.pad_multiple)
        # Every window padded to `seq_length` and seeded by its text: the draws do not depend on the batch.
        pad = self.seq_length - tf.shape(windows.inputs["token_ids"])[1]
        token_ids, padding_mask = (tf.ensure_shape(tf.pad(windows.inputs[k], [[0, 0], [0, pad]]),
                                                   [None, self.seq_length]) for k in ("token_ids", "padding_mask"))
        num_windows = tf.size(windows.window_text, out_type=tf.int64)
        index = tf.range(num_windows)
        first_window = tf.math.unsorted_segment_min(index, windows.window_text, tf.size(text, out_type=tf.int64))
        fingerprint = tf.strings.to_hash_bucket_fast(text, 2 ** 62)
        window_seeds = tf.stack([tf.gather(seed, windows.window_text),
                                 tf.gather(fingerprint, windows.window_text)
                                 + index - tf.gather(first_window, windows.window_text)], axis=1)
        pretrainer = self._pretrainer.obj

        def corrupt(row):
            ids, mask, window_seed = row
            batch = {"token_ids": ids[None], "segment_ids": tf.zeros_like(ids[None]), "padding_mask": mask[None]}
            step = pretrainer.compute_losses(batch, window_seed, training=False)
            return step.disc_ids[0], tf.sigmoid(step.disc_logits[0])

        corrupted, probabilities = tf.map_fn(corrupt, (token_ids, padding_mask, window_seeds),
                                             fn_output_signature=(tf.int32, tf.float32))
        return self._outputs(text, words, byte_starts, byte_ends, windows, probabilities, corrupted)

    def _outputs(self, text, words, byte_starts, byte_ends, windows, probabilities, corrupted=None):
        """Per word and per piece, from each word's window: probabilities (and the corruption), padded per text."""
        counts = windows.pieces.row_lengths()
        num_words = words.row_lengths()
        # Every piece of every word at its position in the word's window; past the window's end: not scored.
        piece_of_word = tf.ragged.range(counts)
        flat_word = piece_of_word.value_rowids()
        window = tf.gather(windows.word_window, flat_word)
        position = tf.gather(windows.position, flat_word) + piece_of_word.flat_values
        scored = position <= tf.gather(windows.window_length, window)
        at = tf.stack([window, tf.minimum(position, tf.cast(tf.shape(probabilities)[1] - 1, tf.int64))], axis=1)
        piece_p = tf.where(scored, tf.gather_nd(probabilities, at), float("nan"))
        word_p = tf.reduce_max(tf.RaggedTensor.from_row_lengths(tf.where(scored, piece_p, 0.0), counts), axis=1)
        # Pieces per text, and the word (within its text) each belongs to.
        text_pieces = tf.reduce_sum(tf.RaggedTensor.from_row_lengths(counts, num_words), axis=1)
        word_in_text = tf.range(tf.size(counts, out_type=tf.int64)) - tf.gather(words.row_starts(),
                                                                                 words.value_rowids())

        def per_text(values, pad):
            return tf.RaggedTensor.from_row_lengths(values, text_pieces).to_tensor(pad)

        def per_word(values, pad):
            return words.with_flat_values(values).to_tensor(pad)

        row_text = tf.gather(text, words.value_rowids())
        outputs = {
            "words": words.to_tensor(""),
            "word_start": per_word(char_offset(row_text, byte_starts.flat_values), -1),
            "word_end": per_word(char_offset(row_text, byte_ends.flat_values), -1),
            "word_p_replaced": per_word(word_p, -1.0),
            "num_words": tf.cast(num_words, tf.int32),
            "pieces": per_text(self.tokenizer.detokenize(windows.pieces.flat_values), ""),
            "piece_word": per_text(tf.cast(tf.gather(word_in_text, flat_word), tf.int32), -1),
            "piece_p_replaced": per_text(piece_p, -1.0),
            "num_pieces": tf.cast(text_pieces, tf.int32),
        }
        if corrupted is not None:
            seen = tf.where(scored, tf.gather_nd(corrupted, at), windows.pieces.flat_values)
            replaced = tf.cast(tf.not_equal(seen, windows.pieces.flat_values), tf.int32)
            seen_pieces = self.tokenizer.detokenize(seen)
            joined = tf.where(piece_of_word.flat_values > 0, tf.strings.regex_replace(seen_pieces, "^##", ""),
                              seen_pieces)
            outputs.update({
                "corrupted_pieces": per_text(seen_pieces, ""),
                "piece_replaced": per_text(replaced, -1),
                "corrupted_words": per_word(tf.strings.reduce_join(
                    tf.RaggedTensor.from_row_lengths(joined, counts), axis=1), ""),
                "word_replaced": per_word(tf.reduce_max(tf.RaggedTensor.from_row_lengths(replaced, counts), axis=1),
                                          -1),
            })
        return outputs

    def signatures(self):
        signatures = {"serving_default": self.serve_text, "predict_ids": self.predict_ids}
        if self._pretrainer.obj is not None:
            signatures[CORRUPT_SIGNATURE] = self.serve_corrupted
        return signatures


def rtd_serving_module(discriminator, vocab_file, seq_length=None, stride=None, pretrainer=None, source=""):
    """The `ReplacedTokenServingModule` that `export_rtd_serving` saves (same arguments), arguments checked.

    `seq_length` defaults to 128, or the encoder's `max_sequence_length` when that is shorter.
    """
    limit = discriminator.encoder.max_sequence_length
    seq_length = seq_length or min(128, limit)
    if seq_length > limit:
        raise ValueError(f"`seq_length={seq_length}` exceeds the encoder's `max_sequence_length={limit}`.")
    return ReplacedTokenServingModule(discriminator, vocab_file, seq_length, stride, pretrainer, source)


def export_rtd_serving(discriminator, vocab_file, base_dir, model_name="electra", version=1, seq_length=None,
                       stride=None, pretrainer=None, source=""):
    """Writes a pre-trained discriminator (and its generator) as `<base_dir>/<model_name>/<version>/` for TF Serving.

    Args:
        discriminator: `ElectraDiscriminator` (`sources.load_detector`).
        vocab_file: str. Its vocabulary.
        base_dir: str. TF Serving model base folder's parent.
        model_name: str. Model name in TF Serving.
        version: int. Version folder; must not exist yet.
        seq_length: int or None. Tokens per window, [CLS]/[SEP] included (default 128).
        stride: int or None. Pieces between window starts (default half a window).
        pretrainer: `ElectraPretrainer` or None. With a generator: the `serve_corrupted` signature.
        source: str. Recorded in `serving_config.json`.

    Returns:
        str, the version folder.

    Example:
        ```python
        import pathlib

        import tensorflow as tf

        from electra_tf.tasks.replaced_tokens.serving import export_rtd_serving
        from electra_tf.models.discriminator import ElectraDiscriminator
        from electra_tf.models.encoder import ElectraEncoder

        tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "film", "was", "great", "."]
        pathlib.Path("vocab.txt").write_text("\\n".join(tokens) + "\\n")
        encoder = ElectraEncoder(vocab_size=len(tokens), num_layers=1, num_heads=2, hidden_dim=32,
                                 embedding_dim=16, intermediate_dim=64)
        detector = ElectraDiscriminator(encoder)  # pre-trained, in practice
        path = export_rtd_serving(detector, "vocab.txt", "serving", "rtd", 1, seq_length=16)
        served = tf.saved_model.load(path).signatures["serving_default"](text=tf.constant(["The film was great."]))
        served["word_p_replaced"].shape  # (1, 5): The film was great .
        ```
    """
    module = rtd_serving_module(discriminator, vocab_file, seq_length, stride, pretrainer, source)
    return save_version(module, version_dir(base_dir, model_name, version))
