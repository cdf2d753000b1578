"""The fine-tuning CLI end to end on the shared movie_polarity task."""

import json
import os
import subprocess
import sys

import pytest

SHARED_TASK = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "shared", "data",
                                           "tasks", "movie_polarity"))


@pytest.mark.large
@pytest.mark.skipif(not os.path.isdir(SHARED_TASK), reason="../shared/data missing")
def test_cli_beats_majority_class_on_movie_polarity(run_dir, tmp_path):
    """A tiny untrained encoder, 2000 training sentences, 3 epochs: clearly above the majority class."""
    output_dir = tmp_path / "out"
    command = [sys.executable, "-m", "electra_tf.finetune", "--task", "movie_polarity",
               "--data_dir", SHARED_TASK, "--init", run_dir, "--output_dir", str(output_dir),
               "--epochs", "3", "--batch_size", "32", "--learning_rate", "2e-3", "--layerwise_lr_decay", "0.8",
               "--seq_length", "64", "--train_limit", "2000", "--num_trials", "1", "--verbose", "0"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "trial 0 seed 0: dev accuracy = " in result.stdout
    assert "dev accuracy: mean" in result.stdout and "median" in result.stdout
    results = json.loads((output_dir / "results.json").read_text())
    # Independent majority baseline from the dev file itself.
    with open(os.path.join(SHARED_TASK, "dev.tsv")) as f:
        labels = [line.rstrip("\n").rsplit("\t", 1)[1] for line in f][1:]
    majority = max(labels.count(v) for v in set(labels)) / len(labels)
    accuracy = results["trials"][0]["dev"]["accuracy"]
    print(f"dev accuracy {accuracy:.4f} vs majority class {majority:.4f}")
    assert accuracy > majority + 0.05
    assert results["summary"]["dev_accuracy"]["median"] == accuracy
    assert set(results["trials"][0]["dev"]) == {"accuracy", "f1", "mcc"}
    config = json.loads((output_dir / "finetune_config.json").read_text())
    assert config["label_names"] == ["negative", "positive"] and config["seq_length"] == 64
    assert (output_dir / "classifier.keras").exists() and (output_dir / "vocab.txt").exists()


@pytest.mark.large
def test_multiple_trials_report_spread(run_dir, tmp_path):
    """Two trials on a toy pair task: per-trial metrics, their mean/median/std, different seeds."""
    from electra_tf.tasks.classification import data as tasks
    from electra_tf.tasks.classification.kind import run_finetuning

    data = tmp_path / "data"
    data.mkdir()
    rows = ["premise\thypothesis\tlabel"] + [f"{w} film\tit is\t{int(w == 'good')}" for w in ["good", "bad"] * 20]
    for split in ("train", "dev"):
        (data / f"{split}.tsv").write_text("\n".join(rows) + "\n")
    (data / "labels.txt").write_text("negative\npositive\n")
    spec = tasks.load_task("toy", str(data), text_a_column="premise", text_b_column="hypothesis")
    results = run_finetuning(spec, str(data), run_dir, str(tmp_path / "out"), epochs=1, batch_size=8,
                             learning_rate=1e-3, seq_length=8, num_trials=2, verbose=0)
    assert [t["seed"] for t in results["trials"]] == [0, 1]
    values = [t["dev"]["accuracy"] for t in results["trials"]]
    summary = results["summary"]["dev_accuracy"]
    assert summary["mean"] == pytest.approx(sum(values) / 2)
    assert summary["min"] == min(values) and summary["max"] == max(values)
    assert results["majority_class_accuracy"] == 0.5
    config = json.loads((tmp_path / "out" / "finetune_config.json").read_text())
    assert config["pair"] is True and config["label_names"] == ["negative", "positive"]


def test_an_untrained_encoder_saved_as_init_loads_back_equal(tmp_path):
    """`sources.untrained_encoder` is the seeded pre-trainer's discriminator; `save_encoder` makes it a `--init`."""
    import keras
    import numpy as np

    from electra_tf import run_files, sources
    from electra_tf.config import get_config
    from electra_tf.data.tokenizer import SETTINGS_FILE
    from electra_tf.models.pretrainer import build_pretrainer

    config = get_config("tiny", vocab_size=300, embedding_dim=16, hidden_dim=32, num_layers=2, num_heads=2,
                        intermediate_dim=64, seq_length=32, max_sequence_length=64)
    ids = np.random.RandomState(0).randint(5, 300, (2, 32)).astype("int32")
    batch = dict(token_ids=ids, segment_ids=0 * ids, padding_mask=np.ones_like(ids))
    keras.utils.set_random_seed(3)
    direct = build_pretrainer(config).discriminator  # built by its first call, not by build()
    expected = keras.ops.convert_to_numpy(direct(batch, training=False))

    encoder = sources.untrained_encoder(config, seed=3)
    other = sources.untrained_encoder(config, seed=4)
    (tmp_path / "vocab.src").write_text("[PAD]\n[UNK]\n")
    path = sources.save_encoder(encoder, str(tmp_path / "init"), str(tmp_path / "vocab.src"))
    loaded, vocab_file = sources.load_init(path)
    found = keras.ops.convert_to_numpy(loaded(batch, training=False))
    np.testing.assert_allclose(found, expected, atol=1e-6)
    assert not np.allclose(keras.ops.convert_to_numpy(other(batch, training=False)), expected)
    assert sorted(os.listdir(tmp_path / "init")) == sorted([run_files.ENCODER_FILE, run_files.VOCAB_FILE, SETTINGS_FILE])
    assert open(vocab_file).read() == "[PAD]\n[UNK]\n"
