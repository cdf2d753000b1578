"""Fine-tuning's long loops: a SQuAD split without questions is refused before training, naming the file; the
dev pass of an epoch logs its progress and a SIGTERM during it stops the run within seconds, the trial's
checkpoint saved (exit 0, as for a step), and the re-run evaluates that epoch and finishes."""

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from helpers import REPO, digests, make_run_dir, run_python, write_vocab


def test_a_squad_split_without_questions_is_refused_before_training(tmp_path):
    data = tmp_path / "squad"
    data.mkdir()
    (data / "train.json").write_text(json.dumps({"data": [{"title": "t", "paragraphs": [{
        "context": "Paris is in France.",
        "qas": [{"id": "q1", "question": "Where is Paris?", "answers": [{"text": "France", "answer_start": 12}]}]}]}]}))
    (data / "dev.json").write_text(json.dumps({"version": "1.1", "data": []}))
    before = digests(tmp_path)
    result = run_python(["-m", "electra_tf.finetune", "--task", "squad", "--task_kind", "span_qa", "--data_dir",
                         str(data), "--init", str(tmp_path / "no_model_needed"), "--output_dir", str(tmp_path / "out"),
                         "--seq_length", "32", "--max_query_length", "8"], check=False)
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert result.returncode == 1, result.stderr[-2000:]
    assert errors == [f"error: {data / 'dev.json'}: no questions (`data` holds no article with a paragraph with a "
                      "question); nothing to train on or score."]
    assert digests(tmp_path) == before
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())


def wait_for(process, text, timeout=900):
    """Merged output of `process` until `text` shows (its state, not a time); fails if the process ends first."""
    seen, found = [], threading.Event()

    def read():
        while True:
            chunk = os.read(process.stdout.fileno(), 4096)
            if not chunk:
                break
            seen.append(chunk.decode(errors="replace"))
            if text in "".join(seen):
                found.set()
        found.set()

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    assert found.wait(timeout) and text in "".join(seen), "".join(seen)[-3000:]
    return seen, thread


@pytest.mark.large
def test_sigterm_during_the_dev_pass_stops_the_run_and_the_rerun_finishes(tmp_path):
    vocab = write_vocab(tmp_path / "vocab.txt", 400)
    run = make_run_dir(tmp_path / "run", vocab, max_sequence_length=128, seq_length=64)
    task = tmp_path / "task"
    task.mkdir()
    (task / "train.tsv").write_text("sentence\tlabel\n" + "".join(f"piece{i} piece{i + 1}\t{i % 2}\n"
                                                                   for i in range(8)))
    (task / "dev.tsv").write_text("sentence\tlabel\n" + "".join(f"piece{i % 200} " * 20 + f"\t{i % 2}\n"
                                                                 for i in range(40000)))
    out = tmp_path / "out"
    command = [sys.executable, "-m", "electra_tf.finetune", "--task", "toy", "--data_dir", str(task), "--init", run,
               "--output_dir", str(out), "--epochs", "1", "--batch_size", "2", "--seq_length", "32", "--verbose", "0"]
    env = {**os.environ, "PYTHONPATH": str(REPO), "TF_CPP_MIN_LOG_LEVEL": "2"}
    process = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    seen, reader = wait_for(process, "predicting 40000 rows in 5000 batches of 8")  # the dev pass started
    sent = time.monotonic()
    process.send_signal(signal.SIGTERM)
    code = process.wait(timeout=300)
    stopped = time.monotonic() - sent
    reader.join(timeout=30)
    output = "".join(seen)
    assert code == 0, output[-3000:]
    assert stopped < 10, output[-3000:]
    assert "preempted (SIGTERM): saved the checkpoint of step 4" in output
    assert "predicted 40000 / 40000" not in output and "epoch 1/1" not in output
    assert not (out / "results.json").exists()
    assert (out / "trials" / "trial-0" / "checkpoints" / "checkpoint").exists()

    result = run_python(command[1:], timeout=1800)
    assert "trial 0: resumed at step 4 (epoch 1)" in result.stdout, result.stdout[-3000:]
    assert (out / "results.json").exists() and not (out / "trials").exists()
    assert json.loads((out / "results.json").read_text())["trials"][0]["kept_epoch"] == 1
