"""ElectraClassifier: an ELECTRA encoder with a sentence(-pair) classification head."""

import keras

from electra_tf.models.task_model import EncoderWithHead


@keras.saving.register_keras_serializable(package="electra_tf")
class ElectraClassifier(EncoderWithHead):
    """[CLS] vector -> dropout -> dense(num_labels), on top of an `ElectraEncoder`.

    The reference fine-tuning head (no pooler): the encoder's output at
    position 0 ([CLS]), dropout 0.1, one dense layer. Outputs are logits
    `(batch, num_labels)`; for a regression task (STS-B) use `num_labels=1`
    and a mean-squared-error loss on the score.

    Args:
        encoder: `ElectraEncoder`. The pre-trained discriminator.
        num_labels: int. Output units (1 for regression).
        dropout: float. Dropout on the [CLS] vector.
        initializer_range: float or None. Std of the head's truncated-normal
            initialiser; None uses the encoder's.

    Call inputs: dict with int32 `token_ids`, `segment_ids`, `padding_mask`
    `(batch, seq_len)`. Returns logits `(batch, num_labels)`. Constructor,
    build and config: `task_model.EncoderWithHead`.

    Example:
        ```python
        import keras, numpy as np
        from electra_tf.models.encoder import ElectraEncoder  # noqa: F401  (registered for `from_config`)
        from electra_tf.tasks.classification.model import ElectraClassifier

        encoder = ElectraEncoder(
            vocab_size=100, num_layers=2, num_heads=2, hidden_dim=32,
            embedding_dim=16, intermediate_dim=64,
        )
        classifier = ElectraClassifier(encoder, num_labels=3)
        ids = np.ones((2, 8), "int32")
        classifier({"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": ids}).shape
        # (2, 3)
        ```
    """

    def head_outputs(self, sequence, inputs, training=None):
        cls = sequence[:, 0, :]
        return self.head(self.head_dropout(cls, training=training))
