"""Dynamic masking: which positions the ELECTRA step predicts, and what the generator sees there.

Plain functions of tensors in `keras.ops`, run inside the training step on any
Keras backend. Randomness comes from `replicas.replica_uniform` (one device and
N replicas draw the same numbers for an example); generator sampling is
`sampling`.
"""

import numpy as np
from keras import ops

from electra_tf.layers.replicas import fold_seed, replica_uniform
from electra_tf.layers.sampling import gumbel_noise


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
    token_ids = ops.cast(token_ids, "int32")
    real = ops.cast(padding_mask, "bool")
    batch, seq_len = ops.shape(token_ids)[0], token_ids.shape[1]
    maskable = real
    for special in special_ids:
        maskable = ops.logical_and(maskable, ops.not_equal(token_ids, special))
    num_real = ops.sum(ops.cast(real, "float32"), axis=1)
    count = ops.cast(ops.round(num_real * mask_prob), "int32")
    count = ops.clip(count, 1, num_predictions)

    log_maskable = ops.log(ops.cast(maskable, "float32"))  # 0 or -inf
    if with_replacement:
        # Gumbel-max over positions, once per slot: a categorical draw per slot.
        u = replica_uniform([batch, num_predictions, seq_len], fold_seed(seed, 1))
        scores = log_maskable[:, None, :] + gumbel_noise(u)
        positions = ops.cast(ops.argmax(scores, axis=-1), "int32")
    else:
        # Gumbel top-k: distinct positions, uniformly without replacement.
        u = replica_uniform([batch, seq_len], fold_seed(seed, 1))
        _, positions = ops.top_k(log_maskable + gumbel_noise(u), k=num_predictions)
        positions = ops.cast(positions, "int32")

    slot = ops.arange(num_predictions, dtype="int32")[None, :]
    chosen_maskable = ops.take_along_axis(ops.cast(maskable, "int32"), positions, axis=1) > 0
    weights = ops.logical_and(slot < count[:, None], chosen_maskable)
    if with_replacement:
        same = ops.equal(positions[:, :, None], positions[:, None, :])
        earlier = np.tril(np.ones([num_predictions] * 2, bool), -1)  # strictly lower: j < i
        duplicate = ops.any(ops.logical_and(ops.logical_and(same, earlier[None]), weights[:, None, :]), axis=-1)
        weights = ops.logical_and(weights, ops.logical_not(duplicate))

    use_mask_token = replica_uniform([batch, num_predictions], fold_seed(seed, 2))
    use_mask_token = ops.logical_and(weights, use_mask_token < mask_token_prob)
    to_mask = scatter_positions(ops.cast(use_mask_token, "int32"), positions, seq_len) > 0
    return {
        "masked_ids": ops.where(to_mask, ops.cast(mask_id, "int32"), token_ids),
        "positions": positions,
        "target_ids": ops.take_along_axis(token_ids, positions, axis=1),
        "weights": ops.cast(weights, "float32"),
    }


def scatter_positions(values, positions, seq_len):
    """Writes `values` (batch, slots) at `positions` into zeros (batch, seq_len).

    Positions with a nonzero value must be distinct within a row (weights from
    `mask_tokens` guarantee it), so the sum is the value itself.
    """
    one_hot = ops.one_hot(positions, seq_len, dtype=values.dtype)
    return ops.einsum("bp,bpt->bt", values, one_hot)
