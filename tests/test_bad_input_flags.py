"""Bad flags, config files and files beside the data: one `error:` line naming the flag, file or field.

Every case runs the command users run (a subprocess) in a folder that already
holds files, and checks the exit status (a bad flag: 2, other bad input: 1),
the one error line, and that every file that existed has the same checksum
(and nothing new was written).
"""

import hashlib
import json
import os
import shutil

import pytest

from helpers import checksums, make_run_dir, run_python, write_records, write_vocab

pytestmark = [pytest.mark.large, pytest.mark.ci]  # slow tier, in CI: together these tests take minutes


def error_lines(result):
    return [line for line in result.stderr.splitlines() if line.startswith("error: ")]


def refused(args, folder, exit_code):
    """Runs `python args` and returns its one error line; `folder` is unchanged and gained nothing."""
    before = checksums(folder)
    result = run_python(args, check=False)
    lines = error_lines(result)
    assert result.returncode == exit_code and len(lines) == 1, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    assert checksums(folder) == before
    return lines[0]


@pytest.fixture
def folder(tmp_path):
    """A working folder that already holds a file: a refused command leaves it exactly as it was."""
    (tmp_path / "notes.txt").write_text("kept\n")
    return tmp_path


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    """Pre-training records with their vocab.txt and a stats.json as `build_pretraining_data` writes it."""
    directory = tmp_path_factory.mktemp("records")
    data = write_records(directory, num_files=1, num_examples=8)
    vocab = directory / "vocab.txt"
    stats = {"vocab_sha256": hashlib.sha256(vocab.read_bytes()).hexdigest(), "vocab_size": 400}
    (directory / "stats.json").write_text(json.dumps(stats))
    return dict(data=data, vocab=str(vocab), directory=directory)


# --- Out-of-range values: refused naming the flag, before anything runs --------------------------


@pytest.mark.parametrize("args, line", [
    (["-m", "electra_tf.pretrain", "--config", "tiny", "--model_dir", "{tmp}/run", "--num_cpu_devices", "-1"],
     "error: `--num_cpu_devices` must be >= 0. Received: `--num_cpu_devices=-1`"),
    (["-m", "electra_tf.pretrain", "--config", "tiny", "--model_dir", "{tmp}/run", "--worker_startup_timeout", "nan"],
     "error: `--worker_startup_timeout` must be a finite number > 0. Received: `--worker_startup_timeout=nan`"),
    (["-m", "electra_tf.finetune", "--task", "sst-2", "--data_dir", "{tmp}", "--init", "{tmp}", "--output_dir",
      "{tmp}/out", "--strategy", "mirrored", "--num_cpu_devices", "-2"],
     "error: `--num_cpu_devices` must be >= 0. Received: `--num_cpu_devices=-2`"),
    (["-m", "electra_tf.export", "--format", "serving", "--init", "{tmp}", "--output_dir", "{tmp}/serving",
      "--model_name", ""],
     "error: `--model_name` must be one folder name, not empty and without '/': the version goes in "
     "<output_dir>/<model_name>/<version>. Received: `--model_name=''`"),
    (["-m", "electra_tf.pipelines.build_vocab", "--input", "{tmp}/notes.txt", "--vocab_file", "{tmp}/vocab.txt",
      "--num_unused", "-5"],
     "error: `--num_unused` must be >= 0. Received: `--num_unused=-5`"),
    (["-m", "electra_tf.pipelines.inspect_records", "--data", "{tmp}/*.tfrecord", "--vocab_file", "{tmp}/v.txt",
      "--num", "-1"],
     "error: `--num` must be >= 1. Received: `--num=-1`"),
])
def test_an_out_of_range_flag_is_a_bad_flag_naming_it(folder, args, line):
    assert refused([a.format(tmp=folder) for a in args], folder, exit_code=2) == line


def test_more_predictions_per_sequence_than_tokens_is_refused(folder):
    line = refused(["-m", "electra_tf.pretrain", "--config", "tiny", "--model_dir", str(folder / "run"),
                    "--max_predictions_per_seq", "1000"], folder, exit_code=1)
    assert line.startswith("error: `--max_predictions_per_seq=1000` exceeds `--seq_length=128`: a sequence has no "
                           "more positions to predict")


def test_a_batch_too_large_for_one_tensor_names_batch_size_before_training(folder, records):
    """200,000 sequences on the demo data (19 predictions, vocabulary 8192) failed in the first step's reshape."""
    from electra_tf.config import get_config
    from electra_tf.training.pretraining import check_batch_size

    with pytest.raises(ValueError, match=r"^`--batch_size=200000` is too large: .* = 31,129,600,000 values on a "
                                         r"replica, .* Use --batch_size <= 13797 here"):
        check_batch_size(get_config("tiny", batch_size=200000))
    check_batch_size(get_config("tiny", batch_size=13797))  # the largest that fits
    check_batch_size(get_config("tiny", batch_size=200000), num_replicas=16)  # 12,500 per replica
    # Through the command, on records of a 400-token vocabulary: 4 predictions per sequence of 32.
    line = refused(["-m", "electra_tf.pretrain", "--config", "tiny", "--model_dir", str(folder / "run"),
                    "--data", records["data"], "--seq_length", "32", "--max_sequence_length", "32",
                    "--batch_size", "2000000"], folder, exit_code=1)
    assert line.startswith("error: `--batch_size=2000000` is too large: the generator scores 2000000 sequences x 4 "
                           "positions x 400 vocabulary entries")


# --- Config files and files beside the data ------------------------------------------------------


