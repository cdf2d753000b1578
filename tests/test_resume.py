"""Exact resume: same command, same model, through SIGKILL (also mid-save), SIGTERM and under MirroredStrategy.

Every run here is the `electra_tf.pretrain` command line in a subprocess; the
reference for "resumed correctly" is an uninterrupted run of the same command.
"""

import glob
import os
import random
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
import tensorflow as tf

from helpers import KILL_AT_STEP, REPO, checksums, run_python, tensorboard_values, write_records
from electra_tf import run_files, sources
from electra_tf.sources.named_checkpoint import all_finite

pytestmark = pytest.mark.ci  # its large tests (not its release ones) run in CI's slow step

TINY = dict(vocab_size=400, embedding_dim=16, hidden_dim=32, num_layers=2, num_heads=2,
            intermediate_dim=64, seq_length=32, max_sequence_length=32, batch_size=8,
            warmup_steps=4, log_steps=5, save_checkpoints_steps=5, keep_checkpoint_max=3,
            shuffle_buffer=50, deterministic=True)
STEPS = 40
SUFFIX = "/.ATTRIBUTES/VARIABLE_VALUE"

# Runs the CLI, but the save of checkpoint `KILL_AT_SAVE` writes its files and is SIGKILLed
# before the checkpoint index is updated (and its data file is cut short): a death mid-save.
KILL_DURING_SAVE = textwrap.dedent("""
    import os, signal, sys
    import tensorflow as tf
    target = int(os.environ["KILL_AT_SAVE"])
    original = tf.train.CheckpointManager.save
    def save(self, checkpoint_number=None, **kwargs):
        if checkpoint_number is not None and checkpoint_number >= target:
            prefix = self._checkpoint.write(os.path.join(self.directory, f"ckpt-{checkpoint_number}"))
            for path in tf.io.gfile.glob(prefix + ".data*"):
                os.truncate(path, os.path.getsize(path) // 2)
            os.kill(os.getpid(), signal.SIGKILL)
        return original(self, checkpoint_number=checkpoint_number, **kwargs)
    tf.train.CheckpointManager.save = save
    from electra_tf.pretrain import run
    sys.argv = ["electra-pretrain", *sys.argv[1:]]
    run()
""")

def command(data, model_dir, strategy_args=(), **overrides):
    values = {**TINY, "data": data, "train_steps": STEPS, **overrides}
    return ["-m", "electra_tf.pretrain", "--config", "tiny", "--model_dir", str(model_dir), "--verbose", "0",
            *strategy_args, *[f"--{k}={v}" for k, v in values.items()]]


def env():
    return dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="2")


def model_weights(model_dir):
    """name -> value of every model variable in the run's latest checkpoint."""
    path = run_files.latest_checkpoint(str(model_dir))
    reader = tf.train.load_checkpoint(path)
    return path, {n: reader.get_tensor(n) for n, _ in tf.train.list_variables(path)
                  if n.startswith("model/") and "seed_generator" not in n}


def assert_same_model(a, b, atol=1e-6):
    path_a, weights_a = model_weights(a)
    path_b, weights_b = model_weights(b)
    assert os.path.basename(path_a) == os.path.basename(path_b) == f"ckpt-{STEPS}"
    assert weights_a.keys() == weights_b.keys() and len(weights_a) > 50
    worst = max(float(np.abs(weights_a[n] - weights_b[n]).max()) for n in weights_a)
    assert worst <= atol, worst


def logged_steps(model_dir, tag="batch_loss"):
    steps = set()
    for path in glob.glob(os.path.join(model_dir, "logs", "train", "events*")):
        for event in tf.compat.v1.train.summary_iterator(path):
            if any(v.tag == tag for v in event.summary.value):
                steps.add(event.step)
    return steps


