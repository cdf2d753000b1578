"""ElectraPretrainer: corruption labels, embedding sharing, objectives, config round trip."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from electra_tf.config import get_config
from electra_tf.models.pretrainer import ElectraPretrainer, build_pretrainer

pytestmark = pytest.mark.large  # slow tier: together these tests take minutes

CLS, SEP, MASK = 101, 102, 103


def tiny(**overrides):
    values = dict(vocab_size=300, embedding_dim=16, hidden_dim=32, num_layers=2, num_heads=2,
                  intermediate_dim=64, max_sequence_length=64, seq_length=32, dropout=0.0,
                  generator_hidden_fraction=0.5)
    values.update(overrides)
    return get_config("tiny", **values)


def batch(rng, size=8, seq=32, low=150, high=300):
    ids = rng.randint(low, high, (size, seq)).astype("int32")
    ids[:, 0], ids[:, -1] = CLS, SEP
    return {"token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": np.ones_like(ids)}


def seed(step=0):
    return tf.constant([0, step], tf.int64)


@pytest.mark.parametrize("sampler", ["gumbel", "inverse_cdf"])
def test_labels_equal_corrupted_differs_from_original(sampler):
    model = build_pretrainer(tiny(sampler=sampler))
    data = batch(np.random.RandomState(0))
    out = model.compute_losses(data, seed(), training=False)
    ids, disc_ids = data["token_ids"], out.disc_ids.numpy()
    np.testing.assert_array_equal(out.disc_labels.numpy(), (disc_ids != ids).astype("float32"))
    chosen = np.zeros_like(ids, bool)
    for b in range(ids.shape[0]):
        chosen[b, out.positions[b].numpy()[out.weights[b].numpy() > 0]] = True
    assert ((disc_ids != ids) <= chosen).all()  # only chosen positions change
    assert (disc_ids != ids).any()  # an untrained generator replaces most of them


@pytest.mark.parametrize("sampler", ["gumbel", "inverse_cdf"])
def test_generator_predicting_the_original_makes_every_label_real(sampler):
    model = build_pretrainer(tiny(sampler=sampler))
    data = batch(np.random.RandomState(0), low=200, high=201)  # every maskable token is 200
    bias = model.generator_head._bias
    bias.assign(tf.tensor_scatter_nd_update(tf.zeros_like(bias), [[200]], [1e4]))
    out = model.compute_losses(data, seed(), training=False)
    assert out.weights.numpy().sum() > 0
    np.testing.assert_array_equal(out.disc_ids.numpy(), data["token_ids"])
    assert out.disc_labels.numpy().sum() == 0
    np.testing.assert_allclose(out.sampled_correct.numpy()[out.weights.numpy() > 0], 1.0)


def test_generator_and_discriminator_share_one_embedding_and_one_update():
    model = build_pretrainer(tiny())
    assert model.generator.embeddings is model.discriminator.embeddings
    shared = model.embeddings.token_embedding.embeddings
    assert sum(v is shared for v in model.trainable_variables) == 1
    assert len({id(v) for v in model.trainable_variables}) == len(model.trainable_variables)

    data = batch(np.random.RandomState(1))
    with tf.GradientTape() as tape:
        loss = model.compute_losses(data, seed(0), training=True).loss
    grad = tf.convert_to_tensor(tape.gradient(loss, shared))
    before = shared.numpy()
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.5))
    model.train_on_batch(data)  # step 0: same seed as above
    np.testing.assert_allclose(shared.numpy(), before - 0.5 * grad.numpy(), atol=1e-6)
    assert np.abs(grad.numpy()).sum() > 0


@pytest.mark.parametrize("objective", ["electra", "mlm", "electra_15", "replace_mlm", "all_tokens_mlm"])
def test_objectives_train_and_round_trip_config(objective):
    model = build_pretrainer(tiny(objective=objective))
    assert (model.generator is None) == (objective == "mlm")
    model.compile(optimizer=keras.optimizers.AdamW(1e-3))
    logs = model.train_on_batch(batch(np.random.RandomState(2)), return_dict=True)
    assert np.isfinite(logs["loss"]) and logs["loss"] > 0
    assert "masked_lm_accuracy" in logs
    if objective.startswith("electra"):
        assert {"disc_auc", "disc_precision", "disc_recall", "sampled_masked_lm_accuracy"} <= set(logs)
    clone = ElectraPretrainer.from_config(model.get_config())
    assert clone.sampler == model.sampler
    assert [v.shape for v in clone.weights] == [v.shape for v in model.weights]
    if clone.generator is not None:
        assert clone.generator.embeddings is clone.discriminator.embeddings


def test_electra_15_only_scores_chosen_positions():
    model = build_pretrainer(tiny(objective="electra_15"))
    out = model.compute_losses(batch(np.random.RandomState(3)), seed(), training=False)
    assert out.disc_weights.numpy().sum() == out.weights.numpy().sum()


def test_mismatched_generator_embeddings_are_rejected():
    a, b = build_pretrainer(tiny()), build_pretrainer(tiny())
    with pytest.raises(ValueError, match="discriminator's embeddings"):
        ElectraPretrainer(discriminator=a.discriminator, generator=b.generator)
