"""One `--init` vocabulary in every command: transformers and keras-hub folders, written by those libraries
themselves, go straight into `finetune`, `pretrain` and `export`, the encoder equal to the library's own output."""

import json
import os
import shutil
import sys

import keras
import numpy as np
import pytest

from convert_helpers import SIZE_FLAGS, inputs, tiny_config, torch_outputs, write_task

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from helpers import run_python, write_records, write_vocab  # noqa: E402

from electra_tf import run_files, sources  # noqa: E402  (registers the model classes for load_model)
from electra_tf.tasks import get as task_kind  # noqa: E402  (the registry: a kind by name)

ClassificationKind = task_kind("classification")

TOLERANCE = 1e-4


def finetune(init, output_dir, task_dir):
    """`finetune --init INIT` for one step at a learning rate too small to move the encoder beyond 1e-6."""
    result = run_python(["-m", "electra_tf.finetune", "--task", "pieces", "--data_dir", task_dir, "--init", init,
                         "--output_dir", str(output_dir), "--epochs", "1", "--batch_size", "8", "--seq_length", "16",
                         "--learning_rate", "1e-9", "--verbose", "0"])
    assert result.returncode == 0
    classifier = keras.saving.load_model(str(output_dir / ClassificationKind.model_file), compile=False)
    return classifier.encoder


def encoder_output(encoder, batch):
    return np.asarray(encoder(batch, training=False))


@pytest.fixture(scope="module")
def hf_folder(hf_pair, tmp_path_factory):
    """transformers' `save_pretrained` discriminator + generator, with a vocab.txt and HF's tokenizer_config.json."""
    transformers = pytest.importorskip("transformers")
    config, disc_dir, gen_dir, discriminator, generator = hf_pair
    root = tmp_path_factory.mktemp("hf_init")
    shutil.copytree(disc_dir, root / "discriminator")
    shutil.copytree(gen_dir, root / "generator")
    vocab = write_vocab(root / "discriminator" / "vocab.txt", vocab_size=config.vocab_size)
    transformers.BertTokenizer(vocab, do_lower_case=True).save_pretrained(str(root / "discriminator"))
    assert json.loads((root / "discriminator" / "tokenizer_config.json").read_text())["do_lower_case"] is True
    reference = torch_outputs(discriminator.electra, inputs(config))
    return root, config, reference


@pytest.mark.large
def test_finetune_pretrain_and_export_take_a_transformers_pair(hf_folder, tmp_path):
    root, config, reference = hf_folder
    batch = inputs(config)
    spec = f"hf:{root / 'discriminator'},{root / 'generator'}"

    # finetune: the discriminator of the pair (it refused "holds a ElectraPretrainer")
    encoder = finetune(spec, tmp_path / "finetuned", write_task(tmp_path / "task"))
    np.testing.assert_allclose(encoder_output(encoder, batch), reference, atol=TOLERANCE)
    assert (tmp_path / "finetuned" / "vocab.txt").exists()

    # export --format encoder: a SavedModel whose encoder is transformers'
    result = run_python(["-m", "electra_tf.export", "--format", "encoder", "--init", f"hf:{root}",
                         "--output_dir", str(tmp_path / "export"), "--seq_length", "32"])
    assert result.returncode == 0
    exported, _ = sources.load_encoder(str(tmp_path / "export"))
    np.testing.assert_allclose(encoder_output(exported, batch), reference, atol=TOLERANCE)

    # pretrain --init hf:DIR (continued pre-training of both parts), then --init that run (phase 2, longer records)
    data = write_records(tmp_path / "data", num_files=1, num_examples=16, seq_length=16, vocab_size=config.vocab_size)
    base = ["-m", "electra_tf.pretrain", "--config", "tiny", *SIZE_FLAGS, "--batch_size", "4", "--train_steps", "1",
            "--learning_rate", "1e-9", "--verbose", "0", "--save_checkpoints_steps", "1"]
    result = run_python([*base, "--model_dir", str(tmp_path / "run1"), "--data", data, "--seq_length", "16",
                         "--init", f"hf:{root}"])
    assert result.returncode == 0
    continued = keras.saving.load_model(str(tmp_path / "run1" / run_files.DISCRIMINATOR_FILE))
    np.testing.assert_allclose(encoder_output(continued, batch), reference, atol=TOLERANCE)
    data32 = write_records(tmp_path / "data32", num_files=1, num_examples=16, seq_length=32,
                           vocab_size=config.vocab_size)
    result = run_python([*base, "--model_dir", str(tmp_path / "run2"), "--data", data32, "--seq_length", "32",
                         "--init", str(tmp_path / "run1")])
    assert result.returncode == 0
    phase2 = keras.saving.load_model(str(tmp_path / "run2" / run_files.DISCRIMINATOR_FILE))
    np.testing.assert_allclose(encoder_output(phase2, batch), reference, atol=TOLERANCE)


@pytest.mark.large
def test_finetune_takes_a_keras_hub_preset_saved_by_keras_hub(tmp_path):
    keras_hub = pytest.importorskip("keras_hub")
    config = tiny_config()
    keras.utils.set_random_seed(3)
    backbone = keras_hub.models.ElectraBackbone(
        vocab_size=config.vocab_size, num_layers=2, num_heads=2, hidden_dim=64, embedding_dim=32,
        intermediate_dim=128, dropout=0.0, max_sequence_length=64)
    for weight in backbone.weights:  # LayerNorm and biases off their 1 / 0 starts
        weight.assign(weight + np.random.default_rng(0).normal(0, 0.05, weight.shape).astype("float32"))
    preset = tmp_path / "preset"
    backbone.save_to_preset(str(preset))
    vocab = write_vocab(tmp_path / "vocab.txt", vocab_size=config.vocab_size)
    # keras-hub's tokenizer defaults to lowercase=False: a cased tokenizer over an uncased vocabulary is refused.
    keras_hub.tokenizers.ElectraTokenizer(vocabulary=vocab).save_to_preset(str(preset))
    with pytest.raises(ValueError, match=r"preset/tokenizer.json: lower_case false .* no upper-case piece"):
        sources.load_init(f"keras_hub:{preset}")
    os.remove(preset / "tokenizer.json")
    keras_hub.tokenizers.ElectraTokenizer(vocabulary=vocab, lowercase=True).save_to_preset(str(preset))
    batch = inputs(config)
    reference = np.asarray(backbone(batch)["sequence_output"])

    encoder = finetune(f"keras_hub:{preset}", tmp_path / "finetuned", write_task(tmp_path / "task"))
    np.testing.assert_allclose(encoder_output(encoder, batch), reference, atol=TOLERANCE)


def test_load_init_reads_every_form_and_takes_the_discriminator_of_a_pair(hf_folder, tmp_path):
    root, config, reference = hf_folder
    batch = inputs(config)
    for spec in (f"hf:{root}", f"hf:{root / 'discriminator'}", str(root / "discriminator")):
        encoder, vocab = sources.load_init(spec)
        np.testing.assert_allclose(encoder_output(encoder, batch), reference, atol=TOLERANCE, err_msg=spec)
        assert vocab == str(root / "discriminator" / "vocab.txt")
    with pytest.raises(ValueError, match="Unknown `--init=onnx:x`"):
        sources.load_init("onnx:x")
    with pytest.raises(FileNotFoundError, match="not a keras-hub preset folder"):
        sources.load_init(f"keras_hub:{tmp_path}")
