"""ElectraMultipleChoice: an ELECTRA encoder that scores each (context, choice) pair and picks one."""

import keras

from electra_tf.models.task_model import EncoderWithHead

ABSENT = -1e9  # the logit of a choice slot with no tokens (a question with fewer choices than the batch's widest)


@keras.saving.register_keras_serializable(package="electra_tf")
class ElectraMultipleChoice(EncoderWithHead):
    """One [CLS] score per (context, choice) pair, compared across the choices (softmax).

    The multiple-choice head of ELECTRA's fine-tuning code and of transformers'
    `ElectraForMultipleChoice`: every choice is packed with its context as one
    sequence (`[CLS] context [SEP] choice [SEP]`), the encoder reads it, its
    [CLS] vector goes through dropout and a dense(1) layer, and the scores of a
    question's choices are its logits. A choice slot whose `padding_mask` is all
    zero (a question with fewer choices than the widest of its batch) gets the
    logit -1e9, so it takes no probability.

    Args:
        encoder: `ElectraEncoder`. The pre-trained discriminator.
        dropout: float. Dropout on the [CLS] vector.
        initializer_range: float or None. Std of the head's truncated-normal
            initialiser; None uses the encoder's.

    Call inputs: dict with int32 `token_ids`, `segment_ids`, `padding_mask`
    `(batch, num_choices, seq_len)`. Returns float32 logits `(batch, num_choices)`.
    Constructor, build and config: `task_model.EncoderWithHead` (with `num_labels=1`).

    Example:
    >>> import numpy as np
    >>> from electra_tf.models.encoder import ElectraEncoder
    >>> from electra_tf.tasks.multiple_choice.model import ElectraMultipleChoice
    >>> encoder = ElectraEncoder(vocab_size=100, num_layers=1, num_heads=2, hidden_dim=32,
    ...                          embedding_dim=16, intermediate_dim=64)
    >>> model = ElectraMultipleChoice(encoder)
    >>> ids = np.ones((2, 4, 8), "int32")
    >>> mask = ids.copy(); mask[1, 3] = 0  # the second question has 3 choices
    >>> logits = model({"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": mask})
    >>> tuple(logits.shape), float(logits[1, 3])
    ((2, 4), -1000000000.0)
    """

    def __init__(self, encoder, num_labels=1, dropout=0.1, initializer_range=None, **kwargs):
        if num_labels != 1:
            raise ValueError(f"A multiple-choice head scores each choice with one unit. Received: "
                             f"`num_labels={num_labels!r}`")
        super().__init__(encoder, 1, dropout=dropout, initializer_range=initializer_range, **kwargs)

    def encoder_inputs(self, inputs):
        """`(batch * num_choices, seq_len)`: every (context, choice) sequence a row of one batch."""
        length = keras.ops.shape(inputs["token_ids"])[-1]
        return {name: keras.ops.reshape(inputs[name], (-1, length))
                for name in ("token_ids", "segment_ids", "padding_mask")}

    def head_outputs(self, sequence, inputs, training=None):
        shape = keras.ops.shape(inputs["token_ids"])  # (batch, num_choices, seq_len)
        cls = sequence[:, 0, :]
        scores = self.head(self.head_dropout(cls, training=training))
        logits = keras.ops.reshape(keras.ops.cast(scores, "float32"), (shape[0], shape[1]))
        present = keras.ops.any(keras.ops.not_equal(inputs["padding_mask"], 0), axis=-1)
        return keras.ops.where(present, logits, ABSENT)

    def get_config(self):
        config = super().get_config()
        config.pop("num_labels")
        return {**config, "dtype": keras.dtype_policies.serialize(self.dtype_policy)}
