"""Dynamic masking and generator sampling: the random parts of the ELECTRA step.

Plain functions of tensors, run inside the training graph. Randomness comes
from `replica_uniform`, a stateless Philox stream keyed by `(seed, step)` in
which every replica reads the rows of its own slice of the global batch: the
numbers an example sees do not depend on how many devices share the batch,
so one device and N replicas train identically (and XLA/TPU-friendly).
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


def mask_tokens(
    token_ids,
    padding_mask,
    seed,
    *,
    num_predictions,
    mask_prob,
    mask_id,
    special_ids,
    mask_token_prob=0.85,
    with_replacement=True,
):
    """Chooses positions to predict and masks them, as the reference does.

    Maskable positions are real tokens that are not special (`[CLS]`, `[SEP]`,
    `[MASK]`). Each sequence predicts `max(1, min(num_predictions,
    round(num_real_tokens * mask_prob)))` positions drawn uniformly over the
    maskable ones, with replacement as in the reference (a position drawn twice
    counts once, so a row may predict slightly fewer) or without. Of the chosen
    positions `mask_token_prob` become `[MASK]`, the others keep their token;
    no random-token replacement.

    Args:
        token_ids: int32 `(batch, seq_len)`.
        padding_mask: int32/bool `(batch, seq_len)`, 1 for real tokens.
        seed: int64 `(2,)` stateless seed.
        num_predictions: int. Prediction slots per sequence (max_predictions_per_seq).
        mask_prob: float.
        mask_id: int. Id of `[MASK]`.
        special_ids: ints never masked, e.g. `(cls_id, sep_id, mask_id)`.
        mask_token_prob: float. Share of chosen positions set to `[MASK]`.
        with_replacement: bool. Draw positions with replacement (reference).

    Returns:
        dict with `masked_ids` (batch, seq_len) the generator's input;
        `positions` (batch, num_predictions) int32; `target_ids` the original
        tokens there; `weights` float32, 1 for each distinct chosen position.
    """
    token_ids = tf.convert_to_tensor(token_ids, tf.int32)
    real = tf.cast(padding_mask, tf.bool)
    batch, seq_len = tf.shape(token_ids)[0], token_ids.shape[1]
    maskable = real
    for special in special_ids:
        maskable &= tf.not_equal(token_ids, special)
    num_real = tf.reduce_sum(tf.cast(real, tf.float32), axis=1)
    count = tf.cast(tf.round(num_real * mask_prob), tf.int32)
    count = tf.clip_by_value(count, 1, num_predictions)

    log_maskable = tf.math.log(tf.cast(maskable, tf.float32))  # 0 or -inf
    if with_replacement:
        # Gumbel-max over positions, once per slot: a categorical draw per slot.
        u = replica_uniform([batch, num_predictions, seq_len], _fold(seed, 1))
        scores = log_maskable[:, None, :] + _gumbel(u)
        positions = tf.argmax(scores, axis=-1, output_type=tf.int32)
    else:
        # Gumbel top-k: distinct positions, uniformly without replacement.
        u = replica_uniform([batch, seq_len], _fold(seed, 1))
        _, positions = tf.math.top_k(log_maskable + _gumbel(u), k=num_predictions)

    slot = tf.range(num_predictions)[None, :]
    weights = (slot < count[:, None]) & tf.gather(maskable, positions, batch_dims=1)
    if with_replacement:
        same = tf.equal(positions[:, :, None], positions[:, None, :])
        earlier = tf.linalg.band_part(tf.ones([num_predictions] * 2, tf.bool), -1, 0)
        earlier &= ~tf.eye(num_predictions, dtype=tf.bool)  # strictly lower: j < i
        duplicate = tf.reduce_any(same & earlier[None] & weights[:, None, :], axis=-1)
        weights &= ~duplicate

    use_mask_token = replica_uniform([batch, num_predictions], _fold(seed, 2))
    use_mask_token = weights & (use_mask_token < mask_token_prob)
    to_mask = scatter_positions(tf.cast(use_mask_token, tf.int32), positions, seq_len) > 0
    return {
        "masked_ids": tf.where(to_mask, tf.cast(mask_id, tf.int32), token_ids),
        "positions": positions,
        "target_ids": tf.gather(token_ids, positions, batch_dims=1),
        "weights": tf.cast(weights, tf.float32),
    }


def scatter_positions(values, positions, seq_len):
    """Writes `values` (batch, slots) at `positions` into zeros (batch, seq_len).

    Positions with a nonzero value must be distinct within a row (weights from
    `mask_tokens` guarantee it), so the sum is the value itself.
    """
    one_hot = tf.one_hot(positions, seq_len, dtype=values.dtype)
    return tf.einsum("bp,bpt->bt", values, one_hot)


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
    shape = [tf.shape(logits)[0]] + logits.shape.as_list()[1:]
    u = replica_uniform(shape, _fold(seed, 3))
    return tf.argmax(logits + _gumbel(u), axis=-1, output_type=tf.int32)


def inverse_cdf_sample(logits, seed, temperature=1.0, disallow_ids=None):
    """Inverse-CDF sampling: the distribution of `gumbel_sample` from one uniform per draw.

    `softmax(logits / temperature)` is accumulated along the vocabulary and a
    binary search finds where `u * total` falls, so a step draws one number
    per slot instead of one per vocabulary entry (the Gumbel noise is most of
    `gumbel_sample`'s cost on CPU). The draws differ from `gumbel_sample`'s;
    their distribution does not. Arguments and result as `gumbel_sample`.

    Example:
        >>> import tensorflow as tf
        >>> from electra_tf.layers.masking import inverse_cdf_sample
        >>> logits = tf.math.log([[[0.25, 0.75]]])
        >>> inverse_cdf_sample(logits, tf.constant([0, 1], tf.int64)).shape
        TensorShape([1, 1])
    """
    logits = _sampling_logits(logits, temperature, disallow_ids)
    vocab = tf.shape(logits)[-1]
    cdf = tf.math.cumsum(tf.exp(logits - tf.reduce_max(logits, axis=-1, keepdims=True)), axis=-1)
    shape = [tf.shape(logits)[0]] + logits.shape.as_list()[1:-1]
    u = replica_uniform(shape, _fold(seed, 3))
    ids = tf.searchsorted(cdf, u[..., None] * cdf[..., -1:], side="right", out_type=tf.int32)
    return tf.minimum(ids[..., 0], vocab - 1)


SAMPLERS = {"gumbel": gumbel_sample, "inverse_cdf": inverse_cdf_sample}


def _sampling_logits(logits, temperature, disallow_ids):
    """float32 `logits / temperature` without gradient, disallowed ids pushed down by 1000."""
    logits = tf.stop_gradient(tf.cast(logits, tf.float32))
    if disallow_ids is not None:
        logits -= 1000.0 * tf.one_hot(disallow_ids, tf.shape(logits)[-1])
    return logits / temperature


def _gumbel(u):
    return -tf.math.log(-tf.math.log(u + 1e-9) + 1e-9)


def _fold(seed, salt):
    """A distinct stream per use: (seed[0] * 8 + salt, seed[1])."""
    seed = tf.cast(seed, tf.int64)
    return tf.stack([seed[0] * 8 + salt, seed[1]])
