"""The official initialisation per config field: glorot_uniform where the reference's `tf.layers.dense` has none."""

import numpy as np
import pytest

from electra_tf.config import get_config
from electra_tf.layers.discriminator_head import DiscriminatorHead
from electra_tf.models.encoder import ElectraEncoder
from electra_tf.models.pretrainer import build_pretrainer
from electra_tf.tasks import get as task_kind  # the registry: a kind by name

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


def small_encoder(**overrides):
    return ElectraEncoder(**{**dict(vocab_size=300, num_layers=1, num_heads=2, hidden_dim=256, embedding_dim=64,
                                    intermediate_dim=64), **overrides})


def test_within_weights_set_after_build_an_encoder_starts_from_zeros_and_outside_from_its_draws():
    from electra_tf.layers.initializers import weights_set_after_build

    with weights_set_after_build():
        inside = small_encoder()
        inside.build()
    outside = small_encoder()
    outside.build()
    for weight in inside.weights:  # the layer norms' scales start at one, as Keras makes them
        expected = 1.0 if weight.path.endswith("gamma") else 0.0
        assert np.all(weight.numpy() == expected), weight.path
    assert_truncated_normal(outside.embeddings.token_embedding.embeddings.numpy())
    query = outside.transformer_layers[0]._self_attention_layer._query_dense.kernel.numpy()
    assert_truncated_normal(query.reshape(query.shape[0], -1))
    assert_glorot_uniform(outside.embeddings_project.kernel.numpy())


def test_rebuild_encoder_copies_every_weight_and_the_new_head_draws_what_it_drew_before():
    import keras

    from electra_tf.finetuning.recipe import rebuild_encoder
    ElectraClassifier = task_kind("classification").model_class

    encoder = small_encoder(dropout=0.0)
    encoder.build()
    ids = np.array([[2, 7, 9, 3, 0, 0]], "int32")
    inputs = {"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": (ids > 0).astype("int32")}

    def head_weights(copy):
        model = ElectraClassifier(copy, num_labels=3)
        model.build()
        return [w.numpy() for w in model.weights if not any(w is v for v in copy.weights)]

    keras.utils.set_random_seed(5)
    copy = rebuild_encoder(encoder)
    heads = head_weights(copy)
    # The copy as it was made before its tables were left undrawn: built with its draws, then set.
    keras.utils.set_random_seed(5)
    reference = ElectraEncoder.from_config(encoder.get_config())
    reference.build()
    reference.set_weights(encoder.get_weights())
    reference_heads = head_weights(reference)

    assert len(copy.weights) == len(encoder.weights)
    for a, b in zip(copy.weights, encoder.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    np.testing.assert_array_equal(copy(inputs).numpy(), encoder(inputs).numpy())
    assert heads and len(heads) == len(reference_heads)
    for a, b in zip(heads, reference_heads):
        np.testing.assert_array_equal(a, b)


def test_a_keras_file_without_every_weight_of_its_encoder_is_refused(tmp_path):
    """Loading leaves the encoder's tables undrawn: a weight the file lacks must fail the load, not stay zero."""
    import json
    import zipfile

    from electra_tf.sources.encoders import load_keras_model

    encoder = small_encoder(dropout=0.0)
    encoder.build()
    saved = tmp_path / "encoder.keras"
    encoder.save(saved)
    loaded = load_keras_model(str(saved))
    assert [w.path for w in loaded.weights] == [w.path for w in encoder.weights]
    for a, b in zip(loaded.weights, encoder.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=a.path)
    ids = np.array([[2, 7, 9, 3, 0]], "int32")
    inputs = {"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": (ids > 0).astype("int32")}
    np.testing.assert_array_equal(loaded(inputs).numpy(), encoder(inputs).numpy())
    # The same weights file under a config with a second transformer layer, whose weights it does not hold.
    damaged = tmp_path / "two_layers.keras"
    with zipfile.ZipFile(saved) as source, zipfile.ZipFile(damaged, "w") as target:
        for item in source.infolist():
            data = source.read(item.filename)
            if item.filename == "config.json":
                config = json.loads(data)
                config["config"]["num_layers"] = 2
                data = json.dumps(config).encode()
            target.writestr(item, data)
    with pytest.raises(ValueError, match="cannot be read"):
        load_keras_model(str(damaged))


def test_a_runs_discriminator_and_an_encoder_export_load_with_every_weight_they_hold(tmp_path):
    """Both loads leave the encoder undrawn: each weight must come from the run's file or the export."""
    import keras

    from electra_tf.exporting.encoder_saved_model import export_encoder
    from electra_tf.sources.encoders import load_encoder
    from electra_tf.sources.runs import load_discriminator

    from helpers import make_run_dir, write_vocab

    vocab = write_vocab(tmp_path / "vocab.txt")
    run = make_run_dir(tmp_path / "run", str(vocab), seed=4)
    saved = keras.saving.load_model(str(tmp_path / "run" / "discriminator.keras"))  # drawn, then set: the reference
    ids = np.array([[2, 7, 9, 3, 0]], "int32")
    inputs = {"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": (ids > 0).astype("int32")}
    discriminator, _ = load_discriminator(run)
    exported, _ = load_encoder(export_encoder(discriminator, str(vocab), str(tmp_path / "export"), seq_length=8))
    for loaded in (discriminator, exported):
        assert [w.path for w in loaded.weights] == [w.path for w in saved.weights]
        for a, b in zip(loaded.weights, saved.weights):
            np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=a.path)
        np.testing.assert_array_equal(loaded(inputs).numpy(), saved(inputs).numpy())
