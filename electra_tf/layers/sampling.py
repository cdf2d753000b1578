"""Generator sampling: the generator's predictions -> the tokens that replace the chosen ones.

Plain functions of tensors, run inside the training step, without gradient;
randomness from `replicas.replica_uniform` (one device and N replicas draw
the same samples for an example). `gumbel_sample` (the reference) is
`keras.ops` and runs on any Keras backend; `inverse_cdf_sample` is a
TensorFlow speed path (`sampler="inverse_cdf"`, TensorFlow backend only).
"""

from keras import ops

from electra_tf import backends
from electra_tf.layers.replicas import fold_seed, replica_uniform


def gumbel_sample(logits, seed, temperature=1.0, disallow_ids=None):
    """Gumbel-max sampling: `argmax(logits / temperature + gumbel_noise)`.

    Args:
        logits: float `(batch, slots, vocab)`.
        seed: int64 `(2,)` stateless seed.
        temperature: float.
        disallow_ids: optional int32 `(batch, slots)`; these ids get -1000
            added to their logit (the reference's `disallow_correct`).

    Returns:
        int32 `(batch, slots)` sampled ids. No gradient flows through it.
    """
    logits = _sampling_logits(logits, temperature, disallow_ids)
    shape = [ops.shape(logits)[0], *logits.shape[1:]]
    u = replica_uniform(shape, fold_seed(seed, 3))
    return ops.cast(ops.argmax(logits + gumbel_noise(u), axis=-1), "int32")


def inverse_cdf_sample(logits, seed, temperature=1.0, disallow_ids=None):
    """Inverse-CDF sampling: the distribution of `gumbel_sample` from one uniform per draw.

    `u * total` (`total`: the sum of `exp(logits / temperature - max)`) is
    located in two levels: among blocks of `_BLOCK` vocabulary entries by the
    blocks' running mass, then inside the chosen block by its own running
    sum. A step draws one number per slot instead of one per vocabulary entry
    (the Gumbel noise is most of `gumbel_sample`'s cost on CPU) and scans
    `vocab / _BLOCK` block sums plus one block per slot instead of the whole
    vocabulary (a running sum over 30,522 entries made the one-level inverse
    CDF slower than Gumbel-max end to end). The draws differ from
    `gumbel_sample`'s; their distribution does not. Arguments and result as
    `gumbel_sample`. TensorFlow backend only (batched `tf.searchsorted`).

    Example:
        >>> import tensorflow as tf
        >>> from electra_tf.layers.sampling import inverse_cdf_sample
        >>> logits = tf.math.log([[[0.25, 0.75]]])
        >>> inverse_cdf_sample(logits, tf.constant([0, 1], tf.int64)).shape
        TensorShape([1, 1])
    """
    import tensorflow as tf

    logits = _sampling_logits(logits, temperature, disallow_ids)
    vocab = logits.shape[-1] or tf.shape(logits)[-1]  # static where known (XLA pads by a constant)
    probs = tf.exp(logits - tf.reduce_max(logits, axis=-1, keepdims=True))  # unnormalised, max entry 1
    blocks = (vocab + _BLOCK - 1) // _BLOCK
    probs = tf.pad(probs, [[0, 0], [0, 0], [0, blocks * _BLOCK - vocab]])  # zeros: never chosen
    probs = tf.reshape(probs, tf.concat([tf.shape(probs)[:-1], [blocks, _BLOCK]], 0))
    mass = tf.reduce_sum(probs, axis=-1)  # (batch, slots, blocks)
    mass_cdf = tf.math.cumsum(mass, axis=-1)
    shape = [tf.shape(logits)[0]] + logits.shape.as_list()[1:-1]
    target = replica_uniform(shape, fold_seed(seed, 3))[..., None] * mass_cdf[..., -1:]
    block = tf.minimum(tf.searchsorted(mass_cdf, target, side="right", out_type=tf.int32), blocks - 1)
    below = tf.gather(mass_cdf, block, batch_dims=2) - tf.gather(mass, block, batch_dims=2)
    inner_cdf = tf.math.cumsum(tf.gather(probs, block[..., 0], batch_dims=2), axis=-1)
    inner = tf.searchsorted(inner_cdf, target - below, side="right", out_type=tf.int32)
    ids = block * _BLOCK + tf.minimum(inner, _BLOCK - 1)
    return tf.minimum(ids[..., 0], vocab - 1)


_BLOCK = 128  # vocabulary entries per block of `inverse_cdf_sample`


SAMPLERS = {"gumbel": gumbel_sample, "inverse_cdf": inverse_cdf_sample}
TENSORFLOW_ONLY = ("inverse_cdf",)  # the samplers of the TensorFlow backend alone


def check_sampler(sampler):
    """A `ValueError` naming the choices for a sampler that is unknown, or TensorFlow's alone on another backend."""
    if sampler not in SAMPLERS:
        raise ValueError(f"Unknown `sampler={sampler!r}`. Choose one of {list(SAMPLERS)}.")
    if sampler in TENSORFLOW_ONLY and not backends.is_tensorflow():
        raise ValueError(f"`sampler={sampler!r}` runs on the TensorFlow backend only (Keras runs on "
                         f"{backends.name()}): use `sampler='gumbel'`, the same distribution.")


def _sampling_logits(logits, temperature, disallow_ids):
    """float32 `logits / temperature` without gradient, disallowed ids pushed down by 1000."""
    logits = ops.stop_gradient(ops.cast(logits, "float32"))
    if disallow_ids is not None:
        logits = logits - 1000.0 * ops.one_hot(disallow_ids, logits.shape[-1] or ops.shape(logits)[-1])
    return logits / temperature


def gumbel_noise(u):
    """Gumbel(0, 1) noise from uniforms `u` in [0, 1)."""
    return -ops.log(-ops.log(u + 1e-9) + 1e-9)
