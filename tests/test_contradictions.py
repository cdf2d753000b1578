"""Contradictions on the command line or between files are refused in one `error:` line naming both sides.

Nothing picks one side silently: an old spelling of a flag and its new name with other values, a
`--vocab_size` against the vocabulary, a `finetune_config.json` edited after its run finished.
Each case runs the command (a subprocess), checks the exit status, the one line, and that every
file that existed is unchanged and nothing was added.
"""

import json
import os
import pathlib
import shutil

import pytest

from helpers import make_run_dir, run_python, write_records, write_vocab


def tree(folder):
    """Every path under `folder` (folders too) with the sha256 of each file: what a refused command leaves alone."""
    import hashlib

    folder = pathlib.Path(folder)
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
            for p in sorted(folder.rglob("*"))}


def refused(args, folder, exit_code=1):
    """Runs `python args`; returns its one `error:` line. `folder` is unchanged and gained nothing."""
    before = tree(folder)
    result = run_python(args, check=False)
    lines = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert result.returncode == exit_code and len(lines) == 1, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    assert tree(folder) == before
    return lines[0]


# --- A deprecated spelling and its new name, with other values ----------------------------------


def test_max_seq_length_and_seq_length_with_other_values_are_refused_naming_both(tmp_path):
    (tmp_path / "notes.txt").write_text("kept\n")
    line = refused(["-m", "electra_tf.finetune", "--task", "toy", "--data_dir", str(tmp_path), "--init",
                    str(tmp_path), "--output_dir", str(tmp_path / "out"), "--max_seq_length", "64",
                    "--seq_length", "96"], tmp_path, exit_code=2)
    assert line == ("error: `--max_seq_length=64` and `--seq_length=96` contradict each other: --max_seq_length "
                    "is the deprecated spelling of --seq_length. Give --seq_length once.")


def test_export_output_and_output_dir_with_other_values_are_refused_naming_both(tmp_path):
    (tmp_path / "notes.txt").write_text("kept\n")
    line = refused(["-m", "electra_tf.export", "--format", "encoder", "--init", str(tmp_path), "--output",
                    str(tmp_path / "A"), "--output_dir", str(tmp_path / "B")], tmp_path, exit_code=2)
    assert line == (f"error: `--output={tmp_path / 'A'}` and `--output_dir={tmp_path / 'B'}` contradict each other: "
                    "--output is the deprecated spelling of --output_dir. Give --output_dir once.")
    assert not (tmp_path / "A").exists() and not (tmp_path / "B").exists()


# Every deprecated spelling a command accepts (the README's table): module, old, new, two values of the flag.
DEPRECATED = [
    ("electra_tf.finetune", "max_seq_length", "seq_length", "64", "96"),
    ("electra_tf.export", "output", "output_dir", "a", "b"),
    ("electra_tf.export", "kind", "format", "encoder", "preset"),
    ("electra_tf.convert", "output", "output_dir", "a.keras", "b.keras"),
    ("electra_tf.pretrain", "init_from", "init", "runs/a", "runs/b"),
    ("pipelines.build_vocab", "output", "vocab_file", "a.txt", "b.txt"),
    ("pipelines.build_pretraining_data", "vocab", "vocab_file", "a.txt", "b.txt"),
    ("pipelines.build_pretraining_data", "max_seq_length", "seq_length", "64", "96"),
    ("pipelines.inspect_records", "vocab", "vocab_file", "a.txt", "b.txt"),
]


@pytest.mark.parametrize("module, old, new, first, second", DEPRECATED, ids=[f"{m}-{o}" for m, o, *_ in DEPRECATED])
def test_every_deprecated_spelling_with_its_new_name_and_another_value_is_refused(module, old, new, first, second,
                                                                                  capsys):
    """In-process (`cli.invoke` parses as the command does): refused before `main` runs, in both orders."""
    import importlib

    from electra_tf import cli

    program = importlib.import_module(module)
    for args, shown in (([f"--{old}", first, f"--{new}={second}"], f"`--{old}={first}` and `--{new}={second}`"),
                        ([f"--{new}", second, f"--{old}={first}"], f"`--{new}={second}` and `--{old}={first}`")):
        with pytest.raises(SystemExit) as stopped:
            cli.invoke(program, args)
        assert stopped.value.code == 2
        err = capsys.readouterr().err
        assert err == (f"error: {shown} contradict each other: --{old} is the deprecated spelling of --{new}. "
                       f"Give --{new} once.\n")


