"""One writer per run directory: a second `pretrain` on one --model_dir is refused naming the holder; a killed
holder's lock is stale and the next run proceeds."""

import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from helpers import REPO, run_python
from electra_tf import run_files
from electra_tf.training import run_lock


def test_a_second_holder_is_refused_naming_the_first_and_a_dead_holders_lock_is_taken_over(tmp_path):
    folder = str(tmp_path / "run")
    with run_lock.hold(folder):
        lock = json.loads((tmp_path / "run" / run_files.LOCK_FILE).read_text())
        assert lock["pid"] == os.getpid() and lock["host"] == socket.gethostname()
        # another live process holds it: pretend the lock is this process's parent's
        (tmp_path / "run" / run_files.LOCK_FILE).write_text(json.dumps(dict(lock, pid=os.getppid())))
        with pytest.raises(run_lock.RunLockedError, match=f"in use by another run: pid {os.getppid()} on "):
            run_lock.acquire(folder)
        # a holder that is gone (no such process on this host) left a stale lock: taken over
        dead = subprocess.Popen([sys.executable, "-c", "pass"])
        dead.wait()
        (tmp_path / "run" / run_files.LOCK_FILE).write_text(json.dumps(dict(lock, pid=dead.pid)))
        assert run_lock.acquire(folder).endswith(run_files.LOCK_FILE)
        assert json.loads((tmp_path / "run" / run_files.LOCK_FILE).read_text())["pid"] == os.getpid()
    assert not (tmp_path / "run").exists()  # released, and the empty folder it made removed


def pretrain_command(data, model_dir, steps):
    return [sys.executable, "-m", "electra_tf.pretrain", "--config", "tiny", "--model_dir", str(model_dir),
            "--data", data, "--seq_length", "32", "--max_sequence_length", "32", "--batch_size", "8",
            "--embedding_dim", "16", "--hidden_dim", "32", "--num_layers", "1", "--num_heads", "2",
            "--intermediate_dim", "64", "--train_steps", str(steps), "--save_checkpoints_steps", "5",
            "--warmup_steps", "1", "--verbose", "0"]


@pytest.mark.large
def test_two_pretrain_processes_on_one_model_dir_one_trains_and_after_sigkill_the_next_proceeds(
        tmp_path, write_records):
    data = write_records(tmp_path / "data", num_files=1, num_examples=64, seq_length=32)
    model_dir = tmp_path / "run"
    env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="2")
    both = [subprocess.Popen(pretrain_command(data, model_dir, 60), cwd=REPO, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True) for _ in range(2)]
    results = [(p.wait(timeout=600), p.communicate()[1]) for p in both]
    codes = sorted(code for code, _ in results)
    assert codes == [0, 1], results
    loser = next(err for code, err in results if code == 1)
    winner_pid = next(p.pid for p, (code, _) in zip(both, results) if code == 0)
    errors = [line for line in loser.splitlines() if line.startswith("error: ")]
    assert errors == [errors[0]] and f"is in use by another run: pid {winner_pid} on {socket.gethostname()}" in errors[0]
    assert not (model_dir / run_files.LOCK_FILE).exists()  # released at the end

    # A holder killed with SIGKILL leaves its lock; the next run sees the process is gone and proceeds.
    holder = subprocess.Popen(pretrain_command(data, model_dir, 100_000), cwd=REPO, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 600  # a hang guard only: the test waits for a state
    while not (model_dir / run_files.LOCK_FILE).exists() or json.loads(
            (model_dir / run_files.LOCK_FILE).read_text() or "{}").get("pid") != holder.pid:
        assert time.time() < deadline and holder.poll() is None
        time.sleep(0.2)
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    assert json.loads((model_dir / run_files.LOCK_FILE).read_text())["pid"] == holder.pid  # stale
    result = run_python(pretrain_command(data, model_dir, 65)[1:])
    assert result.returncode == 0 and "Taking over the stale lock" in result.stderr
    assert not (model_dir / run_files.LOCK_FILE).exists()
