"""How N replicas train like one device: the arithmetic, in one place.

- Randomness (`replica_uniform`): a stateless Philox stream keyed by
  `(seed, step)` in which every replica reads the rows of its own slice of the
  global batch, so the numbers an example sees do not depend on how many
  devices share the batch (and XLA/TPU-friendly). `fold_seed` derives one
  stream per use.
- Losses (`global_mean`): each replica's share of the weighted mean over the
  global batch, so summing over replicas (as gradient all-reduce does) gives
  the global mean.
- Metrics (`all_gather`, `all_reduce_sum`): every replica sees the whole
  global batch, so its result is the global one.
"""

import math

import tensorflow as tf

_PHILOX = 1  # tf.random.Algorithm.PHILOX; emits 4 uint32 (4 float32s) per counter step


def replica_uniform(shape, seed):
    """Uniform [0, 1) float32 of `shape`, rows taken from the global batch's stream.

    Args:
        shape: list; `shape[0]` is this replica's batch size (int or scalar
            tensor), the other dimensions are static ints.
        seed: int64 tensor of shape (2,), e.g. `(base_seed, step)`.

    Returns:
        float32 tensor of `shape`. Under a strategy with R replicas of batch b,
        replica r gets rows `[r * b, (r + 1) * b)` of what one device drawing
        `(R * b,) + shape[1:]` with the same seed gets.
    """
    batch, row = shape[0], math.prod(shape[1:])
    padded_row = -(-row // 4) * 4  # each row starts on a Philox block
    context = tf.distribute.get_replica_context()
    replica_id = context.replica_id_in_sync_group if context is not None else 0
    key, counter = tf.raw_ops.StatelessRandomGetKeyCounter(seed=seed)
    offset = tf.cast(replica_id, tf.int64) * tf.cast(batch, tf.int64) * (padded_row // 4)
    counter = tf.bitcast(tf.bitcast(counter, tf.int64) + tf.stack([offset, 0]), tf.uint64)
    values = tf.raw_ops.StatelessRandomUniformV2(
        shape=tf.reshape(batch * padded_row, [1]), key=key, counter=counter, alg=_PHILOX, dtype=tf.float32
    )
    values = tf.reshape(values, [batch, padded_row])[:, :row]
    return tf.reshape(values, tf.stack([batch] + list(shape[1:])) if tf.is_tensor(batch) else shape)


def fold_seed(seed, salt):
    """A distinct stream per use: (seed[0] * 8 + salt, seed[1])."""
    seed = tf.cast(seed, tf.int64)
    return tf.stack([seed[0] * 8 + salt, seed[1]])


def global_mean(values, weights):
    """This replica's share of the weighted mean over the global batch."""
    weights = tf.cast(weights, tf.float32)
    return tf.reduce_sum(values * weights) / (all_reduce_sum(tf.reduce_sum(weights)) + 1e-6)


def replica_context():
    """The replica context when more than one replica runs in sync, else None."""
    context = tf.distribute.get_replica_context()
    return context if context is not None and context.num_replicas_in_sync > 1 else None


def all_gather(value):
    """`value` of every replica concatenated on axis 0 (identity on one replica)."""
    context = replica_context()
    if context is None or value.shape.rank == 0:
        return value
    return context.all_gather(value, axis=0)


def all_reduce_sum(value):
    """`value` summed over the replicas (identity on one replica)."""
    context = replica_context()
    return value if context is None else context.all_reduce(tf.distribute.ReduceOp.SUM, value)


def is_multi_worker(strategy):
    """True for a `MultiWorkerMirroredStrategy` running on more than one worker."""
    return isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy) and (
        strategy.extended._in_multi_worker_mode()
    )
