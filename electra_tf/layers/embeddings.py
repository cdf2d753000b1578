"""The embeddings the generator and the discriminator share."""

import keras
from keras_hub.layers import PositionEmbedding

from electra_tf.layers.initializers import drawn


@keras.saving.register_keras_serializable(package="electra_tf")
class ElectraEmbeddings(keras.layers.Layer):
    """Token + position + segment embeddings, LayerNorm, dropout.

    ELECTRA's generator and discriminator read their inputs through one
    instance of this layer: one token table, one position table, one segment
    table and one LayerNorm. The token table is a `keras.layers.ReversibleEmbedding`,
    so the generator's MLM head can project back onto it (tied output
    embeddings).

    Args:
        vocab_size: int. Rows of the token-embedding table.
        embedding_dim: int. Width E of every embedding.
        max_sequence_length: int. Rows of the position-embedding table.
        num_segments: int. Rows of the segment (token-type) table.
        dropout: float. Dropout after the LayerNorm.
        layer_norm_epsilon: float.
        initializer_range: float. Std of the truncated-normal initialiser.

    Example:
        ```python
        import numpy as np

        from electra_tf.layers.embeddings import ElectraEmbeddings

        embeddings = ElectraEmbeddings(vocab_size=100, embedding_dim=16)
        x = embeddings(np.ones((2, 8), "int32"), np.zeros((2, 8), "int32"))
        x.shape  # (2, 8, 16)
        ```
    """

    def __init__(
        self,
        vocab_size,
        embedding_dim,
        max_sequence_length=512,
        num_segments=2,
        dropout=0.1,
        layer_norm_epsilon=1e-12,
        initializer_range=0.02,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.vocab_size = vocab_size
        self.embedding_dim = embedding_dim
        self.max_sequence_length = max_sequence_length
        self.num_segments = num_segments
        self.dropout = dropout
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range

        initializer = drawn(keras.initializers.TruncatedNormal(stddev=initializer_range))
        self.token_embedding = keras.layers.ReversibleEmbedding(
            vocab_size,
            embedding_dim,
            embeddings_initializer=initializer,
            dtype=self.dtype_policy,
            name="token_embedding",
        )
        self.position_embedding = PositionEmbedding(
            sequence_length=max_sequence_length,
            initializer=initializer,
            dtype=self.dtype_policy,
            name="position_embedding",
        )
        self.segment_embedding = keras.layers.Embedding(
            num_segments,
            embedding_dim,
            embeddings_initializer=initializer,
            dtype=self.dtype_policy,
            name="segment_embedding",
        )
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_epsilon, dtype=self.dtype_policy, name="embeddings_layer_norm"
        )
        self.dropout_layer = keras.layers.Dropout(dropout, dtype=self.dtype_policy)

    def build(self, token_ids_shape, segment_ids_shape=None):
        self.token_embedding.build(token_ids_shape)
        self.segment_embedding.build(token_ids_shape)
        embedded_shape = tuple(token_ids_shape) + (self.embedding_dim,)
        self.position_embedding.build(embedded_shape)
        self.layer_norm.build(embedded_shape)
        self.built = True

    def call(self, token_ids, segment_ids, training=None):
        """Embeds `(batch, seq_len)` ids into `(batch, seq_len, embedding_dim)`."""
        tokens = self.token_embedding(token_ids)
        x = tokens + self.position_embedding(tokens) + self.segment_embedding(segment_ids)
        return self.dropout_layer(self.layer_norm(x), training=training)

    def compute_output_shape(self, token_ids_shape, segment_ids_shape=None):
        return tuple(token_ids_shape) + (self.embedding_dim,)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocab_size": self.vocab_size,
                "embedding_dim": self.embedding_dim,
                "max_sequence_length": self.max_sequence_length,
                "num_segments": self.num_segments,
                "dropout": self.dropout,
                "layer_norm_epsilon": self.layer_norm_epsilon,
                "initializer_range": self.initializer_range,
            }
        )
        return config
