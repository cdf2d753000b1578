"""Exact resume of fine-tuning, through the command: for each task kind, a run SIGKILLed at two random
steps and SIGTERMed once, re-run with the same command each time, ends with the weights of an
uninterrupted run, and its TensorBoard steps have no gap; under 2 mirrored logical CPUs too."""

import glob
import json
import os
import random
import re
import signal
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest
import tensorflow as tf

from electra_tf import run_files
from helpers import REPO, make_run_dir, run_python
from test_finetune_strategies import write_toy_tasks
from toy_tasks import write_toy_squad

# Runs the CLI and sends itself SIGKILL (or SIGTERM) once the optimizer has taken `AT_STEP` steps,
# after that step's callbacks: wherever it falls between checkpoints and epoch ends.
SIGNAL_AT_STEP = textwrap.dedent("""
    import os, signal, sys
    import keras
    target, name = int(os.environ["AT_STEP"]), os.environ["SIGNAL"]
    original = keras.callbacks.CallbackList.on_train_batch_end
    sent = []
    def on_train_batch_end(self, batch, logs=None):
        original(self, batch, logs)
        if not sent and int(self.model.optimizer.iterations.numpy()) >= target:
            sent.append(1)
            os.kill(os.getpid(), getattr(signal, name))
    keras.callbacks.CallbackList.on_train_batch_end = on_train_batch_end
    from electra_tf.finetune import run
    sys.argv = ["electra-finetune", *sys.argv[1:]]
    run()
""")
MODEL_FILES = {"classification": "classifier.keras", "tagging": "token_classifier.keras",
               "span_qa": "question_answerer.keras"}
EPOCHS = 2


@pytest.fixture(scope="module")
def setup(tmp_path_factory, bert_vocab):
    root = tmp_path_factory.mktemp("resume")
    run = make_run_dir(root / "run", bert_vocab, num_layers=1, hidden_dim=32, embedding_dim=16, intermediate_dim=64,
                       max_sequence_length=48, seq_length=16)
    text = write_toy_tasks(root / "text", num_sentences=16)  # 16 rows, batch 4: 4 steps an epoch
    squad = write_toy_squad(root / "squad", articles=(("train", 2), ("dev", 1)))  # 8 questions
    return {"run": run, "text": text, "squad": squad}


def command(kind, setup, output_dir, extra=()):
    args = ["--task=toy", f"--task_kind={kind}", f"--init={setup['run']}", f"--output_dir={output_dir}",
            f"--epochs={EPOCHS}", "--batch_size=4", "--learning_rate=3e-3", "--seq_length=16", "--verbose=0",
            "--save_checkpoints_steps=3", "--log_steps=1", "--deterministic", *extra]
    if kind == "span_qa":
        args += [f"--data_dir={setup['squad']}", "--seq_length=48", "--doc_stride=32", "--max_query_length=12",
                 "--start_n_top=3", "--end_n_top=3"]
    else:
        args += [f"--data_dir={setup['text']}"]
    return args


def signal_at(kind, setup, output_dir, step, name, extra=()):
    script = os.path.join(output_dir + "_hook.py")
    with open(script, "w") as f:
        f.write(SIGNAL_AT_STEP)
    env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="2", AT_STEP=str(step), SIGNAL=name)
    return subprocess.run([sys.executable, script, *command(kind, setup, output_dir, extra)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)


def latest_step(output_dir):
    paths = glob.glob(os.path.join(output_dir, "trials", "trial-0", "checkpoints", "ckpt-*.index"))
    latest = run_files.latest_checkpoint(os.path.join(output_dir, "trials", "trial-0"))
    return int(latest.rsplit("-", 1)[1]) if latest and paths else 0


def logged_steps(output_dir, tag="train/loss"):
    steps = set()
    for path in glob.glob(os.path.join(output_dir, "logs", "events*")):
        for event in tf.compat.v1.train.summary_iterator(path):
            if any(v.tag == tag for v in event.summary.value):
                steps.add(event.step)
    return steps


@pytest.mark.large
@pytest.mark.parametrize("kind,extra", [
    pytest.param("classification", (), marks=pytest.mark.release),  # the mirrored case below covers it in CI
    pytest.param("tagging", (), marks=pytest.mark.release),
    pytest.param("span_qa", (), marks=pytest.mark.release),
    ("classification", ("--strategy=mirrored", "--num_cpu_devices=2")),
], ids=["classification", "tagging", "span_qa", "classification_mirrored_2_cpus"])
def test_killed_twice_and_terminated_once_ends_equal_to_an_uninterrupted_run(kind, extra, setup, tmp_path):
    reference = str(tmp_path / "reference")
    run_python(["-m", "electra_tf.finetune", *command(kind, setup, reference, extra)])
    rows = json.loads(open(os.path.join(reference, "results.json")).read()).get("num_train_windows", 16)
    total = EPOCHS * -(-rows // 4)
    assert total >= 4
    rng = random.Random(kind + str(len(extra)))
    out = str(tmp_path / "interrupted")
    first = rng.randint(1, total // 3)
    second = rng.randint(first + 1, 2 * total // 3)
    term = rng.randint(second + 1, total - 1)
    for step in (first, second):  # SIGKILL at two random steps
        result = signal_at(kind, setup, out, step, "SIGKILL", extra)
        assert result.returncode == -signal.SIGKILL, result.stderr[-3000:]
        assert 0 < latest_step(out) <= step or step < 3  # checkpoints every 3 steps and at each epoch end
    result = signal_at(kind, setup, out, term, "SIGTERM", extra)  # saves at the next step boundary, exit 0
    assert result.returncode == 0, result.stderr[-3000:]
    assert "preempted (SIGTERM): saved the checkpoint of step" in result.stdout
    assert not os.path.exists(os.path.join(out, "results.json"))
    finished = run_python(["-m", "electra_tf.finetune", *command(kind, setup, out, extra)])  # the same command finishes the run
    assert "results: " in finished.stdout
    saved = int(re.search(r"saved the checkpoint of step (\d+)", result.stdout).group(1))
    assert saved in (term, term + 1)  # the next step boundary (or the epoch's end, when `term` ended one)
    assert f"trial 0: resumed at step {saved} " in finished.stdout  # resumed where SIGTERM saved, not restarted
    expected = keras.saving.load_model(os.path.join(reference, MODEL_FILES[kind]), compile=False).get_weights()
    found = keras.saving.load_model(os.path.join(out, MODEL_FILES[kind]), compile=False).get_weights()
    assert len(found) == len(expected) > 5
    worst = max(float(np.abs(a - b).max()) for a, b in zip(found, expected))
    assert worst <= 1e-6, (worst, first, second)
    assert set(range(1, total + 1)) <= logged_steps(out), (first, second)  # no gap in TensorBoard
    if kind == "classification" and not extra:  # a finished run re-run (also in test_trials, in-process)
        again = run_python(["-m", "electra_tf.finetune", *command(kind, setup, out, extra)])
        assert "already finished; results in" in again.stdout
