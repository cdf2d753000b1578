"""A fine-tuned multiple-choice model as a TensorFlow Serving model: a context and its choices in, the chosen
index and the probabilities out.

Layout as `electra_tf.tasks.classification.serving` (`<base_dir>/<model_name>/<version>/`, assets `vocab.txt`,
`electra_tokenizer.json`, `serving_config.json`).

Signatures (batch and choice dimensions dynamic):

    serving_default  context   string (batch,)          the first segment (SWAG: `sent1`; ARC: the question)
                     question  string (batch,)          put before each choice ("" for none; SWAG: `sent2`)
                     choices   string (batch, choices)  "" marks a missing choice (a question with fewer); a
                                                        blank one (whitespace only) is missing too; every
                                                        question needs one choice that is not
                     -> probabilities float32 (batch, choices)  0 for a missing choice
                        choice        int32   (batch,)          index of the chosen choice
                        logits        float32 (batch, choices)  -1e9 for a missing choice
    predict_ids      token_ids, segment_ids, padding_mask  int32 (batch, choices, seq_len) -> the same outputs
    preprocess       context, question, choices -> token_ids, segment_ids, padding_mask (batch, choices, seq_len)

Each choice is packed with its context as training packs it
(`[CLS] context [SEP] question choice [SEP]`, truncated longest-first to `seq_length`); a call
is computed at its longest sequence's length rounded up to a multiple of 8, at most
`seq_length` (`tokenizer.padded_length`), which gives the outputs of full-length padding.
"""

import tensorflow as tf

from electra_tf.data.tokenizer import SERVING_PAD_MULTIPLE
from electra_tf.exporting.assets import SERVING_CONFIG_ASSET, ServedModel, add_assets

INPUT_NAMES = ("token_ids", "segment_ids", "padding_mask")
# A blank choice: only what Python's `str.strip()` removes (Unicode White_Space and \x1c-\x1f), as the readers
# refuse it.
BLANK = r"[\t-\r\x1c-\x1f\x{85}\p{Z}]*"


def present_choices(choices):
    """bool tensor of `choices`' shape: True where a choice is not blank (`BLANK`)."""
    return tf.logical_not(tf.strings.regex_full_match(choices, BLANK))


def pack_choices(tokenizer, context, question, choices, seq_length, pad_multiple=SERVING_PAD_MULTIPLE):
    """Model inputs `(batch, choices, length)` of raw texts, in the graph; a blank choice is all zero.

    Args:
        tokenizer: `WordPieceTokenizer`.
        context, question: string tensors `(batch,)`.
        choices: string tensor `(batch, choices)`.
        seq_length: int. The longest sequence.
        pad_multiple: int or None. `length` is the longest (context, choice) sequence of the
            call rounded up to a multiple of it, at most `seq_length` (None: `seq_length`).
    """
    shape = tf.shape(choices)
    second = tf.strings.strip(tf.strings.join(
        [tf.repeat(question[:, None], shape[1], axis=1), choices], separator=" "))
    packed = tokenizer.pack(tf.reshape(tf.repeat(context[:, None], shape[1], axis=1), [-1]),
                            tf.reshape(second, [-1]), seq_length=seq_length, pad_multiple=pad_multiple)
    present = tf.reshape(tf.cast(present_choices(choices), tf.int32), [-1, 1])
    length = tf.shape(packed["token_ids"])[1]
    return {name: tf.reshape(value * present, [shape[0], shape[1], length]) for name, value in packed.items()}


