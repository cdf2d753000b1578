"""Bad model folders given to `--init` (and `convert --input`), as users run the commands: one `error:` line
naming the file, tensor or flag, exit 1, the input unchanged and no output left behind. The folders are
written by transformers itself."""

import json
import os
import shutil
import struct
import sys
import textwrap

import numpy as np
import pytest

from convert_helpers import SIZE_FLAGS, inputs, save_pretrained, tiny_config, torch_outputs, write_task

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from helpers import digests, error_line, run_python, write_records, write_vocab  # noqa: E402

pytestmark = pytest.mark.large  # slow tier: together these tests take minutes


def with_vocab(folder):
    write_vocab(os.path.join(folder, "vocab.txt"), vocab_size=tiny_config().vocab_size)
    return str(folder)


def command(name, init, tmp_path):
    """The argv of `name` reading `init` and writing under `tmp_path/out*`."""
    if name == "export":
        return ["-m", "electra_tf.export", "--format", "encoder", "--init", init, "--output_dir", str(tmp_path / "out")]
    if name == "finetune":
        return ["-m", "electra_tf.finetune", "--task", "pieces", "--data_dir", write_task(tmp_path / "task"),
                "--init", init, "--output_dir", str(tmp_path / "out"), "--epochs", "1", "--batch_size", "8",
                "--seq_length", "16", "--verbose", "0"]
    if name == "pretrain":
        data = write_records(tmp_path / "data", num_files=1, num_examples=8, seq_length=16,
                             vocab_size=tiny_config().vocab_size)
        return ["-m", "electra_tf.pretrain", "--config", "tiny", *SIZE_FLAGS, "--batch_size", "4", "--train_steps", "1",
                "--verbose", "0", "--model_dir", str(tmp_path / "out"), "--data", data, "--seq_length", "16",
                "--init", init]
    kind, _, path = init.partition(":")  # convert: --from FORM --input PATH
    return ["-m", "electra_tf.convert", "--from", kind, "--input", path, "--to", "keras",
            "--output_dir", str(tmp_path / "out" / "model.keras")]


def nothing_written(tmp_path):
    out = tmp_path / "out"
    return not out.exists() or not [p for p in out.rglob("*") if p.is_file()]


# --- Weights that are not finite ---------------------------------------------------------------------


def overwrite_tensor_bytes(path, tensor, count, byte=0xFF):
    """Overwrites the first `count` bytes of `tensor`'s data in a safetensors file (the header stays intact)."""
    with open(path, "r+b") as f:
        size = struct.unpack("<Q", f.read(8))[0]
        start, end = json.loads(f.read(size))[tensor]["data_offsets"]
        f.seek(8 + size + start)
        f.write(bytes([byte]) * min(count, end - start))


@pytest.fixture(scope="module")
def nan_folder(hf_pair, tmp_path_factory):
    """transformers' discriminator with 4 kB of 0xFF (1,024 float32 NaN) inside its word embeddings."""
    _, disc_dir, _, _, _ = hf_pair
    folder = tmp_path_factory.mktemp("nan") / "discriminator"
    shutil.copytree(disc_dir, folder)
    overwrite_tensor_bytes(folder / "model.safetensors", "electra.embeddings.word_embeddings.weight", 4096)
    from safetensors.numpy import load_file

    values = load_file(str(folder / "model.safetensors"))["electra.embeddings.word_embeddings.weight"]
    assert np.isnan(values).sum() == 1024  # safetensors itself reads the damage without a word
    return with_vocab(folder)


@pytest.mark.parametrize("name", [
    "export", "convert", pytest.param("finetune", marks=pytest.mark.large), pytest.param("pretrain", marks=pytest.mark.large),
])
def test_non_finite_weights_are_refused_naming_the_tensor(nan_folder, tmp_path, name):
    before = digests(nan_folder)
    line = error_line(run_python(command(name, f"hf:{nan_folder}", tmp_path), check=False))
    flag = "--input" if name == "convert" else "--init"
    assert f"`{flag}=" in line and "electra/embeddings/word_embeddings holds 1024 non-finite value(s) (1024 NaN" in line
    assert digests(nan_folder) == before and nothing_written(tmp_path)


# --- A generator folder given for the discriminator ------------------------------------------------------


