"""Masking against an independent NumPy implementation of the reference rule."""

import numpy as np
import pytest
import tensorflow as tf

from electra_tf.layers.masking import mask_tokens
from electra_tf.layers.replicas import replica_uniform
from electra_tf.layers.sampling import SAMPLERS

PAD, CLS, SEP, MASK = 0, 101, 102, 103
SEQ, P = 64, int((0.15 + 0.005) * 64)


def random_batch(rng, batch):
    """Sequences of random real length with [CLS] ... [SEP] (... [SEP]) and padding."""
    ids = np.zeros((batch, SEQ), np.int32)
    mask = np.zeros((batch, SEQ), np.int32)
    for b in range(batch):
        n = rng.randint(4, SEQ + 1)
        ids[b, :n] = rng.randint(1000, 2000, n)
        ids[b, 0], ids[b, n - 1] = CLS, SEP
        ids[b, rng.randint(1, n - 1)] = SEP
        mask[b, :n] = 1
    return ids, mask


def numpy_reference(ids, mask, rng, with_replacement):
    """The reference rule, written independently: per row, draw and mask."""
    masked, chosen = ids.copy(), np.zeros_like(ids, bool)
    for b in range(ids.shape[0]):
        real = mask[b].astype(bool)
        maskable = np.flatnonzero(real & ~np.isin(ids[b], [CLS, SEP, MASK]))
        count = max(1, min(P, int(np.round(real.sum() * 0.15))))
        if with_replacement:
            picks = np.unique(rng.choice(maskable, count, replace=True))
        else:
            picks = rng.choice(maskable, min(count, len(maskable)), replace=False)
        chosen[b, picks] = True
        to_mask = picks[rng.uniform(size=len(picks)) < 0.85]
        masked[b, to_mask] = MASK
    return masked, chosen


def ours(ids, mask, step, with_replacement):
    out = mask_tokens(
        ids, mask, tf.constant([0, step], tf.int64), num_predictions=P, mask_prob=0.15,
        mask_id=MASK, special_ids=(CLS, SEP, MASK), with_replacement=with_replacement,
    )
    return {k: v.numpy() for k, v in out.items()}


@pytest.mark.parametrize("with_replacement", [True, False])
def test_masking_statistics_match_numpy_reference(with_replacement):
    rng = np.random.RandomState(0)
    ids, mask = random_batch(rng, 3000)
    out = ours(ids, mask, step=1, with_replacement=with_replacement)
    ref_masked, ref_chosen = numpy_reference(ids, mask, rng, with_replacement)

    chosen = np.zeros_like(ids, bool)
    for b in range(ids.shape[0]):
        chosen[b, out["positions"][b][out["weights"][b] > 0]] = True
    # Exact rules: never special or padding; [MASK] only where chosen; weights are distinct positions.
    special = np.isin(ids, [CLS, SEP, MASK]) | (mask == 0)
    assert not (chosen & special).any()
    assert ((out["masked_ids"] != ids) <= chosen).all()
    assert (out["weights"].sum(1) == chosen.sum(1)).all()
    count = np.clip(np.round(mask.sum(1) * 0.15), 1, P)
    assert (chosen.sum(1) <= count).all()
    if not with_replacement:
        n_maskable = (~special).sum(1)
        np.testing.assert_array_equal(chosen.sum(1), np.minimum(count, n_maskable))
    # Statistics against the independent implementation (3000 rows).
    assert abs(chosen.sum(1).mean() - ref_chosen.sum(1).mean()) < 0.1
    mask_share = (out["masked_ids"] == MASK).sum() / chosen.sum()
    ref_share = (ref_masked == MASK).sum() / ref_chosen.sum()
    assert abs(mask_share - 0.85) < 0.01 and abs(mask_share - ref_share) < 0.015
    # Uniform over maskable positions: per-position rate against the reference's.
    rate = chosen[:, 1:20].sum(0) / (~special[:, 1:20]).sum(0)
    ref_rate = ref_chosen[:, 1:20].sum(0) / (~special[:, 1:20]).sum(0)
    assert np.abs(rate - ref_rate).max() < 0.03


def test_masking_is_deterministic_per_step_and_differs_across_steps():
    ids, mask = random_batch(np.random.RandomState(1), 16)
    a, b, c = ours(ids, mask, 5, True), ours(ids, mask, 5, True), ours(ids, mask, 6, True)
    np.testing.assert_array_equal(a["positions"], b["positions"])
    assert (a["positions"] != c["positions"]).any()


def test_replica_uniform_rows_are_the_global_draw_split_by_replica():
    seed = tf.constant([3, 9], tf.int64)
    full = replica_uniform([4, 3, 5], seed).numpy()
    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])  # one replica: offset 0
    with strategy.scope():
        local = strategy.run(lambda: replica_uniform([4, 3, 5], seed))
    np.testing.assert_array_equal(strategy.experimental_local_results(local)[0], full)
    assert 0.4 < full.mean() < 0.6


@pytest.mark.parametrize("sampler", sorted(SAMPLERS))
def test_sampler_matches_softmax_distribution(sampler):
    sample = SAMPLERS[sampler]
    probs = np.array([0.6, 0.3, 0.1, 0.0], np.float32)
    logits = np.log(probs + 1e-30)[None, None].repeat(20000, axis=1)  # (1, 20000, 4)
    sampled = sample(logits, tf.constant([1, 2], tf.int64)).numpy().ravel()
    freq = np.bincount(sampled, minlength=4) / sampled.size
    np.testing.assert_allclose(freq, probs, atol=0.015)
    half = sample(logits, tf.constant([1, 2], tf.int64), temperature=2.0).numpy().ravel()
    tempered = np.sqrt(probs) / np.sqrt(probs).sum()
    np.testing.assert_allclose(np.bincount(half, minlength=4) / half.size, tempered, atol=0.015)
    never = sample(logits, tf.constant([1, 2], tf.int64), disallow_ids=np.zeros((1, 20000), np.int32))
    assert (never.numpy() != 0).all()


@pytest.mark.parametrize("sampler", sorted(SAMPLERS))
def test_sampler_on_a_bert_sized_vocabulary(sampler):
    """30,522 logits like a generator's: a chi-square test of the draws against the softmax
    (the 50 likeliest ids one by one, the rest pooled); catches precision loss in a long CDF."""
    rng = np.random.default_rng(0)
    row = rng.normal(0.0, 2.5, size=30522).astype(np.float32)
    probs = np.exp(row - row.max())
    probs /= probs.sum()
    draws = 4000
    logits = np.broadcast_to(row, (8, draws // 8, row.size))
    sampled = SAMPLERS[sampler](logits, tf.constant([5, 6], tf.int64)).numpy().ravel()
    top = np.argsort(-probs)[:50]
    observed = np.append(np.bincount(sampled, minlength=row.size)[top], 0)
    observed[-1] = draws - observed[:-1].sum()
    expected = np.append(probs[top], 1 - probs[top].sum()) * draws
    chi2 = ((observed - expected) ** 2 / expected).sum()
    assert chi2 < 90, chi2  # 50 degrees of freedom: P(chi2 > 90) ~ 4e-4
