"""Multiple-negatives ranking loss: each query against every passage of its batch (in-batch negatives).

The loss of sentence-transformers' `MultipleNegativesRankingLoss` (Henderson et al. 2017):
for a batch of `b` rows (query, positive[, hard negative]), the passages are the `b`
positives (then the `b` hard negatives); query `i` scores each passage by
`scale * cosine(query, passage)` and the loss is the cross-entropy of its own positive,
passage `i`, averaged over the batch. The rows of other queries are the negatives.

With several replicas (`tf.distribute`), each replica's loss is over its own share of the
global batch: the negatives of a query are the passages of its replica's rows.

Example:
>>> import numpy as np
>>> from electra_tf.tasks.embedding.loss import MultipleNegativesRankingLoss
>>> vectors = np.array([[[1.0, 0.0], [1.0, 0.0]], [[0.0, 1.0], [0.0, 1.0]]], "float32")  # (batch, 2, dim)
>>> round(float(MultipleNegativesRankingLoss(scale=20.0)(np.zeros(2), vectors)), 6)  # log(1 + e^-20)
0.0
"""

import keras
import tensorflow as tf


@keras.saving.register_keras_serializable(package="electra_tf")
class MultipleNegativesRankingLoss(keras.losses.Loss):
    """Cross-entropy over `scale`d cosine similarities of each query with the batch's passages.

    `y_pred`: `(batch, n, dim)` vectors, query first, then its positive, then hard negatives
    (`n` >= 2). `y_true` is not read (the positive of row `i` is passage `i`).

    Args:
        scale: float. The similarities' multiplier (sentence-transformers' default 20).
    """

    def __init__(self, scale=20.0, name="multiple_negatives_ranking", **kwargs):
        super().__init__(name=name, **kwargs)
        self.scale = float(scale)

    def call(self, y_true, y_pred):
        if keras.backend.backend() != "tensorflow":
            return self._keras_ops_call(y_pred)
        vectors = tf.math.l2_normalize(tf.cast(y_pred, tf.float32), axis=-1, epsilon=1e-24)
        queries = vectors[:, 0, :]
        passages = tf.reshape(tf.transpose(vectors[:, 1:, :], [1, 0, 2]), [-1, tf.shape(vectors)[-1]])
        scores = self.scale * tf.matmul(queries, passages, transpose_b=True)  # (batch, batch * (n - 1))
        labels = tf.range(tf.shape(queries)[0])
        return tf.nn.sparse_softmax_cross_entropy_with_logits(labels, scores)

    def _keras_ops_call(self, y_pred):
        """The same loss in `keras.ops` (JAX, PyTorch)."""
        ops = keras.ops
        vectors = ops.cast(y_pred, "float32")
        vectors = vectors / ops.sqrt(ops.maximum(ops.sum(ops.square(vectors), axis=-1, keepdims=True), 1e-24))
        queries = vectors[:, 0, :]
        passages = ops.reshape(ops.transpose(vectors[:, 1:, :], [1, 0, 2]), [-1, ops.shape(vectors)[-1]])
        scores = self.scale * ops.matmul(queries, ops.transpose(passages))
        labels = ops.arange(ops.shape(queries)[0])
        return ops.sparse_categorical_crossentropy(labels, scores, from_logits=True)

    def get_config(self):
        return {**super().get_config(), "scale": self.scale}
