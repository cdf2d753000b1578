"""Writes the file system refuses: a full disk, a size limit (`ulimit -f`), a read-only or impossible output
folder, stdout on a full device. Each is one `error:` line naming the flag (or stdout), exit 1, and leaves
nothing half-written; a killed encoder export leaves nothing that blocks the next one."""

import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import textwrap

import pytest

from helpers import REPO, checksums, error_line, make_run_dir, run_python, write_vocab
from electra_tf.tasks import get as task_kind  # the registry: a kind by name

pytestmark = pytest.mark.large  # slow tier: together these tests take minutes


@pytest.fixture(scope="module")
def finetuned(tmp_path_factory):
    """A pre-training run and a classifier fine-tuned from it, as `finetune` leaves its folder."""
    from electra_tf.sources import load_discriminator
    ElectraClassifier = task_kind("classification").model_class

    root = tmp_path_factory.mktemp("write_failures")
    vocab = write_vocab(root / "vocab.txt", 400)
    run = make_run_dir(root / "run", vocab, embedding_dim=16, hidden_dim=32, num_layers=1, intermediate_dim=64)
    encoder, _ = load_discriminator(run)
    classifier = ElectraClassifier(encoder, num_labels=2)
    classifier.build()
    folder = root / "finetuned"
    folder.mkdir()
    classifier.save(folder / "classifier.keras")
    shutil.copyfile(vocab, folder / "vocab.txt")
    (folder / "finetune_config.json").write_text(json.dumps(
        {"task": "toy", "label_names": ["a", "b"], "regression": False, "pair": False, "seq_length": 16}))
    (root / "input.txt").write_text("piece1 piece2\n")
    return dict(run=run, finetuned=str(folder), root=root, input=str(root / "input.txt"))


def size_limited(limit):
    """`ulimit -f` for the child: a write past `limit` bytes fails with EFBIG (Python ignores SIGXFSZ)."""
    return lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


def test_a_size_limit_during_a_serving_export_is_one_line_naming_output_dir(finetuned, tmp_path):
    output = tmp_path / "serving"
    result = run_python(["-m", "electra_tf.export", "--format", "serving", "--init", finetuned["finetuned"],
                         "--output_dir", str(output), "--model_name", "toy"], check=False,
                        preexec_fn=size_limited(50_000))
    line = error_line(result)
    assert line.startswith(f"error: Cannot write `--output_dir={output}") and "File too large" in line, line
    assert not output.exists() or not [p for p in output.rglob("*") if p.is_file()]  # nothing half-written


def test_tensorflow_s_no_space_left_is_a_disk_error_naming_the_flag_not_out_of_memory(tmp_path):
    """TensorFlow reports ENOSPC as a `ResourceExhaustedError` (its SaveV2 on a full disk)."""
    import tensorflow as tf
    from absl import flags

    from electra_tf import atomic
    from electra_tf.cli import errors

    full = tf.errors.ResourceExhaustedError(None, None, f"{tmp_path}/x/variables/variables_temp/part-0.data; No "
                                            "space left on device [Op:SaveV2]")
    with pytest.raises(atomic.WriteError, match=r"^Cannot write `--output_dir=.*out`: No space left on device;"):
        with atomic.staged_folder(str(tmp_path / "out"), "output_dir"):
            raise full
    assert os.listdir(tmp_path) == []  # the temporary folder went with the error
    line = errors.write_failure(full, flags.FlagValues())
    assert line == f"Cannot write the output: No space left on device ({tmp_path}/x/variables/variables_temp/part-0.data)."
    assert "out of memory" not in line


@pytest.fixture
def read_only(tmp_path):
    """A read-only file system (a tmpfs mounted read-only); skipped where mounting is not allowed."""
    folder = tmp_path / "read_only"
    folder.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(folder)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a read-only file system here")
    yield folder
    subprocess.run(["umount", str(folder)], check=True)


def unwritable_cases():
    return pytest.mark.parametrize("where", ["under_a_file", "read_only"])


@unwritable_cases()
@pytest.mark.parametrize("command", ["export", "finetune"])
def test_an_output_dir_that_cannot_be_written_is_named(finetuned, tmp_path, request, where, command):
    if where == "under_a_file":
        (tmp_path / "a_file").write_text("kept\n")
        output, expected = tmp_path / "a_file" / "out", f"({tmp_path / 'a_file'} is a file, not a folder)"
    else:
        output, expected = request.getfixturevalue("read_only") / "out", "Read-only file system"
    before = checksums(finetuned["root"])
    if command == "export":
        args = ["-m", "electra_tf.export", "--format", "tflite", "--init", finetuned["finetuned"], "--output_dir",
                str(output)]
    else:
        task = tmp_path / "task"
        task.mkdir()
        rows = "".join(f"piece{i} piece{i + 1}\t{i % 2}\n" for i in range(8))
        for split in ("train", "dev"):
            (task / f"{split}.tsv").write_text("sentence\tlabel\n" + rows)
        args = ["-m", "electra_tf.finetune", "--task", "toy", "--data_dir", str(task), "--init", finetuned["run"],
                "--output_dir", str(output), "--epochs", "1"]
    line = error_line(run_python(args, check=False))
    assert line.startswith(f"error: Cannot write `--output_dir={output}") and expected in line, line
    assert checksums(finetuned["root"]) == before


