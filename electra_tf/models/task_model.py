"""What the fine-tuning models share: an `ElectraEncoder`, dropout and one dense task head."""

import keras

from electra_tf.models.encoder import ElectraEncoder  # noqa: F401  (registered for `from_config`)


class EncoderWithHead(keras.Model):
    """An `ElectraEncoder` -> dropout -> dense(num_labels): the constructor, build and config.

    Subclasses say where the head reads (`head_input_rank`: 2 for the [CLS]
    vector, 3 for every token) and what the head makes of the encoder's output
    (`head_outputs`); `call` is the encoder on `encoder_inputs(inputs)`, then `head_outputs`.
    A served SavedModel computes the encoder its own way and calls `head_outputs` on it
    (`electra_tf.exporting.assets.ServedModel.model_outputs`).

    Args:
        encoder: `ElectraEncoder`. The pre-trained discriminator.
        num_labels: int. Output units.
        dropout: float. Dropout before the head.
        initializer_range: float or None. Std of the head's truncated-normal
            initialiser; None uses the encoder's.
    """

    head_input_rank = 2

    def __init__(self, encoder, num_labels, dropout=0.1, initializer_range=None, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(num_labels, int) or num_labels < 1:
            raise ValueError(f"`num_labels` must be a positive int. Received: `num_labels={num_labels!r}`")
        if initializer_range is None:
            initializer_range = getattr(encoder, "initializer_range", 0.02)
        # === Layers ===
        self.encoder = encoder
        self.head_dropout = keras.layers.Dropout(dropout, dtype=self.dtype_policy, name="head_dropout")
        self.head = keras.layers.Dense(
            num_labels,
            kernel_initializer=keras.initializers.TruncatedNormal(stddev=initializer_range),
            dtype=self.dtype_policy,
            name="task_head",
        )

        # === Config ===
        self.num_labels = num_labels
        self.dropout = dropout
        self.initializer_range = initializer_range

    def build(self, input_shape=None):
        if self.built:
            return
        if not self.encoder.built:
            self.encoder.build(input_shape)
        self.head.build((None,) * (self.head_input_rank - 1) + (self.encoder.hidden_dim,))
        self.built = True

    def encoder_inputs(self, inputs):
        """What `call` feeds the encoder: `inputs` themselves (a subclass that reshapes them says how)."""
        return inputs

    def head_outputs(self, sequence, inputs, training=None):
        """`call`'s outputs from `sequence`, the encoder's output on `encoder_inputs(inputs)`."""
        raise NotImplementedError

    def call(self, inputs, training=None):
        sequence = self.encoder(self.encoder_inputs(inputs), training=training)
        return self.head_outputs(sequence, inputs, training=training)

    def get_config(self):
        return {
            "name": self.name,
            "trainable": self.trainable,
            "encoder": keras.saving.serialize_keras_object(self.encoder),
            "num_labels": self.num_labels,
            "dropout": self.dropout,
            "initializer_range": self.initializer_range,
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["encoder"] = keras.saving.deserialize_keras_object(config["encoder"])
        return cls(**config)
