"""Checkpoints name every variable, restore all of it or fail, and read 0.1's positional layout."""

import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from electra_tf.config import get_config
from helpers import write_records
from electra_tf.models.pretrainer import build_pretrainer
from electra_tf import run_files, sources
from electra_tf.sources.named_checkpoint import CheckpointMismatchError, NamedCheckpoint, model_variables
from electra_tf.training.optimization import create_optimizer
from electra_tf.training.pretraining import train

pytestmark = pytest.mark.large  # slow tier: together these tests take minutes

TINY = dict(vocab_size=400, embedding_dim=16, hidden_dim=32, num_layers=2, num_heads=2,
            intermediate_dim=64, seq_length=32, max_sequence_length=32, batch_size=8,
            warmup_steps=2, log_steps=5)
SUFFIX = "/.ATTRIBUTES/VARIABLE_VALUE"


def batch(seed=0, vocab_size=400, seq_length=32):
    ids = np.random.RandomState(seed).randint(150, vocab_size, (4, seq_length)).astype("int32")
    mask = np.ones_like(ids)
    mask[:, -5:] = 0
    return {"token_ids": ids * mask, "segment_ids": 0 * ids, "padding_mask": mask}


def outputs(pretrainer, x):
    """Discriminator and generator outputs (dropout off): what a restore must reproduce."""
    generator = pretrainer.generator_head(pretrainer.generator(x), mask_positions=np.tile(np.arange(4), (4, 1)))
    return pretrainer(x).numpy(), generator.numpy()


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory):
    """A 6-step run: its model_dir and the live pretrainer that wrote it."""
    root = tmp_path_factory.mktemp("named")
    data = write_records(root / "data", num_files=2, num_examples=64)
    config = get_config("tiny", **TINY, data=data, train_steps=6, save_checkpoints_steps=3)
    model_dir = str(root / "run")
    return model_dir, train(config, model_dir, verbose=0)


def test_every_model_weight_and_slot_is_listed_under_a_readable_name(trained_run):
    model_dir, live = trained_run
    path = run_files.latest_checkpoint(model_dir)
    stored = {name for name, _ in tf.train.list_variables(path)}
    model = {n[len("model/"):-len(SUFFIX)] for n in stored if n.startswith("model/")}
    # Independent of the names: the set of variables, by identity, is the model's.
    names = model_variables(live)
    assert {id(v) for v in names.values()} == {id(v) for v in live.variables}
    assert model == set(names)
    assert "discriminator/transformer_layers/1/self_attention_layer/query_dense/kernel" in model
    assert "generator/transformer_layers/0/feedforward_output_dense/kernel" in model
    assert not any(n.startswith("optimizer/_trainable_variables") for n in stored)  # nothing positional
    for name in ("discriminator/transformer_layers/1/self_attention_layer/query_dense/kernel",
                 "discriminator/embeddings/token_embedding/embeddings"):
        for slot in ("momentums", "velocities"):
            assert f"optimizer/slots/{name}/{slot}{SUFFIX}" in stored
    assert f"optimizer/state/iteration{SUFFIX}" in stored
    # The stored values are the live model's (the last checkpoint is the end of training).
    reader = tf.train.load_checkpoint(path)
    for name, variable in names.items():
        np.testing.assert_array_equal(reader.get_tensor(f"model/{name}{SUFFIX}"), variable.numpy())


def test_restore_without_optimizer_reproduces_the_writer_exactly(trained_run):
    model_dir, live = trained_run
    x = batch()
    restored, _ = sources.restore_pretrainer(model_dir)
    for got, want in zip(outputs(restored, x), outputs(live, x)):
        np.testing.assert_array_equal(got, want)


def test_restore_after_building_layers_in_another_order(trained_run):
    """Names come from the structure, not from creation order: build the generator (and with it the
    shared embeddings) before the discriminator, after other models have taken Keras' layer numbers."""
    from electra_tf.models.encoder import ElectraEncoder
    from electra_tf.models.pretrainer import ElectraPretrainer

    model_dir, live = trained_run
    spec = build_pretrainer(run_files.read_config(model_dir)).get_config()
    discriminator = ElectraEncoder.from_config(spec.pop("discriminator"))
    generator = ElectraEncoder(**spec.pop("generator"), embeddings=discriminator.embeddings)
    generator.build()
    discriminator.build()
    fresh = ElectraPretrainer(discriminator=discriminator, generator=generator, **spec)
    token_table = fresh.embeddings.token_embedding.embeddings
    assert token_table.path != live.embeddings.token_embedding.embeddings.path  # created elsewhere
    NamedCheckpoint(fresh).restore(run_files.latest_checkpoint(model_dir))
    x = batch(1)
    for got, want in zip(outputs(fresh, x), outputs(live, x)):
        np.testing.assert_array_equal(got, want)