def latest_step(model_dir):
    latest = run_files.latest_checkpoint(str(model_dir))
    return int(latest.rsplit("-", 1)[1]) if latest else 0


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return write_records(tmp_path_factory.mktemp("resume") / "data", num_files=3, num_examples=48)


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory, data):
    """The run of `command(data, ...)` on one device, uninterrupted: the reference of the tests below."""
    model_dir = tmp_path_factory.mktemp("uninterrupted") / "run"
    run_python(command(data, model_dir))
    return model_dir


@pytest.mark.large
def test_same_command_twice_gives_the_same_model(tmp_path, data, uninterrupted):
    run_python(command(data, tmp_path / "again"))
    assert_same_model(uninterrupted, tmp_path / "again", atol=0.0)


@pytest.mark.large
@pytest.mark.parametrize("strategy_args", [(), pytest.param(("--strategy=mirrored", "--num_cpu_devices=2"),
                                                               marks=pytest.mark.release)],
                         ids=["one_device", "mirrored_2_cpus"])
def test_sigkill_three_times_then_rerun_equals_an_uninterrupted_run(tmp_path, data, strategy_args, request):
    reference = tmp_path / "reference"
    if strategy_args:
        run_python(command(data, reference, strategy_args))
    else:  # the same command on one device as the shared reference's
        reference = request.getfixturevalue("uninterrupted")
    rng = random.Random(len(strategy_args))
    model_dir = tmp_path / "killed"
    kills = []
    # 1. Killed while writing a checkpoint: that checkpoint must not become the latest.
    target = rng.choice([10, 15])
    script = tmp_path / "kill_during_save.py"
    script.write_text(KILL_DURING_SAVE)
    result = subprocess.run([sys.executable, str(script), *command(data, model_dir, strategy_args)[2:]],
                            cwd=REPO, env=dict(env(), KILL_AT_SAVE=str(target)), capture_output=True,
                            timeout=600)
    assert result.returncode == -signal.SIGKILL
    assert latest_step(model_dir) == target - 5  # the half-written one is ignored
    kills.append(("during save", target))
    # 2, 3. Killed at a random step between the next checkpoint and the one after it (a step count,
    # not a wall-clock delay: on a fast machine 5 steps take milliseconds).
    script = tmp_path / "kill_at_step.py"
    script.write_text(KILL_AT_STEP)
    for _ in range(2):
        seen = latest_step(model_dir)
        step = seen + 5 + rng.randint(1, 4)
        result = subprocess.run([sys.executable, str(script), *command(data, model_dir, strategy_args)[2:]],
                                cwd=REPO, env=dict(env(), KILL_AT_STEP=str(step)), capture_output=True, timeout=600)
        assert result.returncode == -signal.SIGKILL, result.stderr[-3000:]
        assert latest_step(model_dir) == seen + 5
        kills.append(("between checkpoints", step))
    assert latest_step(model_dir) < STEPS, kills  # the kills really interrupted the run
    run_python(command(data, model_dir, strategy_args))  # the same command finishes the run
    assert_same_model(model_dir, reference)
    assert set(range(5, STEPS + 1, 5)) <= logged_steps(str(model_dir)), kills  # no gap in TensorBoard
    assert (model_dir / "discriminator.keras").exists()


