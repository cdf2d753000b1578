"""A vocabulary larger than the model's token table is refused by every export kind and by `predict`.

Such a vocabulary gives ids past the table's last row: the export used to succeed and every request
of an ordinary text then failed (`indices[...] = ... is not in [0, 400)`; LiteRT: `gather index out
of bounds`). Each command now ends with one `error:` line naming the vocabulary, its size and the
table's, and writes nothing.
"""

import json
import os
import shutil

import pytest

from helpers import checksums, error_line, make_run_dir, run_python, write_vocab
from electra_tf.tasks import get as task_kind  # the registry: a kind by name

pytestmark = pytest.mark.large  # slow tier: together these tests take minutes

TABLE_ROWS, BIG = 400, 500


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A tiny pre-training run (with a checkpoint) over a 400-entry vocabulary, a classifier fine-tuned from it,
    a 500-entry vocabulary."""
    import keras

    from electra_tf.sources import load_discriminator
    ElectraClassifier = task_kind("classification").model_class

    from electra_tf import run_files
    from electra_tf.models.pretrainer import build_pretrainer
    from electra_tf.sources.named_checkpoint import NamedCheckpoint

    root = tmp_path_factory.mktemp("vocabularies")
    vocab = write_vocab(root / "vocab.txt", TABLE_ROWS)
    run = make_run_dir(root / "run", vocab)
    pretrainer = build_pretrainer(run_files.read_config(run))  # checkpoints: the replaced-token head for rtd
    NamedCheckpoint(pretrainer).checkpoint.write(os.path.join(run, run_files.CHECKPOINT_DIR, "ckpt-1"))
    with open(os.path.join(run, run_files.CHECKPOINT_DIR, "checkpoint"), "w") as f:
        f.write('model_checkpoint_path: "ckpt-1"\n')
    encoder, _ = load_discriminator(run)
    keras.utils.set_random_seed(0)
    finetuned = root / "finetuned"
    finetuned.mkdir()
    classifier = ElectraClassifier(encoder, num_labels=2)
    classifier.build()
    classifier.save(finetuned / "classifier.keras")
    shutil.copyfile(vocab, finetuned / "vocab.txt")
    (finetuned / "finetune_config.json").write_text(json.dumps(
        {"task": "toy", "label_names": ["no", "yes"], "regression": False, "pair": False, "seq_length": 16}))
    big = write_vocab(root / "big_vocab.txt", BIG)
    return {"root": root, "run": run, "finetuned": str(finetuned), "big": big}


@pytest.mark.parametrize("kind", ["serving", "tflite", "rtd", "encoder", "preset"])
def test_export_refuses_a_vocab_file_larger_than_the_token_table(kind, runs, tmp_path):
    init = runs["finetuned"] if kind in ("serving", "tflite") else runs["run"]
    before = checksums(runs["root"])
    out = tmp_path / "out"
    result = run_python(["-m", "electra_tf.export", "--format", kind, "--init", init, "--output_dir", str(out),
                         "--vocab_file", runs["big"]], check=False)
    line = error_line(result)
    assert f"`--vocab_file` {runs['big']} has {BIG} entries" in line, line
    assert f"token table ({TABLE_ROWS})" in line, line
    assert not out.exists()
    assert checksums(runs["root"]) == before


def test_export_without_vocab_file_names_the_vocabulary_beside_init(runs, tmp_path):
    run = tmp_path / "finetuned"
    shutil.copytree(runs["finetuned"], run)
    shutil.copyfile(runs["big"], run / "vocab.txt")
    before = checksums(run)
    out = tmp_path / "serving"
    result = run_python(["-m", "electra_tf.export", "--format", "serving", "--init", str(run), "--output_dir", str(out)],
                        check=False)
    line = error_line(result)
    assert f"{run / 'vocab.txt'} has {BIG} entries" in line and f"({TABLE_ROWS})" in line, line
    assert "--vocab_file" in line, line
    assert not out.exists() and checksums(run) == before


def test_predict_refuses_a_run_whose_vocabulary_outgrew_its_token_table(runs, tmp_path):
    run = tmp_path / "finetuned"
    shutil.copytree(runs["finetuned"], run)
    shutil.copyfile(runs["big"], run / "vocab.txt")
    (tmp_path / "texts.txt").write_text("piece1 piece450\n")
    before = checksums(tmp_path)
    output = tmp_path / "predictions.jsonl"
    result = run_python(["-m", "electra_tf.predict", "--init", str(run), "--input", str(tmp_path / "texts.txt"),
                         "--output_file", str(output)], check=False)
    line = error_line(result)
    assert f"{run / 'vocab.txt'} has {BIG} entries" in line and f"({TABLE_ROWS})" in line, line
    assert not output.exists() and checksums(tmp_path) == before
