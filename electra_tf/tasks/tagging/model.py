"""ElectraTokenClassifier: an ELECTRA encoder with a per-token tagging head (NER, chunking, POS)."""

import keras

from electra_tf.models.task_model import EncoderWithHead


@keras.saving.register_keras_serializable(package="electra_tf")
class ElectraTokenClassifier(EncoderWithHead):
    """Every token's hidden state -> dropout -> dense(num_labels), on top of an `ElectraEncoder`.

    The reference tagging head (official `finetune/tagging`): the encoder's
    sequence output, dropout 0.1, one dense layer applied at every position.
    Which positions carry a label (a word's first WordPiece) is the data's
    business (`electra_tf.tasks.tagging.features`); the loss ignores the
    others (`electra_tf.tasks.tagging.kind.MaskedSparseCrossEntropy`).
    Logits are returned in float32 under a mixed-precision policy.

    Args:
        encoder: `ElectraEncoder`. The pre-trained discriminator.
        num_labels: int. Tags.
        dropout: float. Dropout on the hidden states.
        initializer_range: float or None. Std of the head's truncated-normal
            initialiser; None uses the encoder's.

    Call inputs: dict with int32 `token_ids`, `segment_ids`, `padding_mask`
    `(batch, seq_len)`. Returns logits `(batch, seq_len, num_labels)`.
    Constructor, build and config: `task_model.EncoderWithHead`.

    Example:
    >>> import numpy as np
    >>> from electra_tf.models.encoder import ElectraEncoder
    >>> from electra_tf.tasks.tagging.model import ElectraTokenClassifier
    >>> encoder = ElectraEncoder(vocab_size=100, num_layers=2, num_heads=2, hidden_dim=32,
    ...                          embedding_dim=16, intermediate_dim=64)
    >>> tagger = ElectraTokenClassifier(encoder, num_labels=9)
    >>> ids = np.ones((2, 8), "int32")
    >>> tuple(tagger({"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": ids}).shape)
    (2, 8, 9)
    """

    head_input_rank = 3

    def call(self, inputs, training=None):
        sequence = self.encoder(inputs, training=training)
        logits = self.head(self.head_dropout(sequence, training=training))
        return keras.ops.cast(logits, "float32")

    def get_config(self):
        return {**super().get_config(), "dtype": keras.dtype_policies.serialize(self.dtype_policy)}
