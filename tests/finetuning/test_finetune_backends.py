"""Fine-tuning and predict under `--backend jax` and `--backend torch`, through the commands.

The same command and files, only the backend changes: a run fine-tuned under JAX writes what a TensorFlow run
writes (its backend in the settings); `predict` gives the same records under JAX, PyTorch and TensorFlow, on a run
of either backend (the weights JAX wrote, read by TensorFlow, compute what they computed under JAX), and the
TensorFlow Serving export of a JAX run serves those records too. A run resumes on the backend that wrote it only.
The pre-trained `--init` is a tiny discriminator as `pretrain` (TensorFlow) leaves it.
"""

import json
import os
import sys

import pytest

from test_finetune_strategies import write_toy_tasks
from toy_tasks import write_conll

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from helpers import (assert_same_records, checksums, error_line, make_run_dir, read_records, run_python,  # noqa: E402
                     shared_data)

# Slow tier, in CI: each fine-tuning run compiles its train step (about a minute).
pytestmark = [pytest.mark.large, pytest.mark.ci,
              pytest.mark.filterwarnings("ignore::UserWarning")]

FINETUNE = ["--epochs", "1", "--batch_size", "8", "--seq_length", "48", "--learning_rate", "1e-3", "--verbose", "0"]
FILES = ("results.json", "finetune_config.json", "vocab.txt")


def command(module, *args):
    result = run_python(["-m", module, *map(str, args)], check=False)
    assert result.returncode == 0, f"{module} {args}:\n{result.stderr[-3000:]}"
    return result


def predicted(run, dev, out, backend):
    command("electra_tf.predict", "--backend", backend, "--init", run, "--input", dev, "--output_file", out)
    return read_records(out)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("backends")
    return {"pretrained": make_run_dir(root / "pre", str(shared_data("vocab", "bert_uncased_vocab.txt"))),
            "movie": write_toy_tasks(str(root / "movie")),
            "ner": write_conll(str(root / "ner"), (("train", 48), ("dev", 24))), "root": root}


@pytest.fixture(scope="module")
def jax_classifier(data):
    run = data["root"] / "movie_jax"
    command("electra_tf.finetune", "--backend", "jax", "--task", "movie", "--data_dir", data["movie"], "--init",
            data["pretrained"], "--output_dir", run, *FINETUNE)
    return run


def test_a_jax_run_writes_the_files_of_a_tensorflow_run_and_predicts_alike_on_every_backend(data, jax_classifier,
                                                                                         tmp_path):
    run, dev = jax_classifier, os.path.join(data["movie"], "dev.tsv")
    assert all((run / name).exists() for name in (*FILES, "classifier.keras")) and not (run / "trials").exists()
    results = json.loads((run / "results.json").read_text())
    assert results["kind"] == "classification" and results["settings"]["backend"] == "jax"
    under_jax = predicted(run, dev, tmp_path / "jax.jsonl", "jax")
    assert_same_records(under_jax, predicted(run, dev, tmp_path / "tf.jsonl", "tensorflow"))  # JAX's weights in TF
    assert_same_records(under_jax, predicted(run, dev, tmp_path / "torch.jsonl", "torch"))
    command("electra_tf.export", "--format", "serving", "--init", run, "--output_dir", tmp_path / "serving",
            "--model_name", "movie")
    assert_same_records(under_jax, predicted(tmp_path / "serving" / "movie", dev, tmp_path / "export.jsonl", "jax"))


def test_a_run_resumes_on_the_backend_that_wrote_it_only(data, jax_classifier):
    before = checksums(jax_classifier)
    line = error_line(run_python(["-m", "electra_tf.finetune", "--task", "movie", "--data_dir", data["movie"],
                                  "--init", data["pretrained"], "--output_dir", str(jax_classifier), *FINETUNE],
                                 check=False))
    assert "--backend='tensorflow' vs 'jax'" in line and "other settings" in line
    assert checksums(jax_classifier) == before


def test_a_tagger_fine_tuned_under_jax_predicts_as_under_tensorflow(data, tmp_path):
    run, dev = tmp_path / "ner", os.path.join(data["ner"], "dev.txt")
    command("electra_tf.finetune", "--backend", "jax", "--task", "ner", "--task_kind", "tagging", "--data_dir",
            data["ner"], "--init", data["pretrained"], "--output_dir", run, *FINETUNE)
    assert (run / "token_classifier.keras").exists()
    assert json.loads((run / "results.json").read_text())["settings"]["backend"] == "jax"
    assert_same_records(predicted(run, dev, tmp_path / "jax.jsonl", "jax"),
                        predicted(run, dev, tmp_path / "tf.jsonl", "tensorflow"))


def test_a_classifier_fine_tuned_under_torch_predicts_alike_on_every_backend(data, tmp_path):
    """PyTorch's run, read by TensorFlow and JAX (a TensorFlow run read by both: the chain test below)."""
    run, dev = tmp_path / "torch", os.path.join(data["movie"], "dev.tsv")
    command("electra_tf.finetune", "--backend", "torch", "--task", "movie", "--data_dir", data["movie"], "--init",
            data["pretrained"], "--output_dir", run, *FINETUNE)
    assert json.loads((run / "results.json").read_text())["settings"]["backend"] == "torch"
    under_torch = predicted(run, dev, tmp_path / "torch.jsonl", "torch")
    assert_same_records(under_torch, predicted(run, dev, tmp_path / "tf.jsonl", "tensorflow"))
    assert_same_records(under_torch, predicted(run, dev, tmp_path / "jax.jsonl", "jax"))


def test_a_model_pre_trained_under_jax_fine_tunes_exports_and_serves_under_tensorflow(data, demo_data, tmp_path):
    """The chain a JAX pre-training host hands on: `pretrain --backend jax` on the demo corpus, then `finetune`,
    `export` and serving under TensorFlow; the served records are the ones the same weights give under JAX and
    PyTorch."""
    pre, run, dev = tmp_path / "pre_jax", tmp_path / "movie", os.path.join(data["movie"], "dev.tsv")
    command("electra_tf.pretrain", "--backend", "jax", "--config", "tiny", "--train_steps", "4",
            "--save_checkpoints_steps", "4", "--model_dir", pre, "--demo_dir", demo_data["demo_dir"])
    assert json.loads((pre / "config.json").read_text())["backend"] == "jax"
    # The pre-trained model's own outputs (replaced-token scores of the dev sentences) are the same under both.
    text = tmp_path / "dev.txt"
    text.write_text("".join(line.split("\t")[0] + "\n" for line in open(dev).readlines()[1:]))
    assert_same_records(predicted(pre, text, tmp_path / "pre_jax.jsonl", "jax"),
                        predicted(pre, text, tmp_path / "pre_tf.jsonl", "tensorflow"))
    command("electra_tf.finetune", "--task", "movie", "--data_dir", data["movie"], "--init", pre,
            "--output_dir", run, *FINETUNE)  # TensorFlow, the default
    assert json.loads((run / "results.json").read_text())["settings"]["backend"] == "tensorflow"
    command("electra_tf.export", "--format", "serving", "--init", run, "--output_dir", tmp_path / "serving",
            "--model_name", "movie")
    served = predicted(tmp_path / "serving" / "movie", dev, tmp_path / "served.jsonl", "tensorflow")
    assert_same_records(predicted(run, dev, tmp_path / "run_jax.jsonl", "jax"), served)
    assert_same_records(predicted(run, dev, tmp_path / "run_torch.jsonl", "torch"), served)
