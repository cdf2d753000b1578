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

Replicas are TensorFlow's (`tf.distribute`). On the JAX and PyTorch backends a
step sees the global batch as one array, so the reductions are the identity
and `replica_uniform` draws from that backend's own generator (`keras.random`
under JAX, `torch.rand` under PyTorch), keyed by the same `(seed, step)`: the
same distribution, other numbers than TensorFlow's Philox stream.
"""

import math

import keras
from keras import ops

from electra_tf import backends

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
    if not backends.is_tensorflow():
        return _backend_uniform(shape, seed)
    import tensorflow as tf

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


def _backend_uniform(shape, seed):
    """`replica_uniform` on the JAX and PyTorch backends: the backend's own generator keyed by `seed`."""
    shape = tuple(int(d) for d in shape)
    if backends.name() == "torch":
        import torch
        from keras.src.backend.torch.core import get_device

        first, second = (int(v) for v in ops.convert_to_numpy(seed))  # eager: the step's values
        generator = torch.Generator(device=get_device())
        generator.manual_seed(_mix64(first, second))  # both halves, no collision of (a + 1, b) with (a, b + 1)
        return torch.rand(shape, generator=generator, dtype=torch.float32, device=get_device())
    return keras.random.uniform(shape, dtype="float32", seed=ops.cast(seed, "uint32"))  # a raw JAX key


def _mix64(first, second):
    """One 64-bit seed from two ints (splitmix64 of each, combined)."""
    def splitmix(z):
        z = (z + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
        return z ^ (z >> 31)

    return splitmix(splitmix(first & 0xFFFFFFFFFFFFFFFF) ^ (second & 0xFFFFFFFFFFFFFFFF)) & 0x7FFFFFFFFFFFFFFF


def fold_seed(seed, salt):
    """A distinct stream per use: (seed[0] * 8 + salt, seed[1])."""
    seed = ops.cast(seed, "int64" if backends.is_tensorflow() else "int32")  # (JAX keeps 32-bit ints)
    return ops.stack([seed[0] * 8 + salt, seed[1]])


def global_mean(values, weights):
    """This replica's share of the weighted mean over the global batch."""
    weights = ops.cast(weights, "float32")
    return ops.sum(values * weights) / (all_reduce_sum(ops.sum(weights)) + 1e-6)


def replica_context():
    """The replica context when more than one `tf.distribute` replica runs in sync, else None (always None
    off the TensorFlow backend)."""
    if not backends.is_tensorflow():
        return None
    import tensorflow as tf

    context = tf.distribute.get_replica_context()
    return context if context is not None and context.num_replicas_in_sync > 1 else None


def all_gather(value):
    """`value` of every replica concatenated on axis 0 (identity on one replica)."""
    context = replica_context()
    if context is None or len(value.shape) == 0:
        return value
    return context.all_gather(value, axis=0)


def all_reduce_sum(value):
    """`value` summed over the replicas (identity on one replica)."""
    context = replica_context()
    if context is None:
        return value
    import tensorflow as tf

    return context.all_reduce(tf.distribute.ReduceOp.SUM, value)


def is_multi_worker(strategy=None):
    """True for a `MultiWorkerMirroredStrategy` running on more than one worker (None: the current strategy;
    always False off the TensorFlow backend)."""
    if not backends.is_tensorflow():
        return False
    import tensorflow as tf

    strategy = strategy or tf.distribute.get_strategy()
    return isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy) and (
        strategy.extended._in_multi_worker_mode()
    )
