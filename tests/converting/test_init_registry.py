"""The `--init` registry (`electra_tf.sources`): one parse, every form documented, bare folders recognised by
what their `config.json` says, the generator asked for by name, non-finite weights refused for every form."""

import ast
import os
import re

import numpy as np
import pytest

from convert_helpers import inputs, keras_outputs, minilm_dir, tiny_config, torch_outputs
from electra_tf import sources
from electra_tf.models.pretrainer import build_pretrainer

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_init_is_split_at_its_kind_in_one_module_only():
    """No module but the registry splits a string at ":" (the `FORM:PATH` of `--init`)."""
    splitting = []
    for directory, _, files in os.walk(os.path.join(REPO, "electra_tf")):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(directory, name)
                with open(path, encoding="utf-8") as f:
                    tree = ast.parse(f.read())
                for node in ast.walk(tree):
                    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                            and node.func.attr in ("partition", "split") and node.args
                            and isinstance(node.args[0], ast.Constant) and node.args[0].value == ":"):
                        splitting.append(os.path.relpath(path, REPO))
    assert splitting == [os.path.join("electra_tf", "sources", "__init__.py")]


def test_every_prefix_is_in_the_documented_table():
    with open(os.path.join(REPO, "docs", "finetuning.md"), encoding="utf-8") as f:
        text = f.read()
    table = text[text.index("### `--init` forms"):text.index("## Sentence classification")]
    documented = set(re.findall(r"^\| `([a-z_]+):", table, re.M)) | set(re.findall(r", `([a-z_]+):", table))
    assert documented == set(sources.SOURCES)
    assert "electra_tf/sources" in table


def test_init_inputs_are_the_paths_without_their_kind():
    assert sources.init_inputs("hf:a/disc,a/gen") == ["a/disc", "a/gen"]
    assert sources.init_inputs("bert:minilm") == ["minilm"]
    assert sources.init_inputs("runs/x") == ["runs/x"]
    assert sources.init_inputs("models/v1:final") == ["models/v1:final"]  # a colon inside a path is a path


def test_bare_folders_are_read_by_what_their_config_says(hf_pair):
    _, disc_dir, _, _, _ = hf_pair
    assert sources.resolve(minilm_dir())[0] is sources.SOURCES["bert"]
    assert sources.resolve(disc_dir)[0] is sources.SOURCES["hf"]


def test_a_bare_bert_folder_gives_transformers_hidden_states():
    transformers = pytest.importorskip("transformers")
    directory = minilm_dir()
    rng = np.random.default_rng(0)
    token_ids = rng.integers(1000, 30522, (2, 12)).astype("int32")
    batch = {"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids), "padding_mask": np.ones_like(token_ids)}
    encoder, vocab_file = sources.load_init(directory)  # no `bert:` needed
    assert vocab_file == os.path.join(directory, "vocab.txt")
    expected = torch_outputs(transformers.BertModel.from_pretrained(directory).eval(), batch)
    np.testing.assert_allclose(np.asarray(encoder(batch, training=False)), expected, atol=1e-4)


def test_the_generator_is_read_when_asked_for_by_name(hf_pair, tmp_path):
    config, disc_dir, gen_dir, _, generator = hf_pair
    (tmp_path / "vocab.txt").write_text("[PAD]\n")
    batch = inputs(config)
    expected = torch_outputs(generator.electra, batch)
    for spec in (f"hf_generator:{gen_dir}", f"hf_generator:{disc_dir},{gen_dir}"):
        encoder, _ = sources.load_init(spec, vocab_file=str(tmp_path / "vocab.txt"))
        np.testing.assert_allclose(np.asarray(encoder(batch, training=False)), expected, atol=1e-4, err_msg=spec)
    with pytest.raises(sources.GeneratorFolderError, match=rf"pass hf_generator:{re.escape(gen_dir)}\."):
        sources.load_init(f"hf:{gen_dir}")
    with pytest.raises(ValueError, match="names 0 generator folders"):
        sources.load_init(f"hf_generator:{disc_dir}")

    # Into a pretrainer: the generator, its head and the shared embeddings; the discriminator keeps its start.
    pretrainer = build_pretrainer(config)
    report = sources.init_pretrainer(f"hf_generator:{gen_dir}", pretrainer)
    assert report["kept"] == ["discriminator", "discriminator_head"]
    _, generator_logits = keras_outputs(pretrainer, batch)
    np.testing.assert_allclose(generator_logits, torch_outputs(generator, batch), atol=1e-4)


def test_a_non_finite_weight_is_named_for_the_projects_own_forms_too(tmp_path):
    """A `.keras` encoder (and a run's pretrainer) with an infinity: refused for fine-tuning and pre-training alike."""
    config = tiny_config()
    encoder = build_pretrainer(config).discriminator
    encoder.build()
    kernel = encoder.transformer_layers[1]._feedforward_output_dense.kernel
    value = kernel.numpy()
    value[0, :3] = np.inf
    kernel.assign(value)
    (tmp_path / "vocab.src").write_text("[PAD]\n")
    path = sources.save_encoder(encoder, str(tmp_path / "encoder"), str(tmp_path / "vocab.src"))
    message = r"electra/encoder/layer_1/output/dense/kernel holds 3 non-finite value\(s\) \(0 NaN, 3 infinite\)"
    with pytest.raises(ValueError, match=rf"`--init={re.escape(path)}`: {message}"):
        sources.load_init(path)
    with pytest.raises(ValueError, match=message):
        sources.init_pretrainer(str(tmp_path / "encoder"), build_pretrainer(config))