class MultipleChoiceServingModule(ServedModel):
    """`tf.Module` with a multiple-choice model, its tokenizer and the serving functions.

    Args:
        model: `ElectraMultipleChoice`.
        vocab_file: str.
        seq_length: int. Tokens per (context, choice) sequence, special tokens included.
        task: str. Recorded in `serving_config.json`.

    Example:
        ```python
        import pathlib

        import tensorflow as tf

        from electra_tf.tasks.multiple_choice.serving import MultipleChoiceServingModule
        from electra_tf.models.encoder import ElectraEncoder
        from electra_tf.tasks.multiple_choice.model import ElectraMultipleChoice

        tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "ran", "on", "mat"]
        pathlib.Path("vocab.txt").write_text("\\n".join(tokens) + "\\n")
        encoder = ElectraEncoder(vocab_size=len(tokens), num_layers=1, num_heads=2, hidden_dim=32,
                                 embedding_dim=16, intermediate_dim=64)
        model = ElectraMultipleChoice(encoder)  # fine-tuned, in practice
        model.build()
        module = MultipleChoiceServingModule(model, "vocab.txt", seq_length=16)
        out = module.signatures()["serving_default"](
            context=tf.constant(["the cat"]), question=tf.constant([""]),
            choices=tf.constant([["sat on the mat", "ran", ""]]))
        out["probabilities"].shape, out["choice"].shape  # (1, 3), (1,)
        ```
    """

    def __init__(self, model, vocab_file, seq_length=128, task="", name=None):
        if seq_length > model.encoder.max_sequence_length:
            raise ValueError(f"`seq_length={seq_length}` exceeds the encoder's "
                             f"`max_sequence_length={model.encoder.max_sequence_length}`.")
        super().__init__(model, vocab_file, seq_length, name=name)
        self._tmp = add_assets(self, "electra_multiple_choice_serving_", vocab_file, SERVING_CONFIG_ASSET,
                               {"task": task, "kind": "multiple_choice", "seq_length": seq_length})
        ids = [tf.TensorSpec([None, None, None], tf.int32, name=n) for n in INPUT_NAMES]
        self.predict_ids = tf.function(self._predict_ids, input_signature=ids)
        texts = [tf.TensorSpec([None], tf.string, name="context"), tf.TensorSpec([None], tf.string, name="question"),
                 tf.TensorSpec([None, None], tf.string, name="choices")]
        self.serve_text = tf.function(self._serve_text, input_signature=texts)
        self.preprocess = tf.function(self._preprocess, input_signature=texts)

    def _outputs(self, inputs):
        logits = tf.cast(self.model_outputs(inputs), tf.float32)
        return {"probabilities": tf.nn.softmax(logits, axis=-1),
                "choice": tf.argmax(logits, axis=-1, output_type=tf.int32), "logits": logits}

    def _predict_ids(self, token_ids, segment_ids, padding_mask):
        inputs = {"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": padding_mask}
        inputs = {k: tf.ensure_shape(v, [None, None, None], name=f"{k}_must_be_batch_by_choices_by_seq_len")
                  for k, v in inputs.items()}
        flat = self.check_ids(*(tf.reshape(inputs[k], [-1, tf.shape(inputs[k])[-1]]) for k in INPUT_NAMES))
        return self._outputs({k: tf.reshape(v, tf.shape(inputs[k])) for k, v in flat.items()})

    def _preprocess(self, context, question, choices):
        context, question, choices = _check_requests(context, question, choices)
        return pack_choices(self.tokenizer, context, question, choices, self.seq_length, self.pad_multiple)

    def _serve_text(self, context, question, choices):
        return self._outputs(self._preprocess(context, question, choices))

    def signatures(self):
        return {"serving_default": self.serve_text, "predict_ids": self.predict_ids, "preprocess": self.preprocess}


def _check_requests(context, question, choices):
    """Runtime checks: `context` and `question` vectors, `choices` a matrix, one row per context, each row with a
    choice that is not blank."""
    context = tf.ensure_shape(context, [None], name="context_must_be_a_vector")
    question = tf.ensure_shape(question, [None], name="question_must_be_a_vector")
    choices = tf.ensure_shape(choices, [None, None], name="choices_must_be_batch_by_choices")
    size = tf.size(context)
    checks = [tf.debugging.assert_equal(tf.size(question), size,
                                        message="`context` and `question` must have the same batch size"),
              tf.debugging.assert_equal(tf.shape(choices)[0], size,
                                        message="`choices` must have one row per `context`"),
              tf.debugging.assert_positive(tf.shape(choices)[1], message="`choices` has no column: it must be "
                                           "(batch, choices) with one choice or more per question"),
              tf.debugging.assert_equal(tf.reduce_all(tf.reduce_any(present_choices(choices), axis=1)), True,
                                        message="`choices`: a question whose choices are all empty or blank; each "
                                                "question needs a choice that is not")]
    with tf.control_dependencies(checks):
        return tf.identity(context), tf.identity(question), tf.identity(choices)
