"""Official TF1 name-based checkpoints: written here with the official names, imported, checked."""

import numpy as np
import pytest
import tensorflow as tf

from convert_helpers import inputs, keras_outputs, tiny_config, torch_outputs
from electra_tf.converting import read_hugging_face, read_weights, write_official_checkpoint
from electra_tf.converting.official import (
    build_from_official,
    export_official,
    read_official_checkpoint,
)
from electra_tf.models.pretrainer import build_pretrainer
from electra_tf.sources import init_pretrainer


def _official_from_hf(disc_dir, gen_dir):
    weights = dict(read_hugging_face(gen_dir)["weights"])
    weights.update(read_hugging_face(disc_dir)["weights"])
    return weights


def test_official_checkpoint_matches_transformers(hf_pair, tmp_path):
    pytest.importorskip("torch")
    config, disc_dir, gen_dir, discriminator, generator = hf_pair
    prefix = write_official_checkpoint(
        _official_from_hf(disc_dir, gen_dir),
        str(tmp_path / "model.ckpt-1000"),
        global_step=1000,
        optimizer_slots=True,
    )
    names = dict(tf.train.list_variables(prefix))
    assert names["electra/encoder/layer_1/attention/self/query/kernel"] == [64, 64]
    assert names["generator/embeddings_project/kernel"] == [32, 16]
    assert "electra/embeddings/word_embeddings/adam_m" in names and "global_step" in names
    pretrainer = build_pretrainer(config)
    init_pretrainer(f"official:{tmp_path}", pretrainer)  # a directory: its latest checkpoint
    batch = inputs(config, seed=3)
    disc_logits, gen_logits = keras_outputs(pretrainer, batch)
    np.testing.assert_allclose(disc_logits, torch_outputs(discriminator, batch), atol=1e-4, rtol=0)
    np.testing.assert_allclose(gen_logits, torch_outputs(generator, batch), atol=1e-4, rtol=0)


def test_export_round_trip_and_size_inference(tmp_path):
    config = tiny_config()
    pretrainer = build_pretrainer(config)
    export_official(pretrainer, str(tmp_path / "model.ckpt-0"))
    expected = read_weights(pretrainer)
    read = read_official_checkpoint(str(tmp_path / "model.ckpt-0"))
    assert sorted(read) == sorted(expected)
    rebuilt = build_from_official(str(tmp_path))
    assert (rebuilt.generator.hidden_dim, rebuilt.discriminator.num_heads) == (16, 1)  # 64 // 64
    for name, value in read_weights(rebuilt).items():
        np.testing.assert_array_equal(value, expected[name], err_msg=name)


def test_checkpoint_of_another_size_is_an_error(tmp_path):
    small = build_pretrainer(tiny_config(hidden_dim=32, intermediate_dim=64, num_layers=3))
    export_official(small, str(tmp_path / "model.ckpt-0"))
    with pytest.raises(ValueError) as error:
        init_pretrainer(f"official:{tmp_path}", build_pretrainer(tiny_config()))
    message = str(error.value)
    assert "discriminator.hidden_dim 32 vs 64" in message
    assert "discriminator.num_layers 3 vs 2" in message
    assert "32 unused checkpoint variable(s): `electra/encoder/layer_2/" in message
    assert "missing from the checkpoint: `electra/embeddings_project/bias`" in message


def test_vocab_differing_from_the_embedding_table_is_an_error(tmp_path):
    export_official(build_pretrainer(tiny_config(vocab_size=250)), str(tmp_path / "model.ckpt-0"))
    pretrainer = build_pretrainer(tiny_config())
    before = read_weights(pretrainer)
    with pytest.raises(ValueError, match=r"vocab_size 250 vs 200") as error:
        init_pretrainer(f"official:{tmp_path}", pretrainer)
    assert "`electra/embeddings/word_embeddings` (250, 32) vs (200, 32)" in str(error.value)
    for name, value in read_weights(pretrainer).items():  # nothing was loaded
        np.testing.assert_array_equal(value, before[name])


def test_missing_path_and_bad_spec():
    pretrainer = build_pretrainer(tiny_config())
    with pytest.raises(FileNotFoundError, match="/no/such/ckpt"):
        init_pretrainer("official:/no/such/ckpt", pretrainer)
    with pytest.raises(ValueError, match="Unknown `--init=tf1:/x`"):
        init_pretrainer("tf1:/x", pretrainer)
