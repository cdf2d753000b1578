"""`python -m electra_tf.convert`: official -> hf -> keras -> official, weights unchanged."""

import keras
import numpy as np
import pytest

from convert_helpers import tiny_config
from electra_tf.convert import export_official, read_official_checkpoint, read_weights
from electra_tf import cli
from electra_tf.convert import __main__ as convert_cli
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
