"""`python -m electra_tf.convert`: official -> hf -> keras -> official, weights unchanged."""

import keras
import numpy as np
import pytest

from convert_helpers import tiny_config
from electra_tf.converting import export_official, read_official_checkpoint, read_weights
from electra_tf import cli
from electra_tf import convert as convert_cli
from electra_tf.models.pretrainer import build_pretrainer


def main(args):
    return cli.invoke(convert_cli, args)


def test_official_to_hf_to_keras_to_official(tmp_path):
    pretrainer = build_pretrainer(tiny_config())
    export_official(pretrainer, str(tmp_path / "official" / "model.ckpt-0"))
    (tmp_path / "official" / "vocab.txt").write_text("[PAD]\n")
    expected = read_weights(pretrainer)
    main(
        [
            "--from",
            "official",
            "--input",
            str(tmp_path / "official"),
            "--to",
            "hf",
            "--output_dir",
            str(tmp_path / "hf"),
        ]
    )
    assert (tmp_path / "hf" / "generator" / "model.safetensors").exists()
    assert (tmp_path / "hf" / "discriminator" / "vocab.txt").read_text() == "[PAD]\n"
    keras_path = str(tmp_path / "model.keras")
    # absl's app.run exits with main's return value: a success must return None (exit 0), not the paths
    assert main(["--from", "hf", "--input", str(tmp_path / "hf"), "--to", "keras", "--output_dir", keras_path]) is None
    assert read_weights(keras.saving.load_model(keras_path)).keys() == expected.keys()
    prefix = str(tmp_path / "back" / "model.ckpt-0")
    main(["--from", "keras", "--input", keras_path, "--to", "official", "--output_dir", prefix])
    for name, value in read_official_checkpoint(prefix).items():
        np.testing.assert_array_equal(value, expected[name], err_msg=name)


