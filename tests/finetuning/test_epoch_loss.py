"""The per-epoch train loss of fine-tuning is that epoch's own mean, through the command.

A hook script runs `electra_tf.finetune` as the command does and records, after every training batch,
Keras' own running loss of the `fit` call; each batch's loss is recovered from consecutive running
means (batches of equal size). From those, each epoch's mean is computed here and compared with what
the run reports: the console's `epoch N/E: train loss`, `results.json` (`trials[].train_loss`,
`epochs[].train_loss`) and TensorBoard (`train/epoch_loss` per epoch, `train/loss` per step: the
epoch's mean so far). Uninterrupted, and killed mid-epoch then resumed.
"""

import glob
import json
import os
import re
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import tensorflow as tf

from helpers import REPO, make_run_dir
from test_finetune_strategies import write_toy_tasks
from test_journeys import write_toy_choices

pytestmark = pytest.mark.large  # slow tier: together these tests take minutes

# Records (step, batch of this `fit`, Keras' running loss) after each training batch's callbacks; sends
# itself SIGKILL after the callbacks of step KILL_AT (0: never).
RECORDING_HOOK = textwrap.dedent("""
    import json, os, signal, sys
    import keras
    log, kill_at = os.environ["BATCH_LOG"], int(os.environ.get("KILL_AT", "0"))
    original = keras.callbacks.CallbackList.on_train_batch_end
    def on_train_batch_end(self, batch, logs=None):
        original(self, batch, logs)
        step = int(self.model.optimizer.iterations.numpy())
        with open(log, "a") as f:
            f.write(json.dumps({"step": step, "batch": batch, "mean": float(logs["loss"])}) + "\\n")
        if step == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
    keras.callbacks.CallbackList.on_train_batch_end = on_train_batch_end
    from electra_tf.finetune import run
    sys.argv = ["electra-finetune", *sys.argv[1:]]
    run()
""")
EPOCHS, ROWS, BATCH = 3, 16, 4
STEPS = ROWS // BATCH  # every batch full: the epoch's mean is the plain mean of its batch losses


@pytest.fixture(scope="module")
def setup(tmp_path_factory, bert_vocab):
    root = tmp_path_factory.mktemp("epoch_loss")
    run = make_run_dir(root / "run", bert_vocab, num_layers=1, hidden_dim=32, embedding_dim=16, intermediate_dim=64,
                       max_sequence_length=32, seq_length=16)
    hook = root / "hook.py"
    hook.write_text(RECORDING_HOOK)
    return {"run": run, "data": write_toy_tasks(root / "data", num_sentences=ROWS), "hook": str(hook),
            "data_40": write_toy_tasks(root / "data_40", num_sentences=40),
            "choices": write_toy_choices(root / "choices", (("train", ROWS), ("dev", 8)))}


def finetune(setup, output_dir, log, kill_at=0, data="data", epochs=EPOCHS, batch_size=BATCH, kind="classification"):
    args = ["--task=toy", f"--task_kind={kind}", f"--data_dir={setup[data]}", f"--init={setup['run']}",
            f"--output_dir={output_dir}", f"--epochs={epochs}", f"--batch_size={batch_size}", "--learning_rate=3e-3",
            "--seq_length=16", "--save_checkpoints_steps=3", "--log_steps=1"]
    env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="2", BATCH_LOG=str(log), KILL_AT=str(kill_at))
    return subprocess.run([sys.executable, setup["hook"], *args], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=600)


def batch_losses(log):
    """step -> that batch's loss, from Keras' running means (a step trained twice: its last record)."""
    records = [json.loads(line) for line in open(log)]
    losses, previous = {}, 0.0
    for r in records:
        total = r["mean"] * (r["batch"] + 1)
        losses[r["step"]] = total - (previous if r["batch"] else 0.0)
        previous = total
    return losses


def scalars(output_dir, tag):
    """step -> the last value logged under `tag` (a resumed run logs some steps again)."""
    found = {}
    for path in sorted(glob.glob(os.path.join(output_dir, "logs", "events*"))):
        for event in tf.compat.v1.train.summary_iterator(path):
            for value in event.summary.value:
                if value.tag == tag:
                    found[event.step] = (event.wall_time, float(tf.make_ndarray(value.tensor)))
    return {step: value for step, (_, value) in found.items()}