def test_a_deprecated_spelling_with_the_same_value_as_its_new_name_is_read_with_a_warning():
    import io

    from electra_tf import cli

    warnings = io.StringIO()
    argv = cli.rewrite_deprecated(["prog", "--max_seq_length", "64", "--seq_length=64", "--epochs", "2"],
                                  {"max_seq_length": "seq_length"}, stderr=warnings)
    assert argv == ["prog", "--seq_length", "64", "--seq_length=64", "--epochs", "2"]
    assert warnings.getvalue() == ("warning: --max_seq_length is deprecated; use --seq_length (the old spelling goes "
                                   "in the next release)\n")


# --- --vocab_size against the vocabulary ---------------------------------------------------------


def test_pretrain_vocab_size_other_than_the_vocabulary_is_refused_naming_both(tmp_path):
    data = write_records(tmp_path / "records", num_files=1, num_examples=8)  # a 400-entry vocab.txt beside them
    vocab = tmp_path / "records" / "vocab.txt"
    line = refused(["-m", "electra_tf.pretrain", "--config", "tiny", "--model_dir", str(tmp_path / "run"),
                    "--data", data, "--vocab_file", str(vocab), "--seq_length", "32", "--max_sequence_length", "32",
                    "--vocab_size", "100", "--train_steps", "1", "--batch_size", "2"], tmp_path)
    assert line == (f"error: `--vocab_size=100` contradicts `--vocab_file={vocab}`, which holds 400 entries: the "
                    "token table has a row per entry. Leave out --vocab_size (it follows the vocabulary).")
    assert not (tmp_path / "run").exists()


# --- A finished run's finetune_config.json edited ------------------------------------------------


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A finished fine-tuning run of a two-label task (negative, positive), and the command that made it."""
    root = tmp_path_factory.mktemp("finished")
    vocab = write_vocab(root / "vocab.txt", 400)
    run = make_run_dir(root / "run", vocab, max_sequence_length=64, seq_length=32)
    task = root / "task"
    task.mkdir()
    rows = "".join(f"piece{i} piece{i + 1}\t{i % 2}\n" for i in range(16))
    for split in ("train", "dev"):
        (task / f"{split}.tsv").write_text("sentence\tlabel\n" + rows)
    (task / "labels.txt").write_text("negative\npositive\n")
    args = ["-m", "electra_tf.finetune", "--task", "toy", "--data_dir", str(task), "--init", run, "--epochs", "1",
            "--batch_size", "8", "--seq_length", "16"]
    run_python([*args, "--output_dir", str(root / "ft")])
    (root / "input.txt").write_text("piece1 piece2\n")
    return dict(root=root, output=root / "ft", args=args, input=root / "input.txt")


def edited_copy(finished, tmp_path, edit):
    out = tmp_path / "ft"
    shutil.copytree(finished["output"], out)
    path = out / "finetune_config.json"
    values = json.loads(path.read_text())
    edit(values)
    path.write_text(json.dumps(values, indent=2))
    return out, path


def reverse_labels(values):
    values["label_names"] = values["label_names"][::-1]


@pytest.mark.large  # a fine-tuning run and three commands: about a minute on 2 busy cores
def test_edited_label_names_are_refused_on_rerun_predict_and_export_naming_file_and_field(finished, tmp_path):
    out, path = edited_copy(finished, tmp_path, reverse_labels)
    wanted = (f"error: {path}: `label_names` is ['positive', 'negative'], but the run wrote ['negative', "
              f"'positive'] (its copy in {out / 'results.json'}): the file was edited after fine-tuning, and the "
              "model answers as it was trained. Restore `label_names`, or fine-tune again.")
    assert refused([*finished["args"], "--output_dir", str(out)], tmp_path) == wanted  # not "already finished"
    assert refused(["-m", "electra_tf.predict", "--init", str(out), "--input", str(finished["input"]),
                    "--output_file", str(tmp_path / "predictions.jsonl")], tmp_path) == wanted
    assert refused(["-m", "electra_tf.export", "--format", "serving", "--init", str(out), "--output_dir",
                    str(tmp_path / "serving")], tmp_path) == wanted


@pytest.mark.large
def test_an_unedited_finished_run_reruns_as_finished_and_predicts_its_own_labels(finished, tmp_path):
    again = run_python([*finished["args"], "--output_dir", str(finished["output"])])
    assert "already finished; results in" in again.stdout
    output = tmp_path / "predictions.jsonl"
    run_python(["-m", "electra_tf.predict", "--init", str(finished["output"]), "--input", str(finished["input"]),
                "--output_file", str(output)])
    assert json.loads(output.read_text().splitlines()[0])["label"] in ("negative", "positive")