def test_usage_error_names_the_choices(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--from", "onnx", "--input", "x", "--to", "hf", "--output_dir", "y"])
    assert exit_info.value.code == 2 and "--from=onnx: value should be one of" in capsys.readouterr().err


def test_keras_output_must_be_a_keras_file(tmp_path):
    export_official(build_pretrainer(tiny_config()), str(tmp_path / "model.ckpt-0"))
    with pytest.raises(ValueError, match="Received: `--output_dir='out.h5'`"):
        main(["--from", "official", "--input", str(tmp_path), "--to", "keras", "--output_dir", "out.h5"])


def test_the_old_output_flag_still_works_with_one_warning(tmp_path, capsys):
    """`--output` (electra_tf 0.1) is read as `--output_dir`, with one deprecation line."""
    export_official(build_pretrainer(tiny_config()), str(tmp_path / "model.ckpt-0"))
    keras_path = str(tmp_path / "model.keras")
    main(["--from", "official", "--input", str(tmp_path), "--to", "keras", "--output", keras_path])
    assert keras.saving.load_model(keras_path) is not None
    warnings = [line for line in capsys.readouterr().err.splitlines() if "deprecated" in line]
    assert warnings == ["warning: --output is deprecated; use --output_dir (the old spelling goes in the next release)"]


# --- As users run it: a subprocess, its exit status, nothing existing replaced ---

import os  # noqa: E402
import sys  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from helpers import digests, run_python, write_vocab  # noqa: E402

pytestmark = pytest.mark.large  # slow tier: together these tests take minutes


def convert_command(*args, check=True):
    return run_python(["-m", "electra_tf.convert", *args], check=check)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """A pre-training run's own files: discriminator.keras, a checkpoint list, vocab.txt."""
    root = tmp_path_factory.mktemp("run")
    pretrainer = build_pretrainer(tiny_config())
    pretrainer.discriminator.save(str(root / "discriminator.keras"))
    export_official(pretrainer, str(root / "checkpoints" / "ckpt-1"))
    write_vocab(root / "vocab.txt", vocab_size=200)
    (root / "config.json").write_text("{}")
    return root


def test_a_successful_conversion_exits_0(tmp_path):
    """`convert && finetune`: a conversion that worked exits 0 (it printed its list and exited 1)."""
    export_official(build_pretrainer(tiny_config()), str(tmp_path / "official" / "model.ckpt-0"))
    result = convert_command("--from", "official", "--input", str(tmp_path / "official"), "--to", "keras",
                             "--output_dir", str(tmp_path / "m.keras"))
    assert result.returncode == 0 and (tmp_path / "m.keras").exists()
    assert "ElectraPretrainer from official" in result.stdout


@pytest.mark.large
def test_convert_reads_the_runs_own_discriminator_keras(run_dir, tmp_path):
    """`--from keras` imports the model classes itself: `--to keras` and `--to official` read `discriminator.keras`."""
    source = str(run_dir / "discriminator.keras")
    expected = read_weights(keras.saving.load_model(source))
    assert convert_command("--from", "keras", "--input", source, "--to", "keras",
                           "--output_dir", str(tmp_path / "copy.keras")).returncode == 0
    prefix = str(tmp_path / "ckpt" / "model.ckpt-0")
    assert convert_command("--from", "keras", "--input", source, "--to", "official",
                           "--output_dir", prefix).returncode == 0
    for name, value in read_official_checkpoint(prefix).items():
        np.testing.assert_array_equal(value, expected[name], err_msg=name)
    # The vocabulary beside the input comes along, with its tokenizer settings.
    assert (tmp_path / "vocab.txt").read_text() == (run_dir / "vocab.txt").read_text()


@pytest.mark.parametrize("target, output, expected", [
    ("keras", "discriminator.keras", "is or overlaps the input"),  # the input itself
    ("official", "checkpoints/ckpt-1", "would overwrite"),  # the run's latest checkpoint
    ("official", "checkpoints/ckpt-9", "would overwrite .*checkpoints/checkpoint"),  # the run's checkpoint list
    ("keras", "other.keras", "holds a pre-training run"),  # into the run's folder
    ("hf", "checkpoints", "holds a pre-training run|is not empty"),
])
def test_convert_never_overwrites_a_runs_own_files(run_dir, target, output, expected):
    before = digests(run_dir)
    result = convert_command("--from", "keras", "--input", str(run_dir / "discriminator.keras"), "--to", target,
                             "--output_dir", str(run_dir / output), check=False)
    assert result.returncode == 1, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1 and "--output_dir=" in lines[0]
    assert __import__("re").search(expected, lines[0]), lines[0]
    assert digests(run_dir) == before


@pytest.mark.large
def test_convert_refuses_an_existing_output_and_another_vocabulary_beside_it(run_dir, tmp_path):
    source = str(run_dir / "discriminator.keras")
    (tmp_path / "taken.keras").write_bytes(b"mine")
    result = convert_command("--from", "keras", "--input", source, "--to", "keras",
                             "--output_dir", str(tmp_path / "taken.keras"), check=False)
    assert result.returncode == 1 and "would overwrite" in result.stderr
    assert (tmp_path / "taken.keras").read_bytes() == b"mine"
    (tmp_path / "vocab.txt").write_text("[PAD]\nmine\n")  # the user's own vocab.txt
    result = convert_command("--from", "keras", "--input", source, "--to", "keras",
                             "--output_dir", str(tmp_path / "new.keras"), check=False)
    assert result.returncode == 1 and "another vocabulary" in result.stderr
    assert (tmp_path / "vocab.txt").read_text() == "[PAD]\nmine\n" and not (tmp_path / "new.keras").exists()
    # A non-empty --to hf folder.
    (tmp_path / "hf").mkdir()
    (tmp_path / "hf" / "notes.txt").write_text("mine")
    result = convert_command("--from", "keras", "--input", source, "--to", "hf",
                             "--output_dir", str(tmp_path / "hf"), check=False)
    assert result.returncode == 1 and "is not empty (notes.txt)" in result.stderr


@pytest.mark.large
def test_part_picks_the_discriminator_or_the_generator_of_a_pair(tmp_path):
    transformers = pytest.importorskip("transformers")
    export_official(build_pretrainer(tiny_config()), str(tmp_path / "official" / "model.ckpt-0"))
    for part, architecture in (("discriminator", "ElectraForPreTraining"), ("generator", "ElectraForMaskedLM")):
        out = tmp_path / f"hf_{part}"
        assert convert_command("--from", "official", "--input", str(tmp_path / "official"), "--to", "hf",
                               "--part", part, "--output_dir", str(out)).returncode == 0
        model = getattr(transformers, architecture).from_pretrained(str(out))
        assert type(model).__name__ == architecture
    assert convert_command("--from", "official", "--input", str(tmp_path / "official"), "--to", "keras",
                           "--part", "discriminator", "--output_dir", str(tmp_path / "d.keras")).returncode == 0
    assert type(keras.saving.load_model(str(tmp_path / "d.keras"))).__name__ == "ElectraEncoder"
    result = convert_command("--from", "official", "--input", str(tmp_path / "official"), "--to", "keras",
                             "--part", "generator", "--output_dir", str(tmp_path / "g.keras"), check=False)
    assert result.returncode == 1 and "LM head" in result.stderr and not (tmp_path / "g.keras").exists()


def test_from_takes_every_init_form_a_keras_hub_preset_to_keras(tmp_path):
    """`--from` is any `FORM` of `--init FORM:DIR` (`sources.SOURCES`): a keras-hub preset, saved by keras-hub, goes
    `--to keras` as an encoder whose outputs are the backbone's, its vocabulary beside it."""
    keras_hub = pytest.importorskip("keras_hub")
    from electra_tf import sources
    from helpers import write_vocab

    keras.utils.set_random_seed(5)
    backbone = keras_hub.models.ElectraBackbone(vocab_size=120, num_layers=1, num_heads=2, hidden_dim=32,
                                                embedding_dim=16, intermediate_dim=64, dropout=0.0,
                                                max_sequence_length=32)
    for weight in backbone.weights:  # LayerNorm and biases off their 1 / 0 starts
        weight.assign(weight + np.random.default_rng(0).normal(0, 0.05, weight.shape).astype("float32"))
    preset = tmp_path / "preset"
    backbone.save_to_preset(str(preset))
    vocab = write_vocab(tmp_path / "vocab.txt", vocab_size=120)
    keras_hub.tokenizers.ElectraTokenizer(vocabulary=vocab, lowercase=True).save_to_preset(str(preset))
    output = tmp_path / "out" / "encoder.keras"
    main(["--from", "keras_hub", "--input", str(preset), "--to", "keras", "--output_dir", str(output)])

    ids = np.array([[101, 106, 108, 110, 102, 0]], "int32")
    batch = {"token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": (ids > 0).astype("int32")}
    encoder = sources.load_keras_model(str(output))
    np.testing.assert_allclose(np.asarray(encoder(batch, training=False)),
                               np.asarray(backbone(batch)["sequence_output"]), atol=1e-5)
    assert (tmp_path / "out" / "vocab.txt").read_text() == open(vocab).read()
