"""Bad input to pre-training and the CLIs: one clear message, nothing that existed changed.

Each case writes its own fixtures, asserts the message names the flag, file or
field, and (where something existed before) that every pre-existing file has
the same checksum afterwards.
"""

import json
import logging
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import time

import pytest

from helpers import REPO, LineReader, checksums, run_python, write_records
from electra_tf.config import get_config
from electra_tf import run_files, sources
from electra_tf.training import distribute
from electra_tf.training.pretraining import resolve_data, train

pytestmark = [pytest.mark.large, pytest.mark.ci]  # slow tier, in CI: together these tests take minutes

TINY = dict(vocab_size=400, embedding_dim=16, hidden_dim=32, num_layers=2, num_heads=2,
            intermediate_dim=64, seq_length=32, max_sequence_length=32, batch_size=8,
            warmup_steps=2, log_steps=5)


def config_for(data, **overrides):
    vocab = os.path.join(os.path.dirname(data), "vocab.txt")
    return get_config("tiny", **{**TINY, "data": data, "vocab_file": vocab, **overrides})


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A finished 4-step run with checkpoints at steps 2 and 4 and discriminator.keras."""
    root = tmp_path_factory.mktemp("trained")
    data = write_records(root / "data", num_files=2, num_examples=40)
    config = config_for(data, train_steps=4, save_checkpoints_steps=2)
    train(config, str(root / "run"), verbose=0)
    return dict(data=data, config=config, run=str(root / "run"))


def copy_run(trained, tmp_path):
    return shutil.copytree(trained["run"], tmp_path / "run")


# --- Config ranges: every numeric flag is checked before anything is written ---------------


@pytest.mark.parametrize("name,value,wanted", [
    ("batch_size", 0, ">= 1"), ("batch_size", -8, ">= 1"), ("train_steps", 0, ">= 1"),
    ("train_steps", -5, ">= 1"), ("learning_rate", -1.0, "> 0"), ("learning_rate", 0.0, "> 0"),
    ("save_checkpoints_steps", 0, ">= 1"), ("gradient_accumulation_steps", 0, ">= 1"),
    ("keep_checkpoint_max", 0, ">= 1"), ("steps_per_execution", 0, ">= 1"), ("eval_steps", 0, ">= 1"),
    ("warmup_steps", -1, ">= 0"), ("dropout", 1.0, r"in \[0, 1\)"), ("adam_beta2", 1.5, r"in \[0, 1\)"),
    ("weight_decay", -0.1, ">= 0"), ("vocab_size", 0, ">= 1"), ("seq_length", 1, ">= 2"),
])
def test_numeric_flag_out_of_range_names_the_flag(name, value, wanted):
    with pytest.raises(ValueError, match=rf"`--{name}` must be {wanted}. Received: `--{name}={value}"):
        get_config("tiny", **{name: value})


# --- The CLI boundary: one line, no traceback, no flag list -----------------------------------


def stderr_lines(result):
    return [line for line in result.stderr.splitlines() if line.strip()]


@pytest.mark.parametrize("args,exit_code,message", [
    (["-m", "electra_tf.pretrain", "--config", "tiny"], 2, "error: --model_dir is required. (see --help)"),
    (["-m", "electra_tf.pretrain", "--config", "tiny", "--model_dir", "{tmp}/run", "--batch_size=0"], 2,
     "error: `--batch_size` must be >= 1. Received: `--batch_size=0`"),
    (["-m", "electra_tf.pipelines.build_pretraining_data", "--vocab_file", "v.txt", "--output_dir", "{tmp}/out"], 2,
     "error: flag --input=None: Flag --input must have a value other than None. (see --help)"),
    (["-m", "electra_tf.convert", "--from", "hf", "--to", "keras"], 2,
     "error: --input and --output_dir are required. (see --help)"),
])
def test_cli_errors_are_one_line_without_traceback_or_flag_list(tmp_path, args, exit_code, message):
    result = run_python([a.format(tmp=tmp_path) for a in args], check=False, timeout=300)
    assert result.returncode == exit_code, result.stderr[-3000:]
    assert stderr_lines(result)[-1] == message
    assert "Traceback" not in result.stderr and "--learning_rate" not in result.stderr
    assert not (tmp_path / "run").exists() and not (tmp_path / "out").exists()


def test_debug_adds_the_traceback(tmp_path):
    result = run_python(["-m", "electra_tf.pretrain", "--config", "tiny", "--model_dir", str(tmp_path / "run"),
                         "--num_heads=3", "--debug"], check=False, timeout=300)
    assert result.returncode == 1 and "Traceback" in result.stderr
    assert stderr_lines(result)[-1] == "error: `hidden_dim=128` must be divisible by `num_heads=3`."


# --- Pre-training data: every file checked, the vocabulary found or refused --------------------


def test_pretrain_cli_refuses_data_without_a_vocabulary(tmp_path):
    data = write_records(tmp_path / "data", num_files=1)
    os.remove(tmp_path / "data" / "vocab.txt")
    result = run_python(["-m", "electra_tf.pretrain", "--config", "tiny", "--model_dir", str(tmp_path / "run"),
                         f"--data={data}"], check=False, timeout=300)
    assert result.returncode == 1, result.stderr[-3000:]
    assert stderr_lines(result)[-1].startswith(f"error: `--data={data}` needs the vocabulary")
    assert "--vocab_file" in stderr_lines(result)[-1]
    assert not (tmp_path / "run").exists()


def test_vocabulary_is_found_beside_the_records_or_in_the_run(tmp_path):
    data = write_records(tmp_path / "data", num_files=1)
    config = get_config("tiny", **{**TINY, "data": data})
    assert resolve_data(config, "unused").vocab_file == str(tmp_path / "data" / "vocab.txt")
    os.makedirs(tmp_path / "run")
    shutil.move(tmp_path / "data" / "vocab.txt", tmp_path / "run" / "vocab.txt")
    assert resolve_data(config, "unused", str(tmp_path / "run")).vocab_file == str(tmp_path / "run" / "vocab.txt")
    with pytest.raises(ValueError, match=r"needs the vocabulary its records were built with: pass --vocab_file"):
        resolve_data(config, "unused", str(tmp_path / "elsewhere"))


def _garbage(path):
    path.write_bytes(b"\x00not a tfrecord file at all" * 10)


@pytest.mark.parametrize("case,error,message", [
    ("bad second file", ValueError, r"records-1.tfrecord is not a readable TFRecord file"),
    ("empty second file", ValueError, r"records-1.tfrecord holds no records"),
    ("folder as --data", IsADirectoryError, r"`--data=.*data` is a folder; give a glob of its record files"),
    ("--eval_data matching nothing", FileNotFoundError, r"No pre-training files match `--eval_data=.*nothing-\*`"),
])
def test_bad_data_is_named_before_anything_is_written(tmp_path, case, error, message):
    data = write_records(tmp_path / "data", num_files=2, num_examples=20)
    config = config_for(data, train_steps=2)
    if case == "bad second file":
        _garbage(tmp_path / "data" / "records-1.tfrecord")
    elif case == "empty second file":
        (tmp_path / "data" / "records-1.tfrecord").write_bytes(b"")
    elif case == "folder as --data":
        config = config.replace(data=str(tmp_path / "data"))
    else:
        config = config.replace(eval_data=str(tmp_path / "nothing-*"))
    with pytest.raises(error, match=message):
        train(config, str(tmp_path / "run"), verbose=0)
    assert not (tmp_path / "run").exists()  # a failed fresh run leaves no config.json behind


# --- An existing run: nothing replaced when the new command does not fit it -------------------


@pytest.mark.parametrize("case,message", [
    ("another --config", r"holds a run of another model .*config.json.*--hidden_dim=64 vs 32"),
    ("another vocabulary", r"`--vocab_file=.*other.txt` differs from the vocabulary of the run"),
])
def test_rerun_into_an_existing_run_that_does_not_fit_changes_nothing(trained, tmp_path, case, message):
    run = copy_run(trained, tmp_path)
    before = checksums(run)
    config = trained["config"].replace(train_steps=6)
    if case == "another --config":
        config = config.replace(hidden_dim=64, intermediate_dim=128)
    else:
        other = tmp_path / "other.txt"
        other.write_text(pathlib.Path(config.vocab_file).read_text().replace("piece7\n", "other7\n"))
        config = config.replace(vocab_file=str(other))
    with pytest.raises(ValueError, match=message):
        train(config, str(run), verbose=0)
    assert checksums(run) == before


# --- Damaged checkpoints: named, and the previous good one is used ------------------------------


def _damage(prefix, how):
    data, index = prefix + ".data-00000-of-00001", prefix + ".index"
    if how == "truncated data":
        os.truncate(data, os.path.getsize(data) // 2)
    elif how == "truncated index":
        os.truncate(index, os.path.getsize(index) // 2)
    else:
        os.remove(data)


@pytest.mark.parametrize("how", ["truncated data", "truncated index", "missing data file"])
def test_damaged_latest_checkpoint_falls_back_to_the_previous_one(trained, tmp_path, caplog, how):
    run = copy_run(trained, tmp_path)
    latest = run_files.latest_checkpoint(str(run))
    assert latest.endswith("ckpt-4")
    _damage(latest, how)
    with caplog.at_level(logging.WARNING):
        pretrainer, _ = sources.restore_pretrainer(str(run))
    assert any("ckpt-4 is unreadable" in r.getMessage() for r in caplog.records)
    assert any("Restored" in r.getMessage() and r.getMessage().split()[1].endswith("ckpt-2")
               for r in caplog.records)
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        model = train(trained["config"].replace(train_steps=6), str(run), verbose=0)  # resumes from ckpt-2
    assert any("ckpt-4 is unreadable" in r.getMessage() for r in caplog.records)
    assert int(model.optimizer.iterations.numpy()) == 6
    assert run_files.latest_checkpoint(str(run)).endswith("ckpt-6")


def test_every_checkpoint_damaged_is_an_error_naming_them(trained, tmp_path):
    run = copy_run(trained, tmp_path)
    for prefix in run_files.kept_checkpoints(str(run)):
        _damage(prefix, "truncated index")
    with pytest.raises(ValueError, match=r"No readable checkpoint in .*ckpt-4 \(.*ckpt-2 \("):
        sources.restore_pretrainer(str(run))


def test_corrupt_discriminator_keras_falls_back_to_the_checkpoint(trained, tmp_path, caplog):
    run = copy_run(trained, tmp_path)
    path = run / run_files.DISCRIMINATOR_FILE
    path.write_bytes(path.read_bytes()[:1000])
    with caplog.at_level(logging.WARNING):
        encoder, _ = sources.load_discriminator(str(run))
    assert encoder.num_layers == 2
    assert any("discriminator.keras cannot be read" in r.getMessage() for r in caplog.records)
    shutil.rmtree(run / run_files.CHECKPOINT_DIR)
    with pytest.raises(ValueError, match=r"discriminator.keras cannot be read .* no checkpoint to fall back to"):
        sources.load_discriminator(str(run))


def test_truncated_run_config_names_the_file(trained, tmp_path):
    run = copy_run(trained, tmp_path)
    config = run / run_files.CONFIG_FILE
    config.write_text(config.read_text()[:50])
    with pytest.raises(ValueError, match=r"run/config.json is not valid JSON"):
        run_files.read_config(str(run))


def test_tpu_strategy_without_tpu_names_the_flag():
    with pytest.raises(ValueError, match=r"`--strategy=tpu` needs `--tpu`"):
        distribute.create_strategy("tpu")


# --- Multi-worker start-up: a worker that never comes up is named; SIGTERM ends the wait -------


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _lonely_worker(tmp_path, timeout):
    """Worker 0 of a two-worker cluster on 127.0.0.1 whose worker 1 never starts."""
    workers = [f"127.0.0.1:{_free_port()}", f"127.0.0.1:{_free_port()}"]
    tf_config = {"cluster": {"worker": workers}, "task": {"type": "worker", "index": 0}}
    env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="2", TF_CONFIG=json.dumps(tf_config))
    proc = subprocess.Popen(
        [sys.executable, "-m", "electra_tf.pretrain", "--config", "tiny", "--model_dir", str(tmp_path / "run"),
         "--strategy", "multi_worker", f"--worker_startup_timeout={timeout}"],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    return proc, workers[1]


def test_multi_worker_start_up_times_out_naming_the_absent_worker(tmp_path):
    proc, absent = _lonely_worker(tmp_path, timeout=5)
    stderr = LineReader(proc.stderr)
    try:
        stderr.wait_for("Waiting up to 5 s")
        waiting = time.monotonic()
        proc.wait(timeout=600)  # a hang guard only
    finally:
        proc.kill()
    stderr = stderr.text()
    assert time.monotonic() - waiting < distribute.STARTUP_TIMEOUT  # its --worker_startup_timeout, not the default
    assert proc.returncode == 1, stderr[-3000:]
    assert stderr.splitlines()[-1] == (
        f"error: multi-worker start-up: worker:1 ({absent}) never came up within 5 s (TF_CONFIG; this is "
        "worker:0). Start every worker, or fix the cluster addresses.")
    assert not (tmp_path / "run").exists()


def test_sigterm_ends_a_multi_worker_run_waiting_for_its_peers(tmp_path):
    proc, absent = _lonely_worker(tmp_path, timeout=600)
    stderr = LineReader(proc.stderr)
    try:
        stderr.wait_for("Waiting up to")  # it is waiting: its SIGTERM handler is installed before this line
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=600)  # a hang guard only
    finally:
        proc.kill()
    stderr = stderr.text()
    assert proc.returncode == 128 + signal.SIGTERM, stderr[-3000:]
    assert stderr.splitlines()[-1] == f"error: SIGTERM while waiting for worker:1 ({absent}); no training started."
