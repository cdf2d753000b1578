"""Bad input to fine-tuning, export and conversion: refused before any work, files named, nothing replaced."""

import hashlib
import logging
import os
import pathlib

import pytest

from helpers import make_run_dir, write_vocab
from electra_tf import tasks
from electra_tf.tasks import get as task_kind  # the registry: a kind by name


def checksums(folder):
    folder = pathlib.Path(folder)
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """A pre-training run dir (400-entry vocabulary, 128 positions) and a task folder."""
    root = tmp_path_factory.mktemp("tiny")
    vocab = write_vocab(root / "vocab.txt", 400)
    run = make_run_dir(root / "run", vocab, max_sequence_length=128, seq_length=64)
    task = root / "task"
    task.mkdir()
    rows = "".join(f"piece{i} piece{i + 1}\t{i % 2}\n" for i in range(16))
    for split in ("train", "dev"):
        (task / f"{split}.tsv").write_text("sentence\tlabel\n" + rows)
    return dict(run=run, task=str(task), vocab=vocab, root=root)


def finetune(tiny_run, output_dir, **kwargs):
    """`python -m electra_tf.finetune` of the toy classification task (`tasks.finetune`)."""
    config = tasks.FinetuneConfig(task="toy", task_kind="classification", data_dir=tiny_run["task"],
                                  init=kwargs.pop("init", tiny_run["run"]), output_dir=str(output_dir))
    return tasks.finetune(config.replace(epochs=kwargs.pop("epochs", 1), batch_size=kwargs.pop("batch_size", 8),
                                         verbose=0, **kwargs))


# --- Task files ----------------------------------------------------------------------------------


def write_task(tmp_path, train):
    (tmp_path / "train.tsv").write_bytes(train)
    return str(tmp_path)


@pytest.mark.parametrize("train,message", [
    (b"label\tsentence\n1\tgood\tmovie\n0\tbad\n", r"train.tsv:2: 3 fields where the header has 2: a '\\t' inside a text"),
    (b"sentence\tlabel\n\xff\xfe\x00\x01binary\t1\n", r"train.tsv:2: not UTF-8 \(byte 0xff at column 1\); save it as UTF-8."),
    (b"sentence\tlabel\n", r"train.tsv: no examples after the header line"),
])
def test_bad_task_files_name_the_file(tmp_path, train, message):
    data_dir = write_task(tmp_path, train)
    config = tasks.FinetuneConfig(task="toy", data_dir=data_dir, text_a_column="sentence", label_column="label")
    with pytest.raises(ValueError, match=message):
        task_kind("classification")(config)  # the kind reads its training files


# --- Fine-tuning flags and folders: refused before training --------------------------------------


@pytest.mark.parametrize("flag,value,wanted", [
    ("epochs", -1, ">= 0"), ("batch_size", 0, ">= 1"), ("batch_size", -4, ">= 1"),
    ("num_trials", 0, ">= 1"), ("learning_rate", -1.0, "> 0"), ("seq_length", 2, ">= 3"),
    ("warmup_proportion", 1.5, r"in \[0, 1\]"), ("dropout", 1.0, r"in \[0, 1\)"),
])
def test_finetuning_flag_out_of_range_names_the_flag(tiny_run, tmp_path, flag, value, wanted):
    with pytest.raises(ValueError, match=rf"`--{flag}` must be {wanted}. Received: `--{flag}={value}`"):
        finetune(tiny_run, tmp_path / "out", **{flag: value})
    assert not (tmp_path / "out").exists()


def test_output_dir_equal_to_init_or_holding_another_artefact_is_refused(tiny_run, tmp_path):
    before = checksums(tiny_run["run"])
    with pytest.raises(ValueError, match=r"`--output_dir=.*run` is `--init`"):
        finetune(tiny_run, tiny_run["run"])
    other = make_run_dir(tmp_path / "other_run", tiny_run["vocab"])
    other_before = checksums(other)
    with pytest.raises(FileExistsError, match=r"`--output_dir=.*other_run` holds a pre-training run"):
        finetune(tiny_run, other)
    assert checksums(tiny_run["run"]) == before and checksums(other) == other_before


def test_max_seq_length_beyond_the_position_table_and_a_larger_vocabulary_are_named(tiny_run, tmp_path):
    with pytest.raises(ValueError, match=r"`--seq_length=256` exceeds the encoder's position table "
                                         r"\(max_sequence_length=128\)"):
        finetune(tiny_run, tmp_path / "out", seq_length=256)
    big = write_vocab(tmp_path / "big_vocab.txt", 500)
    with pytest.raises(ValueError, match=r"big_vocab.txt has 500 entries, more than the encoder's token table \(400\)"):
        finetune(tiny_run, tmp_path / "out", vocab_file=big)
    assert not (tmp_path / "out").exists()


def test_corrupt_keras_init_names_the_file(tiny_run, tmp_path):
    from electra_tf.sources import load_init

    path = tmp_path / "encoder.keras"
    path.write_bytes((pathlib.Path(tiny_run["run"]) / "discriminator.keras").read_bytes()[:2000])
    with pytest.raises(ValueError, match=r"`--init=.*encoder.keras` cannot be read .*truncated or damaged"):
        load_init(str(path), tiny_run["vocab"])


# --- Export and convert ----------------------------------------------------------------------------


def test_serving_export_without_finetune_config_warns_what_it_assumes(tiny_run, tmp_path, caplog):
    import keras

    from electra_tf.tasks import OUTPUTS
    ElectraClassifier = task_kind("classification").model_class

    encoder = keras.saving.load_model(os.path.join(tiny_run["run"], "discriminator.keras"))
    classifier = ElectraClassifier(encoder, num_labels=3)
    classifier.build()
    classifier.save(str(tmp_path / "classifier.keras"))
    with caplog.at_level(logging.WARNING):
        config = OUTPUTS.load(str(tmp_path)).settings
    assert config == {}
    assert any("no finetune_config.json" in r.getMessage() and "numbered labels (0..2)" in r.getMessage()
               and "128 tokens" in r.getMessage() for r in caplog.records)


def test_convert_to_hf_into_a_pretraining_run_is_refused(tiny_run):
    from electra_tf import cli
    from electra_tf import convert as convert_cli

    before = checksums(tiny_run["run"])
    # Refused before loading: the output is the run the input lives in (run_files.guard_output).
    with pytest.raises(ValueError, match=r"`--output_dir=.*run` is or overlaps the input .*discriminator.keras"):
        cli.invoke(convert_cli, ["--from", "keras", "--input", os.path.join(tiny_run["run"], "discriminator.keras"),
                                 "--to", "hf", "--output_dir", tiny_run["run"]])
    assert checksums(tiny_run["run"]) == before


@pytest.mark.parametrize("damaged,message", [
    ("config.json", r"hf/config.json is not valid JSON"),
    ("model.safetensors", r"hf/model.safetensors cannot be read"),
])
def test_truncated_hugging_face_files_are_named(tmp_path, damaged, message):
    from electra_tf.converting.hugging_face import read_safetensors_dir

    hf = tmp_path / "hf"
    hf.mkdir()
    (hf / "config.json").write_text('{"model_type": "electra", "hidden_size": 6')
    (hf / "model.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{\"a\":")
    if damaged == "model.safetensors":
        (hf / "config.json").write_text('{"model_type": "electra"}')
    with pytest.raises(ValueError, match=message):
        read_safetensors_dir(str(hf))
