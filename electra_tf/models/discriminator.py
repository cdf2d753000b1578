"""ElectraDiscriminator: a pre-trained discriminator with its replaced-token head (transformers'
`ElectraForPreTraining`)."""

import keras

from electra_tf.layers.discriminator_head import DiscriminatorHead
from electra_tf.models.encoder import ElectraEncoder  # noqa: F401  (registered for `from_config`)


@keras.saving.register_keras_serializable(package="electra_tf")
class ElectraDiscriminator(keras.Model):
    """An `ElectraEncoder` and the `DiscriminatorHead` it was pre-trained with: one "was this token replaced?"
    logit per token.

    What a pre-trained ELECTRA is used for as it is (replaced-token scores,
    `python -m electra_tf.predict --init <pre-training run>`): the whole
    `ElectraPretrainer` without its generator, or a Hugging Face
    `ElectraForPreTraining` folder read alone. `from_pretrainer` shares the
    pretrainer's layers (no copy).

    Args:
        encoder: `ElectraEncoder`. The discriminator body.
        head: `DiscriminatorHead` or None. None builds a new one named
            `discriminator_predictions` (the official name), sized for `encoder`.
        activation: str or None. The new head's activation; None: the encoder's (as the official
            head and transformers' read `hidden_act`).
        output_initializer: str. The new head's dense(1) kernel initializer (see `DiscriminatorHead`).

    Call inputs: dict with int32 `token_ids`, `segment_ids`, `padding_mask`
    `(batch, seq_len)`. Returns float32 logits `(batch, seq_len)`;
    `sigmoid` of them is the probability that each token was replaced.

    Example:
    >>> import numpy as np
    >>> from electra_tf.models.discriminator import ElectraDiscriminator
    >>> from electra_tf.models.encoder import ElectraEncoder
    >>> encoder = ElectraEncoder(vocab_size=100, num_layers=1, num_heads=2, hidden_dim=32,
    ...                          embedding_dim=16, intermediate_dim=64)
    >>> detector = ElectraDiscriminator(encoder)
    >>> ids = np.ones((2, 8), "int32")
    >>> tuple(detector({"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": ids}).shape)
    (2, 8)
    """

    def __init__(self, encoder, head=None, activation=None, output_initializer="glorot_uniform", **kwargs):
        super().__init__(**kwargs)
        # === Layers ===
        self.encoder = encoder
        self.head = head or DiscriminatorHead(
            encoder.hidden_dim,
            activation=activation or encoder.activation,
            initializer_range=encoder.initializer_range,
            output_initializer=output_initializer,
            dtype=self.dtype_policy,
            name="discriminator_predictions",
        )
        # === Config ===
        self.output_initializer = self.head.output_initializer
        self.build()

    @classmethod
    def from_pretrainer(cls, pretrainer):
        """The discriminator and head of an `ElectraPretrainer` (its layers, shared); a `ValueError` when the
        pretrainer's objective trains no replaced-token head (`mlm`, `replace_mlm`, `all_tokens_mlm`)."""
        if pretrainer.discriminator_head is None:
            raise ValueError(f"The pretrainer was trained with `objective={pretrainer.objective!r}`, which has no "
                             "replaced-token head (discriminator_predictions): it scores no replaced tokens.")
        return cls(pretrainer.discriminator, pretrainer.discriminator_head, name="electra_discriminator")

    def build(self, input_shape=None):
        if self.built:
            return
        if not self.encoder.built:
            self.encoder.build()
        if not self.head.built:
            self.head.build((None, None, self.encoder.hidden_dim))
        self.built = True

    def call(self, inputs, training=False):
        return self.head_outputs(self.encoder(inputs, training=training), inputs, training)

    def encoder_inputs(self, inputs):
        return inputs

    def head_outputs(self, sequence, inputs, training=False):
        """Per-token logits from `sequence`, the encoder's output on `inputs` (a served graph computes it its own
        way)."""
        return keras.ops.cast(self.head(sequence), "float32")

    def get_config(self):
        return {
            "name": self.name,
            "trainable": self.trainable,
            "encoder": keras.saving.serialize_keras_object(self.encoder),
            "activation": self.head.activation,
            "output_initializer": self.output_initializer,
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["encoder"] = keras.saving.deserialize_keras_object(config["encoder"])
        return cls(**config)
