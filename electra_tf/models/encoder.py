"""The ELECTRA transformer encoder (discriminator or generator body)."""

import keras
from keras_hub.layers import TransformerEncoder

from electra_tf.layers.dropout import use_integer_bits_dropout
from electra_tf.layers.embeddings import ElectraEmbeddings
from electra_tf.layers.flat_projections import flatten_attention_projections
from electra_tf.layers.initializers import drawn, kernel_initializer


@keras.saving.register_keras_serializable(package="electra_tf")
class ElectraEncoder(keras.Model):
    """A BERT-style post-LN encoder over (possibly shared) ELECTRA embeddings.

    embeddings (E) -> `embeddings_project` dense(E -> H) when E != H ->
    `num_layers` keras-hub `TransformerEncoder` blocks (post-LN, GELU).
    Pass `embeddings=` to read through a shared `ElectraEmbeddings`; the
    projection and the transformer blocks are always this encoder's own.
    The layer structure mirrors `keras_hub.models.ElectraBackbone`, so a
    discriminator converts to a keras-hub preset by copying weights.

    Args:
        vocab_size: int. Token-table rows (ignored when `embeddings` is given).
        num_layers: int. Transformer blocks.
        num_heads: int. Attention heads; must divide `hidden_dim`.
        hidden_dim: int. Width H of the blocks.
        embedding_dim: int. Width E of the embeddings.
        intermediate_dim: int. Feed-forward width.
        dropout: float. Hidden and attention dropout.
        max_sequence_length: int. Position-table rows.
        num_segments: int. Segment-table rows.
        activation: str. "gelu" (exact, as released) or "gelu_approximate".
        layer_norm_epsilon: float.
        initializer_range: float. Truncated-normal std.
        embeddings_project_initializer: str. Kernel initializer of
            `embeddings_project`: "glorot_uniform" (the official
            `tf.layers.dense` default) or "truncated_normal" (`initializer_range`).
        embeddings: optional `ElectraEmbeddings` to share.

    Call inputs: dict with int32 `token_ids`, `segment_ids`, `padding_mask`,
    each `(batch, seq_len)`. Returns the sequence output `(batch, seq_len, hidden_dim)`.

    Example:
        ```python
        import numpy as np

        from electra_tf.models.encoder import ElectraEncoder

        encoder = ElectraEncoder(
            vocab_size=100, num_layers=2, num_heads=2, hidden_dim=32,
            embedding_dim=16, intermediate_dim=64,
        )
        ids = np.ones((2, 8), "int32")
        encoder({"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": ids}).shape
        # (2, 8, 32)
        ```
    """

    def __init__(
        self,
        vocab_size,
        num_layers,
        num_heads,
        hidden_dim,
        embedding_dim,
        intermediate_dim,
        dropout=0.1,
        max_sequence_length=512,
        num_segments=2,
        activation="gelu",
        layer_norm_epsilon=1e-12,
        initializer_range=0.02,
        embeddings_project_initializer="glorot_uniform",
        embeddings=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        # === Layers ===
        if embeddings is None:
            embeddings = ElectraEmbeddings(
                vocab_size=vocab_size,
                embedding_dim=embedding_dim,
                max_sequence_length=max_sequence_length,
                num_segments=num_segments,
                dropout=dropout,
                layer_norm_epsilon=layer_norm_epsilon,
                initializer_range=initializer_range,
                dtype=self.dtype_policy,
                name="embeddings",
            )
        elif (embeddings.vocab_size, embeddings.embedding_dim) != (vocab_size, embedding_dim):
            raise ValueError(
                "The shared `embeddings` do not match this encoder. Received: "
                f"`embeddings.vocab_size={embeddings.vocab_size}`, "
                f"`embeddings.embedding_dim={embeddings.embedding_dim}`, "
                f"`vocab_size={vocab_size}`, `embedding_dim={embedding_dim}`"
            )
        self.embeddings = embeddings
        initializer = drawn(keras.initializers.TruncatedNormal(stddev=initializer_range))
        self.embeddings_project = None
        if embedding_dim != hidden_dim:
            self.embeddings_project = keras.layers.Dense(
                hidden_dim,
                kernel_initializer=drawn(kernel_initializer(embeddings_project_initializer, initializer_range)),
                dtype=self.dtype_policy,
                name="embeddings_project",
            )
        self.transformer_layers = [
            TransformerEncoder(
                num_heads=num_heads,
                intermediate_dim=intermediate_dim,
                activation=_activation(activation),
                dropout=dropout,
                layer_norm_epsilon=layer_norm_epsilon,
                kernel_initializer=initializer,
                dtype=self.dtype_policy,
                name=f"transformer_layer_{i}",
            )
            for i in range(num_layers)
        ]

        # === Config ===
        self.vocab_size = vocab_size
        self.num_layers = num_layers
        self.num_heads = num_heads
        self.hidden_dim = hidden_dim
        self.embedding_dim = embedding_dim
        self.intermediate_dim = intermediate_dim
        self.dropout = dropout
        self.max_sequence_length = max_sequence_length
        self.num_segments = num_segments
        self.activation = activation
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range
        self.embeddings_project_initializer = embeddings_project_initializer

    def build(self, input_shape=None):
        if self.built:
            return
        shape = (None, None)
        if not self.embeddings.built:
            self.embeddings.build(shape)
        x_shape = (None, None, self.embedding_dim)
        if self.embeddings_project is not None:
            self.embeddings_project.build(x_shape)
        x_shape = (None, None, self.hidden_dim)
        for layer in self.transformer_layers:
            layer.build(x_shape)
            # The same computation, cheaper on CPU with TensorFlow: 2-D attention
            # projections (`FlatEinsumDense`) and dropout masks from the same
            # random bits compared as integers (`IntegerBitsDropout`); the
            # variables are unchanged. Other backends keep Keras' layers.
            flatten_attention_projections(layer._self_attention_layer)
        use_integer_bits_dropout(self)
        self.built = True

    def call(self, inputs, training=None):
        x = self.embeddings(inputs["token_ids"], inputs["segment_ids"], training=training)
        if self.embeddings_project is not None:
            x = self.embeddings_project(x)
        padding_mask = inputs["padding_mask"]
        for layer in self.transformer_layers:
            x = layer(x, padding_mask=padding_mask, training=training)
        return x

    def get_config(self):
        # The shared `embeddings` object is not serialised here: a standalone
        # encoder rebuilds its own, `ElectraPretrainer.from_config` re-shares.
        return {
            "name": self.name,
            "trainable": self.trainable,
            "dtype": keras.dtype_policies.serialize(self.dtype_policy),
            "vocab_size": self.vocab_size,
            "num_layers": self.num_layers,
            "num_heads": self.num_heads,
            "hidden_dim": self.hidden_dim,
            "embedding_dim": self.embedding_dim,
            "intermediate_dim": self.intermediate_dim,
            "dropout": self.dropout,
            "max_sequence_length": self.max_sequence_length,
            "num_segments": self.num_segments,
            "activation": self.activation,
            "layer_norm_epsilon": self.layer_norm_epsilon,
            "initializer_range": self.initializer_range,
            "embeddings_project_initializer": self.embeddings_project_initializer,
        }

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def _activation(name):
    if name == "gelu":
        return keras.activations.gelu  # exact erf form (approximate=False), as released
    if name == "gelu_approximate":
        return lambda x: keras.activations.gelu(x, approximate=True)
    return keras.activations.get(name)
