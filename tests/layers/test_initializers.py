"""The official initialisation per config field: glorot_uniform where the reference's `tf.layers.dense` has none."""

import numpy as np
import pytest

from electra_tf.config import get_config
from electra_tf.layers.discriminator_head import DiscriminatorHead
from electra_tf.models.encoder import ElectraEncoder
from electra_tf.models.pretrainer import build_pretrainer

TRUNCATED_STD = 0.02 * 0.87962566  # std of N(0, 0.02) truncated at 2 std


def config(**overrides):
    # Wide enough for the statistics: 64 x 256 and 64 x 128 projections, a 256 x 1 output layer.
    return get_config("tiny", vocab_size=300, embedding_dim=64, hidden_dim=256, num_layers=1, num_heads=2,
                      intermediate_dim=64, generator_hidden_fraction=0.5, seed=3, **overrides)


def assert_glorot_uniform(kernel):
    fan_in, fan_out = kernel.shape
    bound = np.sqrt(6.0 / (fan_in + fan_out))
    assert np.abs(kernel).max() <= bound
    assert np.abs(kernel).max() > 0.9 * bound  # fills its range: far beyond a truncated normal's 0.04
    np.testing.assert_allclose(kernel.std(), bound / np.sqrt(3.0), rtol=0.15)  # uniform, not bell-shaped


def assert_truncated_normal(kernel):
    assert np.abs(kernel).max() <= 2 * 0.02 + 1e-7
    np.testing.assert_allclose(kernel.std(), TRUNCATED_STD, rtol=0.15)


def kernels(model):
    return {
        "discriminator_project": model.discriminator.embeddings_project.kernel.numpy(),
        "generator_project": model.generator.embeddings_project.kernel.numpy(),
        "output": model.discriminator_head.dense_prediction.kernel.numpy(),
        "head_dense": model.discriminator_head.dense.kernel.numpy(),
        "query": model.discriminator.transformer_layers[0]._self_attention_layer._query_dense.kernel.numpy(),
    }


def test_defaults_are_the_official_initialisation():
    model = build_pretrainer(config())
    found = kernels(model)
    assert found["generator_project"].shape == (64, 128)
    for name in ("discriminator_project", "generator_project", "output"):
        assert_glorot_uniform(found[name])
    for name in ("head_dense", "query"):  # `modeling.create_initializer` in the reference
        assert_truncated_normal(found[name].reshape(found[name].shape[0], -1))


def test_truncated_normal_fields_give_the_previous_initialisation():
    model = build_pretrainer(config(embeddings_project_initializer="truncated_normal",
                                    discriminator_output_initializer="truncated_normal"))
    for kernel in kernels(model).values():
        assert_truncated_normal(kernel.reshape(kernel.shape[0], -1))


def test_fields_survive_get_config():
    encoder = ElectraEncoder(vocab_size=50, num_layers=1, num_heads=1, hidden_dim=16, embedding_dim=8,
                             intermediate_dim=16, embeddings_project_initializer="truncated_normal")
    assert ElectraEncoder.from_config(encoder.get_config()).embeddings_project_initializer == "truncated_normal"
    head = DiscriminatorHead(16, output_initializer="truncated_normal")
    assert DiscriminatorHead.from_config(head.get_config()).output_initializer == "truncated_normal"
    model = build_pretrainer(config(discriminator_output_initializer="truncated_normal"))
    clone = type(model).from_config(model.get_config())
    assert clone.discriminator_output_initializer == "truncated_normal"
    assert clone.discriminator.embeddings_project_initializer == "glorot_uniform"


def test_unknown_initializer_is_refused():
    with pytest.raises(ValueError, match="embeddings_project_initializer"):
        config(embeddings_project_initializer="he_normal")
    with pytest.raises(ValueError, match="he_normal"):
        DiscriminatorHead(8, output_initializer="he_normal")