@pytest.mark.large
def test_a_generator_folder_is_refused_unless_asked_for(hf_pair, tmp_path):
    config, _, gen_dir, _, generator = hf_pair
    gen_dir = with_vocab(shutil.copytree(gen_dir, tmp_path / "electra-generator"))
    before = digests(gen_dir)
    line = error_line(run_python(command("export", f"hf:{gen_dir}", tmp_path), check=False))
    assert f"{gen_dir} is an ELECTRA generator (ElectraForMaskedLM" in line
    assert "Pass the discriminator folder" in line and f"hf_generator:{gen_dir}" in line
    line = error_line(run_python(command("convert", f"hf:{gen_dir}", tmp_path), check=False))
    assert "is an ELECTRA generator" in line and "add --part generator" in line
    assert nothing_written(tmp_path) and digests(gen_dir) == before

    # Asked for: convert --part generator writes the generator's body, transformers' own hidden states.
    run_python([*command("convert", f"hf:{gen_dir}", tmp_path), "--part", "generator"])
    import keras

    from electra_tf.models.encoder import ElectraEncoder

    encoder = keras.saving.load_model(str(tmp_path / "out" / "model.keras"))
    assert isinstance(encoder, ElectraEncoder) and encoder.hidden_dim == config.generator_hidden_dim
    batch = inputs(config)
    np.testing.assert_allclose(np.asarray(encoder(batch, training=False)), torch_outputs(generator.electra, batch),
                               atol=1e-4)


# --- Another model family -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def gpt2_folder(tmp_path_factory):
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("torch")
    folder = tmp_path_factory.mktemp("gpt2") / "gpt2"
    model = transformers.GPT2LMHeadModel(transformers.GPT2Config(n_layer=1, n_embd=16, n_head=2, vocab_size=200,
                                                                 n_positions=32))
    save_pretrained(model, str(folder))
    return with_vocab(folder)


@pytest.mark.parametrize("name, init", [
    ("export", "{}"), ("convert", "bert:{}"), pytest.param("finetune", "hf:{}", marks=pytest.mark.large),
])
def test_a_folder_of_another_model_family_says_what_it_is(gpt2_folder, tmp_path, name, init):
    before = digests(gpt2_folder)
    line = error_line(run_python(command(name, init.format(gpt2_folder), tmp_path), check=False))
    assert f"{gpt2_folder}/config.json describes a 'gpt2' model (GPT2LMHeadModel)" in line
    assert "`hf` reads ELECTRA folders (ElectraModel, ElectraForPreTraining, ElectraForMaskedLM)" in line
    assert "`bert` reads BERT folders" in line
    assert digests(gpt2_folder) == before and nothing_written(tmp_path)


# --- A full disk while `convert --to hf` writes ------------------------------------------------------------

FULL_DISK = textwrap.dedent("""
    import sys

    import safetensors.numpy
    from safetensors import SafetensorError

    def serialize_file(tensors, filename, metadata=None):  # half the file, then the disk is full
        with open(filename, "wb") as f:
            f.write(b"\\x00" * 4096)
        raise SafetensorError('Error while serializing: IoError(Os { code: 28, kind: StorageFull, '
                              'message: "No space left on device" })')

    safetensors.numpy.serialize_file = serialize_file
    from electra_tf.convert import run

    sys.argv = ["electra-convert", *sys.argv[1:]]
    run()
""")


@pytest.mark.large
def test_a_full_disk_during_convert_to_hf_leaves_nothing_and_the_rerun_succeeds(hf_pair, tmp_path):
    _, disc_dir, gen_dir, _, _ = hf_pair
    source = tmp_path / "source"
    shutil.copytree(disc_dir, source / "discriminator")
    shutil.copytree(gen_dir, source / "generator")
    with_vocab(source / "discriminator")
    before = digests(source)
    args = ["--from", "hf", "--input", f"{source / 'discriminator'},{source / 'generator'}", "--to", "hf",
            "--output_dir", str(tmp_path / "hf_out")]
    line = error_line(run_python(["-c", FULL_DISK, *args], check=False))
    assert f"`--output_dir={tmp_path / 'hf_out'}` could not be written" in line
    assert "No space left on device" in line and "nothing was left there" in line
    assert sorted(os.listdir(tmp_path)) == ["source"]  # no output, no hidden staging folder
    assert digests(source) == before

    run_python(["-m", "electra_tf.convert", *args])  # space freed: the same command
    import transformers

    for part in ("discriminator", "generator"):
        assert (tmp_path / "hf_out" / part / "vocab.txt").exists()
    transformers.ElectraForPreTraining.from_pretrained(str(tmp_path / "hf_out" / "discriminator"))
    assert sorted(os.listdir(tmp_path)) == ["hf_out", "source"]
