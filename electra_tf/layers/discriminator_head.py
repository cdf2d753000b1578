"""The replaced-token-detection head."""

import keras

from electra_tf.layers.initializers import kernel_initializer


@keras.saving.register_keras_serializable(package="electra_tf")
class DiscriminatorHead(keras.layers.Layer):
    """dense(H, activation) -> dense(1): one "was this token replaced?" logit per token.

    Args:
        hidden_dim: int. Width of the first dense layer (the encoder's H).
        activation: str. "gelu" (exact) as released.
        initializer_range: float. Truncated-normal std of the first dense layer.
        output_initializer: str. Kernel initializer of the dense(1):
            "glorot_uniform" (the official `tf.layers.dense(hidden, units=1)`
            default) or "truncated_normal" (`initializer_range`).

    Example:
        ```python
        import numpy as np

        from electra_tf.layers.discriminator_head import DiscriminatorHead

        head = DiscriminatorHead(hidden_dim=32)
        head(np.zeros((2, 8, 32), "float32")).shape  # (2, 8)
        ```
    """

    def __init__(self, hidden_dim, activation="gelu", initializer_range=0.02,
                 output_initializer="glorot_uniform", **kwargs):
        super().__init__(**kwargs)
        self.hidden_dim = hidden_dim
        self.activation = activation
        self.initializer_range = initializer_range
        self.output_initializer = output_initializer
        initializer = keras.initializers.TruncatedNormal(stddev=initializer_range)
        self.dense = keras.layers.Dense(
            hidden_dim,
            activation=keras.activations.get(activation),
            kernel_initializer=initializer,
            dtype=self.dtype_policy,
            name="dense",
        )
        self.dense_prediction = keras.layers.Dense(
            1,
            kernel_initializer=kernel_initializer(output_initializer, initializer_range),
            dtype=self.dtype_policy,
            name="dense_prediction",
        )

    def build(self, inputs_shape):
        self.dense.build(inputs_shape)
        self.dense_prediction.build(tuple(inputs_shape[:-1]) + (self.hidden_dim,))
        self.built = True

    def call(self, sequence_output):
        """`(batch, seq_len, H)` -> logits `(batch, seq_len)`."""
        return keras.ops.squeeze(self.dense_prediction(self.dense(sequence_output)), axis=-1)

    def compute_output_shape(self, inputs_shape):
        return tuple(inputs_shape[:-1])

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "hidden_dim": self.hidden_dim,
                "activation": self.activation,
                "initializer_range": self.initializer_range,
                "output_initializer": self.output_initializer,
            }
        )
        return config