def test_a_config_field_of_the_wrong_type_names_the_file_and_the_field(tmp_path):
    run = make_run_dir(tmp_path / "run", write_vocab(tmp_path / "vocab.txt"))
    config_file = os.path.join(run, "config.json")
    values = json.load(open(config_file))
    values["hidden_dim"] = str(values["hidden_dim"])  # "64": a hand edit
    with open(config_file, "w") as f:
        json.dump(values, f)
    line = refused(["-m", "electra_tf.export", "--format", "encoder", "--init", run, "--output_dir",
                    str(tmp_path / "encoder")], tmp_path, exit_code=1)
    assert line == f"error: {config_file}: `hidden_dim` expects an int; received '64' (str)."


def test_a_damaged_stats_json_beside_the_records_is_named(tmp_path, records):
    data = shutil.copytree(records["directory"], tmp_path / "records")
    (data / "stats.json").write_text('{\n  "vocab_size": 400\n}\n  "vocab_sha256": "0"\n')
    line = refused(["-m", "electra_tf.pipelines.inspect_records", "--data", str(data / "*.tfrecord"),
                    "--vocab_file", str(data / "vocab.txt")], tmp_path, exit_code=1)
    assert line.startswith(f"error: {data / 'stats.json'} is not valid JSON (Extra data: line 4 column 3")


def test_an_unreadable_run_lock_says_so_and_how_to_clear_it(folder):
    run = folder / "run"
    run.mkdir()
    (run / "run.lock").write_bytes(b"\x00\xffnot a lock\x07" * 8)
    line = refused(["-m", "electra_tf.pretrain", "--config", "tiny", "--model_dir", str(run)], folder, exit_code=1)
    assert line == (f"error: The lock {run / 'run.lock'} is unreadable (not a host and pid as this program writes "
                    f"them): if no run is using {run}, delete {run / 'run.lock'} and start again.")


@pytest.mark.parametrize("args, flag", [
    (["-m", "electra_tf.pretrain", "--config", "tiny", "--model_dir", "{out}"], "model_dir"),
    (["-m", "electra_tf.finetune", "--task", "sst-2", "--data_dir", "{tmp}/task", "--init", "{tmp}/run",
      "--output_dir", "{out}"], "output_dir"),
    (["-m", "electra_tf.pipelines.build_pretraining_data", "--input", "text:{tmp}/notes.txt", "--vocab_file",
      "{vocab}", "--output_dir", "{out}"], "output_dir"),
])
def test_an_output_folder_that_is_a_file_is_named_as_a_file(folder, args, flag):
    out = folder / "out.txt"
    out.write_text("a file\n")
    vocab = write_vocab(folder / "vocab.txt")
    line = refused([a.format(tmp=folder, out=out, vocab=vocab) for a in args], folder, exit_code=1)
    assert line.startswith(f"error: `--{flag}={out}` is a file, not a folder")


@pytest.mark.parametrize("copy", ["crlf", "bom"])
def test_a_crlf_or_bom_copy_of_the_vocabulary_is_the_same_vocabulary(tmp_path, records, copy):
    text = open(records["vocab"], "rb").read()
    same = tmp_path / f"vocab_{copy}.txt"
    same.write_bytes(text.replace(b"\n", b"\r\n") if copy == "crlf" else b"\xef\xbb\xbf" + text)
    result = run_python(["-m", "electra_tf.pipelines.inspect_records", "--data", records["data"], "--vocab_file",
                         str(same), "--num", "2"], check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    original = run_python(["-m", "electra_tf.pipelines.inspect_records", "--data", records["data"], "--vocab_file",
                           records["vocab"], "--num", "2"])
    assert result.stdout == original.stdout and result.stdout.count("--- example") == 2


def test_another_vocabulary_is_refused_saying_how_it_differs(tmp_path, records):
    other = write_vocab(tmp_path / "vocab.txt", vocab_size=500)
    line = refused(["-m", "electra_tf.pipelines.inspect_records", "--data", records["data"], "--vocab_file", other],
                   tmp_path, exit_code=1)
    assert "were built with another vocabulary than `--vocab_file=" in line
    assert "400 tokens there, 500 in --vocab_file" in line


def test_an_unknown_corpus_format_is_named_with_the_formats(folder):
    line = refused(["-m", "electra_tf.pipelines.build_vocab", "--input", f"pdf:{folder}/*.pdf", "--vocab_file",
                    str(folder / "vocab.txt")], folder, exit_code=1)
    assert line == (f"error: Unknown corpus format `pdf:` in the input `pdf:{folder}/*.pdf`. The formats are text:, "
                    "wikipedia:, books: (or no prefix: guessed from the name).")


def test_a_text_folder_as_input_asks_for_a_glob(folder):
    corpus = folder / "corpus"
    corpus.mkdir()
    (corpus / "a.txt").write_text("The cat sat on the mat.\n")
    line = refused(["-m", "electra_tf.pipelines.build_pretraining_data", "--input", f"text:{corpus}",
                    "--vocab_file", write_vocab(folder / "vocab.txt"), "--output_dir", str(folder / "out")],
                   folder, exit_code=1)
    assert line == (f"error: Input `text:{corpus}` is a folder; give a glob of its files, e.g. `text:{corpus}/*` "
                    "(only books: reads a folder: a book per .txt file).")


# --- `--noFLAG=value`: absl's `--noFLAG` takes no value ---------------------------------------------


def test_a_value_given_to_a_no_flag_is_one_line_and_exit_2_like_any_bad_flag(folder):
    line = refused(["-m", "electra_tf.pretrain", "--config", "tiny", "--model_dir", str(folder / "run"),
                    "--nofused_elementwise=maybe"], folder, exit_code=2)
    assert line == ("error: flag --nofused_elementwise=maybe: --nofused_elementwise takes no value (it sets "
                    "--fused_elementwise to false); write --nofused_elementwise, or --fused_elementwise=true|false")