def test_stdout_on_a_full_device_is_one_line_saying_so(finetuned):
    with open("/dev/full", "w") as full:
        result = subprocess.run([sys.executable, "-m", "electra_tf.predict", "--init", finetuned["finetuned"],
                                 "--input", finetuned["input"]], cwd=REPO, stdout=full, stderr=subprocess.PIPE,
                                text=True, env={**os.environ, "PYTHONPATH": str(REPO), "TF_CPP_MIN_LOG_LEVEL": "2"},
                                timeout=600)
    line = error_line(result)
    assert line.startswith("error: Cannot write stdout: No space left on device"), line


# Runs the export command and SIGKILLs it once the SavedModel's files are written, before the export ends.
KILL_AFTER_SAVE = textwrap.dedent("""
    import os, signal, sys
    import tensorflow as tf
    original = tf.saved_model.save
    def save(obj, export_dir, *args, **kwargs):
        original(obj, export_dir, *args, **kwargs)
        os.makedirs(os.path.join(export_dir, "variables", "variables_temp"), exist_ok=True)  # as a SaveV2 cut short
        os.kill(os.getpid(), signal.SIGKILL)
    tf.saved_model.save = save
    from electra_tf.export import run
    sys.argv = ["electra-export", *sys.argv[1:]]
    run()
""")


@pytest.mark.large  # two exports in fresh processes: ~1 min on 2 shared cores
def test_a_killed_encoder_export_leaves_nothing_that_blocks_the_rerun(finetuned, tmp_path):
    output = tmp_path / "encoder"
    args = ["--format", "encoder", "--init", finetuned["run"], "--output_dir", str(output)]
    script = tmp_path / "kill_after_save.py"
    script.write_text(KILL_AFTER_SAVE)
    killed = subprocess.run([sys.executable, str(script), *args], cwd=REPO, capture_output=True, timeout=600,
                            env={**os.environ, "PYTHONPATH": str(REPO), "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    assert not output.exists()  # nothing there looks exported (the temporary folder lies beside it)
    result = run_python(["-m", "electra_tf.export", *args])  # the same command: not refused as "not empty"
    assert result.stdout.strip().splitlines()[-1] == str(output)
    assert (output / "saved_model.pb").exists() and not (output / "variables" / "variables_temp").exists()
    assert sorted(os.listdir(tmp_path)) == ["encoder", "kill_after_save.py"]  # the killed one's claim taken over


def test_an_emptied_trials_settings_file_is_named(finetuned, tmp_path):
    from electra_tf import run_files

    output = tmp_path / "finetuned"
    path = output / run_files.TRIALS_DIR / run_files.RUN_SETTINGS_FILE
    path.parent.mkdir(parents=True)
    path.write_text("")  # an unfinished run's settings, emptied
    task = tmp_path / "task"
    task.mkdir()
    for split in ("train", "dev"):
        (task / f"{split}.tsv").write_text("sentence\tlabel\npiece1 piece2\t0\npiece3 piece4\t1\n")
    before = checksums(output)
    line = error_line(run_python(["-m", "electra_tf.finetune", "--task", "toy", "--data_dir", str(task), "--init",
                                  finetuned["run"], "--output_dir", str(output), "--epochs", "1"], check=False))
    assert line == f"error: {path} is not valid JSON (Expecting value: line 1 column 1 (char 0)): truncated or damaged."
    assert checksums(output) == before


@pytest.mark.parametrize("shape", [(0, 4), (2, 0)], ids=["no_rows", "no_ids"])
def test_a_litert_ids_request_with_no_rows_or_no_ids_is_a_clear_error(shape):
    import numpy as np

    from electra_tf.exporting.tflite_runtime import check_ids

    ids = np.zeros(shape, np.int32)
    bounds = {"seq_length": 16, "token_ids": 400, "segment_ids": 2, "padding_mask": 2}
    with pytest.raises(ValueError, match=r"`token_ids` must hold at least one row of at least one id"):
        check_ids({"token_ids": ids, "segment_ids": ids, "padding_mask": ids}, bounds)