@pytest.mark.large
def test_sigterm_saves_the_current_step_and_exits_0(tmp_path, data):
    reference = tmp_path / "reference"
    run_python(command(data, reference, train_steps=60))
    model_dir = tmp_path / "preempted"
    proc = subprocess.Popen([sys.executable, *command(data, model_dir, train_steps=60, save_checkpoints_steps=20)],
                            cwd=REPO, env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 600  # a hang guard only: the test waits for the checkpoint of step 20
    try:
        while latest_step(model_dir) < 20:
            assert proc.poll() is None and time.time() < deadline, "training ended (or hung) before step 20"
            time.sleep(0.02)
    except BaseException:
        proc.kill()
        raise
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 0, stderr[-3000:]
    saved = latest_step(model_dir)
    assert 20 <= saved < 60 and f"saved the checkpoint of step {saved}" in stderr
    assert not (model_dir / "discriminator.keras").exists()  # an unfinished run does not look finished
    run_python(command(data, model_dir, train_steps=60, save_checkpoints_steps=20))
    global STEPS
    steps, STEPS = STEPS, 60
    try:
        assert_same_model(model_dir, reference)
    finally:
        STEPS = steps


@pytest.mark.large
def test_non_finite_loss_stops_naming_the_step_and_keeps_finite_checkpoints(tmp_path, data):
    from electra_tf.config import get_config
    from electra_tf.training.pretraining import train

    model_dir = str(tmp_path / "run")
    config = get_config("tiny", **dict(TINY, deterministic=False), data=data, train_steps=5)
    train(config, model_dir, verbose=0)
    with pytest.raises(FloatingPointError, match=r"at step \d+"):
        train(config.replace(train_steps=40, learning_rate=1e30, save_checkpoints_steps=1), model_dir, verbose=0)
    pretrainer, _ = sources.restore_pretrainer(model_dir)
    assert all_finite(pretrainer.variables)


def checkpoint_value(model_dir, name):
    """A scalar of the run's latest checkpoint (`optimizer/state/iteration`, `loss_scale/skipped_updates`)."""
    return int(tf.train.load_checkpoint(run_files.latest_checkpoint(str(model_dir))).get_tensor(name + SUFFIX))


@pytest.mark.large
def test_mixed_float16_applies_the_steps_it_claims_and_names_the_skipped_updates(tmp_path, data):
    """Keras' loss scaler starts at 2**15 and skips the updates whose float16 gradients overflow: the run trains
    on until `--train_steps` updates are applied, ckpt-N holds N of them, and the skipped count is said."""
    model_dir = tmp_path / "mixed"
    args = command(data, model_dir, train_steps=5, precision="mixed_float16", log_steps=1)
    result = run_python(args)
    assert checkpoint_steps(model_dir) == [5]
    assert checkpoint_value(model_dir, "optimizer/state/iteration") == 5  # applied updates
    skipped = checkpoint_value(model_dir, "loss_scale/skipped_updates")
    assert skipped > 0, result.stderr[-3000:]  # the scale settled on this run: otherwise the test proves nothing
    assert f"skipped the update of {skipped} batches" in result.stderr
    assert f"{5 + skipped} batches read for 5 applied updates" in result.stderr
    logged = tensorboard_values(model_dir / "logs" / "train", "batch_skipped_updates")
    assert max(logged) == 5 + skipped and logged[max(logged)] == skipped  # one per batch read (from 1), the total
    before = checksums(model_dir / run_files.CHECKPOINT_DIR)
    again = run_python(args)  # the same command: nothing left to train
    assert "Already trained 5 of 5 steps" in again.stderr
    assert checksums(model_dir / run_files.CHECKPOINT_DIR) == before


@pytest.mark.large
def test_mixed_float16_sigkill_then_rerun_equals_an_uninterrupted_run(tmp_path, data):
    """The loss scale, its growth counter and the skipped count are in the checkpoint: a resumed run reads the
    same batches with the same scale (its latest checkpoint falls inside an epoch of batches read)."""
    flags = dict(train_steps=10, precision="mixed_float16")
    reference, model_dir = tmp_path / "reference", tmp_path / "killed"
    run_python(command(data, reference, **flags))
    script = tmp_path / "kill_at_step.py"
    script.write_text(KILL_AT_STEP)
    result = subprocess.run([sys.executable, str(script), *command(data, model_dir, **flags)[2:]],
                            cwd=REPO, env=dict(env(), KILL_AT_STEP="7"), capture_output=True, timeout=600)
    assert result.returncode == -signal.SIGKILL, result.stderr[-3000:]
    assert checkpoint_steps(model_dir) == [5] and checkpoint_value(model_dir, "loss_scale/skipped_updates") > 0
    run_python(command(data, model_dir, **flags))
    assert checkpoint_steps(model_dir) == checkpoint_steps(reference) == [5, 10]
    for name in ("optimizer/state/iteration", "loss_scale/skipped_updates", "loss_scale/step_counter"):
        assert checkpoint_value(model_dir, name) == checkpoint_value(reference, name), name
    (_, got), (_, expected) = model_weights(model_dir), model_weights(reference)
    assert got.keys() == expected.keys() and len(got) > 50
    worst = max(float(np.abs(got[n] - expected[n]).max()) for n in got)
    assert worst <= 1e-6, worst


# Runs the CLI and sends it SIGTERM (a preemption notice) once the optimizer has taken `TERM_AT_STEP` steps.
TERM_AT_STEP = KILL_AT_STEP.replace("KILL_AT_STEP", "TERM_AT_STEP").replace("signal.SIGKILL", "signal.SIGTERM")


def summaries(model_dir):
    """{(split, tag, step): value} of the run's TensorBoard scalars, but the wall-clock throughput."""
    values = {}
    for split in ("train", "validation"):
        for path in glob.glob(os.path.join(model_dir, "logs", split, "events*")):
            for event in tf.compat.v1.train.summary_iterator(path):
                for value in event.summary.value:
                    if "sequences_per_second" in value.tag or value.tag.startswith("keras"):
                        continue
                    key = (split, value.tag, event.step)
                    assert key not in values, f"{key} logged twice in {model_dir}"
                    values[key] = float(tf.make_ndarray(value.tensor)) if value.HasField("tensor") \
                        else value.simple_value
    return values


def checkpoint_steps(model_dir):
    return sorted(int(p.rsplit("-", 1)[1].split(".")[0])
                  for p in glob.glob(os.path.join(model_dir, run_files.CHECKPOINT_DIR, "ckpt-*.index")))


@pytest.mark.large
@pytest.mark.parametrize("strategy_args", [(), pytest.param(("--strategy=mirrored", "--num_cpu_devices=2"),
                                                               marks=pytest.mark.release)],
                         ids=["one_device", "mirrored_2_cpus"])
def test_sigterm_mid_epoch_then_resume_logs_the_epochs_of_an_uninterrupted_run(tmp_path, data, strategy_args):
    """An epoch is `--save_checkpoints_steps` steps: a resumed run ends the interrupted epoch on the same grid."""
    flags = dict(train_steps=30, save_checkpoints_steps=10, keep_checkpoint_max=10, log_steps=1,
                 eval_data=data, eval_steps=2)
    reference, model_dir = tmp_path / "reference", tmp_path / "preempted"
    run_python(command(data, reference, strategy_args, **flags))
    script = tmp_path / "term_at_step.py"
    script.write_text(TERM_AT_STEP)
    result = run_python([str(script), *command(data, model_dir, strategy_args, **flags)[2:]],
                        env={"TERM_AT_STEP": "14"})
    assert "saved the checkpoint of step 15" in result.stderr  # at the step boundary after the signal
    assert checkpoint_steps(model_dir) == [10, 15]
    run_python(command(data, model_dir, strategy_args, **flags))  # the same command resumes
    expected, got = summaries(reference), summaries(model_dir)
    epochs = {k for k in expected if k[1].startswith("epoch_")}
    assert {k[2] for k in epochs} == {0, 1, 2} and {("train", "epoch_loss", 1), ("validation", "epoch_loss", 1),
                                                    ("train", "epoch_disc_auc", 2)} <= epochs
    assert sorted(k for k in got if k[1].startswith("epoch_")) == sorted(epochs)
    assert sorted(got) == sorted(expected)  # batch summaries too, one per step
    differ = {k: (got[k], expected[k]) for k in expected if not np.isclose(got[k], expected[k], rtol=1e-5, atol=1e-6)}
    assert not differ, differ
    assert checkpoint_steps(reference) == [10, 20, 30]
    assert checkpoint_steps(model_dir) == [10, 15, 20, 30]  # the grid, and the step the SIGTERM saved
    assert (model_dir / "discriminator.keras").exists()