def test_missing_unexpected_and_misshaped_variables_are_named(trained_run, tmp_path):
    model_dir, _ = trained_run
    path = run_files.latest_checkpoint(model_dir)
    config = run_files.read_config(model_dir)
    deeper = build_pretrainer(config.replace(num_layers=3))
    with pytest.raises(CheckpointMismatchError, match=r"missing: \['model/discriminator/transformer_layers/2/"):
        NamedCheckpoint(deeper).restore(path)
    shallower = build_pretrainer(config.replace(num_layers=1))
    with pytest.raises(CheckpointMismatchError, match=r"unexpected: \['model/discriminator/transformer_layers/1/"):
        NamedCheckpoint(shallower).restore(path)
    wider = build_pretrainer(config.replace(intermediate_dim=128))
    with pytest.raises(CheckpointMismatchError, match=r"mis-shaped .*feedforward_intermediate_dense/kernel \[32, 64\] != \[32, 128\]"):
        NamedCheckpoint(wider).restore(path)


def test_discriminator_keras_deleted_gives_the_same_encoder(trained_run, tmp_path):
    model_dir, live = trained_run
    copy = tmp_path / "copy"
    tf.io.gfile.makedirs(str(copy))
    for name in ("config.json", "vocab.txt", "checkpoints"):
        source = os.path.join(model_dir, name)
        if os.path.isdir(source):
            import shutil

            shutil.copytree(source, copy / name)
        elif os.path.exists(source):
            tf.io.gfile.copy(source, str(copy / name))
    from_file, _ = sources.load_discriminator(model_dir)
    from_checkpoint, _ = sources.load_discriminator(str(copy))
    x = batch(2)
    np.testing.assert_array_equal(from_checkpoint(x).numpy(), from_file(x).numpy())
    np.testing.assert_array_equal(from_file(x).numpy(), live.discriminator(x).numpy())


def test_legacy_positional_checkpoint_loads_verified_or_is_refused(tmp_path):
    """0.1 wrote `tf.train.Checkpoint(model=pretrainer, optimizer=optimizer)`: write one that way."""
    config = get_config("tiny", **TINY)
    keras.utils.set_random_seed(5)
    writer = build_pretrainer(config)
    optimizer = create_optimizer(config)
    writer.compile(optimizer=optimizer)
    optimizer.build(writer.trainable_variables)
    for v in optimizer.variables:  # non-zero moments, to see them restored
        v.assign(tf.random.normal(v.shape, dtype=v.dtype) if "float" in v.dtype else v + 3)
    path = tf.train.Checkpoint(model=writer, optimizer=optimizer).write(str(tmp_path / "old" / "ckpt-3"))
    assert any(n.startswith("optimizer/_trainable_variables/") for n, _ in tf.train.list_variables(path))

    keras.utils.set_random_seed(6)
    reader_model = build_pretrainer(config)
    reader_optimizer = create_optimizer(config)
    reader_model.compile(optimizer=reader_optimizer)
    reader_optimizer.build(reader_model.trainable_variables)
    assert NamedCheckpoint(reader_model, reader_optimizer).restore(path) == "legacy"
    x = batch(3)
    for got, want in zip(outputs(reader_model, x), outputs(writer, x)):
        np.testing.assert_array_equal(got, want)
    for got, want in zip(reader_optimizer.variables, optimizer.variables):
        np.testing.assert_array_equal(got.numpy(), want.numpy())

    other = build_pretrainer(config.replace(num_layers=3))
    with pytest.raises(CheckpointMismatchError, match="cannot be mapped by position"):
        NamedCheckpoint(other).restore(path)


def test_the_metric_state_is_restored_and_a_checkpoint_without_it_still_reads(trained_run, tmp_path):
    model_dir, live = trained_run
    path = run_files.latest_checkpoint(model_dir)
    stored = dict(tf.train.list_variables(path))
    assert "metrics/loss/total" + SUFFIX in stored and "metrics/disc_auc/true_positives" + SUFFIX in stored
    reader = tf.train.load_checkpoint(path)
    config = run_files.read_config(model_dir)
    fresh = build_pretrainer(config)
    assert float(fresh.loss_tracker.count.numpy()) == 0
    NamedCheckpoint(fresh, None, fresh.metrics).restore(path)
    assert float(fresh.loss_tracker.count.numpy()) == reader.get_tensor("metrics/loss/count" + SUFFIX) > 0
    np.testing.assert_array_equal(fresh.disc_auc.true_positives.numpy(),
                                  reader.get_tensor("metrics/disc_auc/true_positives" + SUFFIX))
    # A checkpoint written before the metric state was saved: the model is restored, the metrics left as they are.
    older = NamedCheckpoint(live).checkpoint.write(str(tmp_path / "older" / "ckpt-6"))
    other = build_pretrainer(config)
    assert NamedCheckpoint(other, None, other.metrics).restore(older) == "named"
    assert float(other.loss_tracker.count.numpy()) == 0
    x = batch()
    np.testing.assert_array_equal(outputs(other, x)[0], outputs(live, x)[0])
