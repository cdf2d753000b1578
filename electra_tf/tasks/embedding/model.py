"""ElectraEmbedder: an ELECTRA (or BERT) encoder that maps a text to one unit vector, for semantic search."""

import keras
from keras import ops

from electra_tf.models.encoder import ElectraEncoder  # noqa: F401  (registered for `from_config`)
from electra_tf.tasks.embedding.config import POOLINGS


@keras.saving.register_keras_serializable(package="electra_tf")
class ElectraEmbedder(keras.Model):
    """Encoder -> pooling -> L2 normalisation: sentence-transformers' Transformer, Pooling and Normalize.

    `pooling="mean"` averages the encoder's outputs over the tokens of the
    `padding_mask` ([CLS] and [SEP] included, as sentence-transformers' mean
    pooling does); `"cls"` takes the output at position 0. With `normalize`
    the vector is divided by its L2 norm, so a dot product is the cosine.
    Vectors are float32 whatever the dtype policy.

    Args:
        encoder: `ElectraEncoder`.
        pooling: "mean" or "cls".
        normalize: bool.

    Call inputs: dict with int32 `token_ids`, `segment_ids`, `padding_mask`
    `(batch, seq_len)`, or `(batch, n, seq_len)` for `n` texts per row (a query,
    its positive and a hard negative in training). Returns `(batch, hidden_dim)`,
    or `(batch, n, hidden_dim)`.

    Example:
        ```python
        import numpy as np
        from electra_tf.models.encoder import ElectraEncoder
        from electra_tf.tasks.embedding.model import ElectraEmbedder

        encoder = ElectraEncoder(vocab_size=100, num_layers=1, num_heads=2, hidden_dim=32, embedding_dim=16,
                                 intermediate_dim=64)
        embedder = ElectraEmbedder(encoder)
        ids = np.ones((2, 8), "int32")
        vectors = embedder({"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": ids})
        vectors.shape, np.linalg.norm(vectors, axis=-1).round(4).tolist()  # (2, 32), [1.0, 1.0]
        ```
    """

    def __init__(self, encoder, pooling="mean", normalize=True, **kwargs):
        super().__init__(**kwargs)
        if pooling not in POOLINGS:
            raise ValueError(f"`pooling` must be one of {POOLINGS}. Received: `pooling={pooling!r}`")
        self.encoder = encoder
        self.pooling = pooling
        self.normalize = bool(normalize)

    def build(self, input_shape=None):
        if self.built:
            return
        if not self.encoder.built:
            self.encoder.build(input_shape)
        self.built = True

    def call(self, inputs, training=None):
        return self.head_outputs(self.encoder(self.encoder_inputs(inputs), training=training), inputs, training)

    def encoder_inputs(self, inputs):
        """What `call` feeds the encoder: `inputs`, or with several texts per row, one row per text."""
        if len(inputs["token_ids"].shape) == 3:
            length = ops.shape(inputs["token_ids"])[2]
            return {k: ops.reshape(v, (-1, length)) for k, v in inputs.items()}
        return inputs

    def head_outputs(self, sequence, inputs, training=None):
        """The pooled (and normalised) vectors from `sequence`, the encoder's output on `encoder_inputs(inputs)`."""
        rank = len(inputs["token_ids"].shape)
        if rank == 3:  # several texts per row
            shape = ops.shape(inputs["token_ids"])
            inputs = self.encoder_inputs(inputs)
        sequence = ops.cast(sequence, "float32")
        if self.pooling == "cls":
            vectors = sequence[:, 0, :]
        else:
            mask = ops.expand_dims(ops.cast(inputs["padding_mask"], "float32"), -1)  # no new-axis slice: LiteRT has none
            vectors = ops.sum(sequence * mask, axis=1) / ops.maximum(ops.sum(mask, axis=1), 1e-9)
        if self.normalize:
            vectors = l2_normalize(vectors)
        if rank == 3:
            vectors = ops.reshape(vectors, (shape[0], shape[1], -1))
        return vectors

    def get_config(self):
        return {
            "name": self.name,
            "trainable": self.trainable,
            "encoder": keras.saving.serialize_keras_object(self.encoder),
            "pooling": self.pooling,
            "normalize": self.normalize,
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["encoder"] = keras.saving.deserialize_keras_object(config["encoder"])
        return cls(**config)


def l2_normalize(vectors):
    """`x / max(|x|, 1e-12)` over the last axis, as torch's `normalize` (TensorFlow's `l2_normalize`'s ops with
    epsilon 1e-24: `x * rsqrt(max(sum(x^2), 1e-24))`)."""
    squares = ops.sum(ops.square(vectors), axis=-1, keepdims=True)
    return vectors * ops.rsqrt(ops.maximum(squares, 1e-24))