def check_epoch_means(output_dir, log, console):
    losses = batch_losses(log)
    assert sorted(losses) == list(range(1, EPOCHS * STEPS + 1))
    epochs = [[losses[e * STEPS + i + 1] for i in range(STEPS)] for e in range(EPOCHS)]
    expected = [float(np.mean(batches)) for batches in epochs]
    assert max(expected) - min(expected) > 1e-3  # the epochs differ: a running mean over epochs would show
    trial = json.load(open(os.path.join(output_dir, "results.json")))["trials"][0]
    np.testing.assert_allclose(trial["train_loss"], expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose([e["train_loss"] for e in trial["epochs"]], expected, rtol=1e-5, atol=1e-6)
    board = scalars(output_dir, "train/epoch_loss")
    np.testing.assert_allclose([board[e + 1] for e in range(EPOCHS)], expected, rtol=1e-5, atol=1e-6)
    printed = [float(x) for x in re.findall(r"epoch \d+/\d+: train loss ([0-9.]+)", console)]
    np.testing.assert_allclose(printed, expected, atol=6e-5)  # printed with 4 decimals
    step_board = scalars(output_dir, "train/loss")  # each step: the mean of its epoch's batches so far
    for e, batches in enumerate(epochs):
        for i in range(STEPS):
            assert step_board[e * STEPS + i + 1] == pytest.approx(np.mean(batches[:i + 1]), rel=1e-5, abs=1e-6)


@pytest.mark.parametrize("kind,data", [
    ("classification", "data"),
    pytest.param("tagging", "data", marks=pytest.mark.large),  # the same sentences' CoNLL file
    pytest.param("multiple_choice", "choices", marks=pytest.mark.large),
])
def test_each_epoch_reports_the_mean_of_its_own_batches(kind, data, setup, tmp_path):
    out, log = str(tmp_path / "out"), tmp_path / "batches.jsonl"
    result = finetune(setup, out, log, data=data, kind=kind)
    assert result.returncode == 0, result.stderr[-3000:]
    assert len(re.findall(r"epoch \d+/3: train loss", result.stdout)) == EPOCHS
    check_epoch_means(out, log, result.stdout)


@pytest.mark.large
def test_a_run_killed_mid_epoch_and_resumed_reports_each_epochs_own_mean(setup, tmp_path):
    out, log = str(tmp_path / "out"), tmp_path / "batches.jsonl"
    kill_at = STEPS + 3  # epoch 2's third step: the checkpoint every 3 steps after the epoch-1 save
    killed = finetune(setup, out, log, kill_at=kill_at)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    assert os.path.exists(os.path.join(out, "trials", "trial-0", "checkpoints", f"ckpt-{kill_at}.index"))
    resumed = finetune(setup, out, log)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"trial 0: resumed at step {kill_at} (epoch 2)" in resumed.stdout
    check_epoch_means(out, log, killed.stdout + resumed.stdout)


def test_the_default_progress_shows_each_tenth_of_an_epoch(setup, tmp_path):
    out, log = str(tmp_path / "out"), tmp_path / "batches.jsonl"
    result = finetune(setup, out, log, data="data_40", epochs=1, batch_size=2)  # 20 steps, --verbose 2
    assert result.returncode == 0, result.stderr[-3000:]
    losses = batch_losses(log)
    lines = result.stdout.splitlines()
    shown = [(i, re.fullmatch(r"epoch 1/1: step (\d+)/20, train loss ([0-9.]+), ([0-9.]+) examples/s", line))
             for i, line in enumerate(lines)]
    shown = [(i, int(m[1]), float(m[2]), float(m[3])) for i, m in shown if m]
    assert [step for _, step, _, _ in shown] == list(range(2, 20, 2))  # each tenth, the last one is the epoch's
    for _, step, loss, rate in shown:
        assert loss == pytest.approx(np.mean([losses[i] for i in range(1, step + 1)]), abs=6e-5)
        assert rate > 0
    end = [i for i, line in enumerate(lines) if line.startswith("epoch 1/1: train loss")]
    assert len(end) == 1 and shown[-1][0] < end[0]
