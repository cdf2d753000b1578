"""Fine-tuning's long loops: a SQuAD split without questions is refused before training, naming the file; the
dev pass of an epoch logs its start, and a SIGTERM during it stops the run inside the pass (the epoch is never
scored), the trial's checkpoint saved (exit 0, as for a step), and the re-run evaluates that epoch and finishes."""

import json
import os
import signal
import subprocess
import sys

import pytest

from helpers import REPO, LineReader, digests, exit_status, make_run_dir, run_python, write_vocab


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
    process = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    output = LineReader(process.stdout)
    started = "predicting 40000 rows in 5000 batches of 8"
    try:
        output.wait_for(started, guard=900)  # the dev pass started (its state; 900 s only a hang guard)
        process.send_signal(signal.SIGTERM)
        code = exit_status(process, "SIGTERM during the dev pass", guard=1800)
    finally:
        process.kill()
    output = output.text()
    assert code == 0, output[-3000:]
    # Stopped inside the pass: the preemption is said after the pass started, and the epoch
    # (printed once its dev pass ends) is never scored.
    stop = "preempted (SIGTERM): saved the checkpoint of step 4"
    assert stop in output, output[-3000:]
    assert output.index(started) < output.index(stop), output[-3000:]
    assert "predicted 40000 / 40000" not in output and "epoch 1/1" not in output, output[-3000:]
    assert not (out / "results.json").exists()
    assert (out / "trials" / "trial-0" / "checkpoints" / "checkpoint").exists()

    result = run_python(command[1:], timeout=1800)
    assert "trial 0: resumed at step 4 (epoch 1)" in result.stdout, result.stdout[-3000:]
    assert (out / "results.json").exists() and not (out / "trials").exists()
    assert json.loads((out / "results.json").read_text())["trials"][0]["kept_epoch"] == 1
