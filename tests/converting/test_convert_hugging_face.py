"""Hugging Face ELECTRA import and export, checked against transformers."""

import os

import numpy as np
import pytest

from convert_helpers import inputs, keras_outputs, save_pretrained, tiny_config, torch_outputs
from electra_tf.converting import export_hugging_face, load_hugging_face, read_weights
from electra_tf.converting.hf_names import hf_to_official, official_to_hf
from electra_tf.converting.hugging_face import build_from_hugging_face
from electra_tf.converting.weight_map import assign_weights
from electra_tf.models.pretrainer import build_pretrainer
from electra_tf.sources import init_pretrainer

pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

TOLERANCE = 1e-4


def test_import_matches_transformers(hf_pair):
    config, disc_dir, gen_dir, discriminator, generator = hf_pair
    pretrainer = build_pretrainer(config)
    init_pretrainer(f"hf:{disc_dir},{gen_dir}", pretrainer)
    batch = inputs(config)
    disc_logits, gen_logits = keras_outputs(pretrainer, batch)
    np.testing.assert_allclose(
        disc_logits, torch_outputs(discriminator, batch), atol=TOLERANCE, rtol=0
    )
    np.testing.assert_allclose(gen_logits, torch_outputs(generator, batch), atol=TOLERANCE, rtol=0)


def test_export_loads_in_transformers(tmp_path):
    config = tiny_config()
    pretrainer = build_pretrainer(config)
    rng = np.random.default_rng(0)
    noisy = {
        n: w + 0.05 * rng.standard_normal(w.shape).astype("float32")
        for n, w in read_weights(pretrainer).items()
    }
    assign_weights(pretrainer, noisy)
    disc_dir, gen_dir = export_hugging_face(pretrainer, str(tmp_path))
    discriminator = transformers.ElectraForPreTraining.from_pretrained(disc_dir).eval()
    generator = transformers.ElectraForMaskedLM.from_pretrained(gen_dir).eval()
    batch = inputs(config, seed=1)
    disc_logits, gen_logits = keras_outputs(pretrainer, batch)
    np.testing.assert_allclose(
        torch_outputs(discriminator, batch), disc_logits, atol=TOLERANCE, rtol=0
    )
    np.testing.assert_allclose(torch_outputs(generator, batch), gen_logits, atol=TOLERANCE, rtol=0)
    # And back: the exported pair builds an identical pretrainer.
    rebuilt = build_from_hugging_face(str(tmp_path))
    for name, value in read_weights(rebuilt).items():
        np.testing.assert_array_equal(value, noisy[name], err_msg=name)


def test_encoder_export_is_electra_model(tmp_path, hf_pair):
    config, disc_dir, _, discriminator, _ = hf_pair
    encoder = build_from_hugging_face(disc_dir)  # body only: ElectraEncoder
    export_hugging_face(encoder, str(tmp_path))
    model = transformers.ElectraModel.from_pretrained(str(tmp_path)).eval()
    batch = inputs(config)
    expected = torch_outputs(model, batch)
    np.testing.assert_allclose(np.asarray(encoder(batch)), expected, atol=TOLERANCE, rtol=0)
    reference = transformers.ElectraModel.from_pretrained(disc_dir).eval()
    np.testing.assert_allclose(torch_outputs(reference, batch), expected, atol=TOLERANCE, rtol=0)


def test_names_round_trip():
    pretrainer = build_pretrainer(tiny_config())
    for name in read_weights(pretrainer):
        for role in ("discriminator", "generator"):
            mapped = official_to_hf(name, role)
            if mapped is not None:
                back = hf_to_official(mapped[0], role)
                assert back == (name, mapped[1]) or (
                    role == "generator"
                    and name.startswith("electra/")
                    and not name.startswith("electra/embeddings/")
                ), (name, role, mapped, back)


def test_differing_generator_embeddings_warn_and_use_the_discriminators(hf_pair, tmp_path, caplog):
    config, disc_dir, gen_dir, _, generator = hf_pair
    state = {k: v.clone() for k, v in generator.state_dict().items()}
    state["electra.embeddings.LayerNorm.weight"] += 1.0
    other = transformers.ElectraForMaskedLM(generator.config)
    other.load_state_dict(state)
    save_pretrained(other, str(tmp_path / "generator"))
    pretrainer = build_pretrainer(config)
    with caplog.at_level("WARNING"):
        load_hugging_face([disc_dir, str(tmp_path / "generator")], pretrainer)
    assert "electra/embeddings/LayerNorm/gamma" in caplog.text
    np.testing.assert_allclose(
        pretrainer.embeddings.layer_norm.gamma.numpy(),
        state["electra.embeddings.LayerNorm.weight"].numpy() - 1.0,
        atol=1e-6,
    )


def test_pickle_only_directory_is_refused(tmp_path, hf_pair):
    import torch

    _, _, _, discriminator, _ = hf_pair
    discriminator.config.save_pretrained(str(tmp_path))
    torch.save(discriminator.state_dict(), os.path.join(tmp_path, "pytorch_model.bin"))
    with pytest.raises(FileNotFoundError, match=r"No `model.safetensors`.*pytorch_model.bin"):
        init_pretrainer(f"hf:{tmp_path}", build_pretrainer(tiny_config()))


def test_different_size_is_an_error_naming_it(hf_pair):
    _, disc_dir, gen_dir, _, _ = hf_pair
    pretrainer = build_pretrainer(tiny_config(num_layers=3))
    with pytest.raises(ValueError, match=r"num_layers 2 vs 3"):
        init_pretrainer(f"hf:{disc_dir},{gen_dir}", pretrainer)
    pretrainer = build_pretrainer(tiny_config(vocab_size=300))
    with pytest.raises(ValueError, match=r"vocab_size 200 vs 300"):
        init_pretrainer(f"hf:{disc_dir}", pretrainer)


def test_non_electra_directory_is_refused(tmp_path):
    bert = transformers.BertModel(
        transformers.BertConfig(
            vocab_size=200,
            hidden_size=32,
            num_hidden_layers=1,
            num_attention_heads=1,
            intermediate_size=64,
        )
    )
    save_pretrained(bert, str(tmp_path))
    with pytest.raises(ValueError, match=r"config.json describes a 'bert' model \(BertModel\), not electra"):
        init_pretrainer(f"hf:{tmp_path}", build_pretrainer(tiny_config()))
