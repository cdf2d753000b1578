"""ElectraTokenClassifier: an ELECTRA encoder with a per-token tagging head (NER, chunking, POS)."""

import keras

from electra_tf.layers.replicas import all_reduce_sum
from electra_tf.models.task_model import EncoderWithHead
from electra_tf.tasks.tagging.features import IGNORE_INDEX


@keras.saving.register_keras_serializable(package="electra_tf")
class ElectraTokenClassifier(EncoderWithHead):
    """Every token's hidden state -> dropout -> dense(num_labels), on top of an `ElectraEncoder`.

    The reference tagging head (official `finetune/tagging`): the encoder's
    sequence output, dropout 0.1, one dense layer applied at every position.
    Which positions carry a label (a word's first WordPiece) is the data's
    business (`electra_tf.tasks.tagging.features`); the loss ignores the
    others (`MaskedSparseCrossEntropy` below).
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

    def head_outputs(self, sequence, inputs, training=None):
        logits = self.head(self.head_dropout(sequence, training=training))
        return keras.ops.cast(logits, "float32")

    def get_config(self):
        return {**super().get_config(), "dtype": keras.dtype_policies.serialize(self.dtype_policy)}


@keras.saving.register_keras_serializable(package="electra_tf")
class MaskedSparseCrossEntropy(keras.losses.Loss):
    """Cross-entropy from logits, averaged over the tokens whose label is not `IGNORE_INDEX`.

    The mean is over the labelled tokens of the *global* batch: under a
    `tf.distribute` strategy each replica divides its sum by the token count
    summed over replicas, and the replicas' gradients are summed, so N
    replicas train exactly like one device on the same global batch. (Keras
    divides a loss by N only when it reduces a per-example loss itself; this
    one returns a scalar, already the replica's share.) A batch with no
    labelled token has loss 0.

    Example:
    >>> import numpy as np
    >>> from electra_tf.tasks.tagging.model import MaskedSparseCrossEntropy
    >>> loss = MaskedSparseCrossEntropy()
    >>> labels = np.array([[-100, 1, 0, -100]])
    >>> logits = np.log(np.array([[[.5, .5], [.2, .8], [.6, .4], [.9, .1]]]))
    >>> round(float(loss(labels, logits)), 5)  # -(log .8 + log .6) / 2: the two labelled tokens
    0.36698
    """

    def __init__(self, name="masked_sparse_cross_entropy", **kwargs):
        super().__init__(name=name, **kwargs)

    def call(self, y_true, y_pred):
        labels = keras.ops.cast(y_true, "int32")
        mask = keras.ops.not_equal(labels, IGNORE_INDEX)
        per_token = keras.losses.sparse_categorical_crossentropy(
            keras.ops.where(mask, labels, 0), keras.ops.cast(y_pred, "float32"), from_logits=True)
        mask = keras.ops.cast(mask, "float32")
        total, count = keras.ops.sum(per_token * mask), all_reduce_sum(keras.ops.sum(mask))
        return total / keras.ops.maximum(count, 1.0)
