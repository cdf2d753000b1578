"""The pretrain entry point: resume after SIGKILL, clear errors on bad input, precision and XLA."""

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

from helpers import REPO, run_python, tensorboard_values
from electra_tf.config import get_config
from electra_tf.training.pretraining import train
from electra_tf import run_files, sources

pytestmark = [pytest.mark.large, pytest.mark.ci]  # slow tier, in CI: together these tests take minutes

TINY = dict(vocab_size=400, embedding_dim=16, hidden_dim=32, num_layers=2, num_heads=2,
            intermediate_dim=64, seq_length=32, max_sequence_length=32, batch_size=8,
            warmup_steps=2, log_steps=5)


def cli_args(data, model_dir, **overrides):
    values = dict(TINY, data=data, **overrides)
    return ["-m", "electra_tf.pretrain", "--config", "tiny", "--model_dir", str(model_dir),
            "--verbose", "2", *[f"--{k}={v}" for k, v in values.items()]]


def checkpoint_value(prefix, name):
    return tf.train.load_checkpoint(prefix).get_tensor(name)


def optimizer_iterations(prefix):
    return int(checkpoint_value(prefix, "optimizer/state/iteration/.ATTRIBUTES/VARIABLE_VALUE"))


@pytest.mark.large
def test_resume_after_sigkill_continues_from_saved_step_and_optimizer_state(tmp_path, write_records):
    data = write_records(tmp_path / "data", num_files=2, num_examples=64)
    model_dir = tmp_path / "run"
    env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="2")
    proc = subprocess.Popen(
        [sys.executable, *cli_args(data, model_dir, train_steps=100000, save_checkpoints_steps=10)],
        cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    deadline = time.time() + 600  # a hang guard only: the test waits for a state
    try:
        # Steps are fast: between two polls the run may pass several checkpoints, so wait for
        # any checkpoint at step >= 20 (the 2nd or later), not for ckpt-20 itself.
        while (latest := run_files.latest_checkpoint(str(model_dir))) is None or int(
                latest.rsplit("-", 1)[1]) < 20:
            assert proc.poll() is None and time.time() < deadline, "training died before its 2nd checkpoint"
            time.sleep(0.2)
    finally:  # never leave the 100,000-step run behind, even when the wait fails
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    killed_at = run_files.latest_checkpoint(str(model_dir))
    saved_step = optimizer_iterations(killed_at)
    assert saved_step >= 20
    slot_names = [n for n, _ in tf.train.list_variables(killed_at) if n.startswith("optimizer/slots/")]
    assert len(slot_names) > 100  # Adam moments of every variable

    # Same command, with a smaller total so it ends soon: it must resume, not restart.
    result = run_python(cli_args(data, model_dir, train_steps=saved_step + 7, save_checkpoints_steps=10))
    assert f"Resumed from {killed_at}" in result.stderr
    final = run_files.latest_checkpoint(str(model_dir))
    assert optimizer_iterations(final) == saved_step + 7
    assert (model_dir / "discriminator.keras").exists()

    # The optimizer state was restored: rebuilding from the killed checkpoint in
    # process (train_steps reached, so no step runs) reproduces the saved moments.
    config = run_files.read_config(str(model_dir)).replace(train_steps=saved_step)
    resume_dir = tmp_path / "restored"
    (resume_dir / "checkpoints").mkdir(parents=True)
    for f in tf.io.gfile.glob(killed_at + "*"):
        tf.io.gfile.copy(f, str(resume_dir / "checkpoints" / os.path.basename(f)))
    with open(resume_dir / "checkpoints" / "checkpoint", "w") as f:
        f.write(f'model_checkpoint_path: "{os.path.basename(killed_at)}"\n')
    model = train(config, str(resume_dir), verbose=0)
    restored = [v.numpy() for v in model.optimizer.variables]
    reader = tf.train.load_checkpoint(killed_at)
    for name in slot_names:
        saved = reader.get_tensor(name)
        assert any(v.shape == saved.shape and np.array_equal(v, saved) for v in restored), name
    assert any(np.abs(reader.get_tensor(n)).sum() > 0 for n in slot_names)


def test_no_files_matching_data_glob_is_a_clear_error(tmp_path):
    config = get_config("tiny", **TINY, data=str(tmp_path / "nothing-*.tfrecord"))
    with pytest.raises(FileNotFoundError, match="nothing-"):
        train(config, str(tmp_path / "run"), verbose=0)


@pytest.mark.parametrize(
    "features,seq_length,message",
    [
        (("input_ids", "input_mask", "tokens"), 32, r"lack feature\(s\) \['segment_ids'\]"),
        (("input_ids", "input_mask", "segment_ids"), 24, "has length 24, but `seq_length=32`"),
    ],
)
def test_records_with_wrong_features_name_the_file(tmp_path, write_records, features, seq_length, message):
    data = write_records(tmp_path / "data", num_files=1, seq_length=seq_length, features=features)
    config = get_config("tiny", **TINY, data=data)
    with pytest.raises(ValueError, match=message):
        train(config, str(tmp_path / "run"), verbose=0)


@pytest.mark.large
def test_bad_data_mid_run_names_the_culprit_and_keeps_checkpoints(tmp_path, write_records):
    good = write_records(tmp_path / "good", num_files=1, num_examples=40)
    model_dir = str(tmp_path / "run")
    config = get_config("tiny", **TINY, data=good, train_steps=5, save_checkpoints_steps=5)
    train(config, model_dir, verbose=0)
    before = run_files.latest_checkpoint(model_dir)

    # A truncated record file: the first record reads, a later one does not.
    bad = write_records(tmp_path / "bad", num_files=1, num_examples=200)
    path = tf.io.gfile.glob(bad)[0]
    size = os.path.getsize(path)
    with open(path, "r+b") as f:
        f.truncate(size - 500)
    with pytest.raises(ValueError, match="Corrupt pre-training data: .*records-0.tfrecord"):
        train(config.replace(data=bad, train_steps=500), model_dir, verbose=0)

    # Token ids beyond the vocabulary.
    big = write_records(tmp_path / "big", num_files=1, num_examples=40, vocab_size=5000)
    with pytest.raises(ValueError, match="vocab_size=400"):
        train(config.replace(data=big, train_steps=500), model_dir, verbose=0)

    assert run_files.latest_checkpoint(model_dir) == before
    pretrainer, _ = sources.restore_pretrainer(model_dir)  # still loads
    assert pretrainer.discriminator.num_layers == 2


def test_unknown_preset_and_config_key_are_clear_errors(tmp_path):
    result = run_python(["-m", "electra_tf.pretrain", "--config", "smal", "--model_dir", str(tmp_path)],
                        check=False)
    assert result.returncode != 0 and "Unknown preset 'smal'" in result.stderr
    result = run_python(["-m", "electra_tf.pretrain", "--config", "tiny", "--model_dir", str(tmp_path),
                         "--hiden_dim=3"], check=False)
    assert result.returncode != 0 and "hiden_dim" in result.stderr
    with pytest.raises(ValueError, match=r"Unknown config key\(s\) \['hiden_dim'\]"):
        get_config("tiny", hiden_dim=3)


@pytest.mark.parametrize("options", [
    dict(jit_compile=True),
    dict(precision="mixed_bfloat16"),
    dict(gradient_accumulation_steps=2, optimizer="lamb"),
])
def test_xla_bf16_accumulation_and_lamb_train(tmp_path, write_records, options):
    import keras

    data = write_records(tmp_path / "data", num_files=1, num_examples=40)
    held_out = write_records(tmp_path / "eval", num_files=1, num_examples=16, seed=1)
    config = get_config("tiny", **TINY, data=data, train_steps=4, save_checkpoints_steps=2,
                        eval_data=held_out, eval_steps=2, **options)
    try:
        model = train(config, str(tmp_path / "run"), verbose=0)
    finally:
        keras.mixed_precision.set_global_policy("float32")
    assert int(model.optimizer.iterations.numpy()) == 4  # updates
    assert int(model.optimizer._iterations.numpy()) == 4 * config.gradient_accumulation_steps
    if "precision" in options:
        assert model.discriminator.transformer_layers[0].compute_dtype == "bfloat16"
        assert model.embeddings.token_embedding.embeddings.dtype == "float32"
    assert (tmp_path / "run" / "checkpoints" / "ckpt-4.index").exists()
    assert list((tmp_path / "run" / "logs" / "validation").glob("events*"))  # evaluated per checkpoint


def one_error_line(result):
    lines = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert result.returncode == 1 and len(lines) == 1, result.stderr[-3000:]
    return lines[0]


def test_pretrain_without_data_is_refused_unless_tiny(tmp_path):
    """`--config small` without `--data` trained 1M steps on the demo corpus; now one line naming the flag."""
    result = run_python(["-m", "electra_tf.pretrain", "--config", "small", "--model_dir", str(tmp_path / "run")],
                        check=False)
    assert "`--data` is required" in one_error_line(result)
    assert not (tmp_path / "run").exists()
    assert get_config("tiny").data == "demo" and get_config("small").data == ""


def test_a_vocab_file_contradicting_the_demo_data_is_refused_not_replaced(tmp_path, demo_data):
    from helpers import write_vocab

    other = write_vocab(tmp_path / "other_vocab.txt")
    result = run_python(["-m", "electra_tf.pretrain", "--config", "tiny", "--model_dir", str(tmp_path / "run"),
                         "--demo_dir", demo_data["demo_dir"], "--vocab_file", other],
                        check=False)
    line = one_error_line(result)
    assert f"`--vocab_file={other}` is not the vocabulary of `--data=demo`" in line
    assert not (tmp_path / "run").exists()


def _batch_losses(run):
    return {name: tensorboard_values(run / "logs" / "train", f"batch_{name}")
            for name in ("loss", "masked_lm_loss", "disc_loss")}


def test_fused_kernels_train_as_keras_ops_do_through_the_command(tmp_path):
    """The same run with and without `--fused_elementwise`: the same first loss (the same weights, masks and
    dropout bits; only float rounding differs), and the same course after updates."""
    losses = {}
    for name, flag in (("fused", []), ("keras_ops", ["--nofused_elementwise"])):
        run = tmp_path / name
        run_python(["-m", "electra_tf.pretrain", "--config", "tiny", "--model_dir", str(run), "--train_steps=3",
                    "--log_steps=1", "--save_checkpoints_steps=3", "--verbose=0", *flag])
        losses[name] = _batch_losses(run)
        assert json.loads((run / run_files.CONFIG_FILE).read_text())["fused_elementwise"] is (name == "fused")
    for metric, by_step in losses["fused"].items():
        reference = losses["keras_ops"][metric]
        assert sorted(by_step) == sorted(reference) == [1, 2, 3], metric
        np.testing.assert_allclose(by_step[1], reference[1], rtol=1e-5, err_msg=metric)
        np.testing.assert_allclose([by_step[2], by_step[3]], [reference[2], reference[3]], rtol=1e-3, err_msg=metric)
