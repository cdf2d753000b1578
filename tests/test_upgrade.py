"""Artefacts written by the previous release's code give the ids and outputs they gave there.

The previous release (commit `PREVIOUS_RELEASE`) is unpacked from the repository's history and
run as it was (its own package on `PYTHONPATH`, this environment): a tiny fine-tuning run, its TF
Serving and LiteRT exports, its predictions and its tokenizer's ids. This code then predicts with
the old run, re-exports it, fine-tunes it further and loads the old exports: the same ids, and
probabilities within `TOLERANCE`. The release normalised text with ICU's NFKC case folding, which
this code's own normalisation (BERT's) tokenizes differently for these texts.
"""

import io
import json
import os
import pathlib
import subprocess
import sys
import tarfile
import types
from concurrent import futures

import numpy as np
import pytest

from helpers import REPO, run_python, shared_data

PREVIOUS_RELEASE = "7caea23"
TEXTS = ["ﬁne ǅ İstanbul ß Straße", "é́́ ﬁne Straße was built in 1901."]
TOLERANCE = 1e-5
SEQ_LENGTH = 32

# Run by the previous release's code: its test helper's tiny pre-training run, then its tokenizer's ids.
MAKE_RUN = """
import sys
sys.path.insert(0, "tests")
from helpers import make_run_dir
make_run_dir(sys.argv[1], sys.argv[2])
"""
OLD_IDS = """
import json, sys
from electra_tf.data.tokenizer import WordPieceTokenizer
tokenizer = WordPieceTokenizer(sys.argv[1])
print(json.dumps(tokenizer.tokenize(json.loads(sys.argv[2])).to_list()))
"""


def previous_release_source(folder):
    """The previous release's files unpacked into `folder`, or a skip where its commit is not in the history."""
    try:
        found = subprocess.run(["git", "-C", str(REPO), "cat-file", "-e", f"{PREVIOUS_RELEASE}^{{commit}}"],
                               capture_output=True)
    except FileNotFoundError:
        pytest.skip("git is not installed: the previous release's code cannot be unpacked")
    if found.returncode != 0:
        pytest.skip(f"commit {PREVIOUS_RELEASE} (the previous release) is not in this repository's history "
                    "(a shallow clone?)")
    archive = subprocess.run(["git", "-C", str(REPO), "archive", "--format=tar", PREVIOUS_RELEASE],
                             capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(folder, filter="data")
    return folder


def run_previous(source, args):
    """`python args...` with the previous release's package (run from its folder, so none of this one's)."""
    env = {**os.environ, "PYTHONPATH": str(source), "TF_CPP_MIN_LOG_LEVEL": "2"}
    result = subprocess.run([sys.executable, *args], cwd=source, env=env, capture_output=True, text=True,
                            timeout=900)
    assert result.returncode == 0, f"{args} (previous release) failed:\n{result.stderr[-4000:]}"
    return result


def in_parallel(*calls):
    """Runs the (function, args...) calls at once (each a subprocess); their results in order."""
    with futures.ThreadPoolExecutor(len(calls)) as pool:
        return [f.result() for f in [pool.submit(call[0], *call[1:]) for call in calls]]


def predictions(path):
    return np.array([[row["probabilities"][k] for k in sorted(row["probabilities"])]
                     for row in map(json.loads, pathlib.Path(path).read_text().splitlines())])


@pytest.fixture(scope="module")
def old(tmp_path_factory):
    """The previous release's run folder, exports, predictions and ids, all written by its own code."""
    vocab = shared_data("vocab", "bert_uncased_vocab.txt")
    root = tmp_path_factory.mktemp("previous_release")
    source = previous_release_source(root / "source")
    task = root / "task"
    task.mkdir()
    rows = "sentence\tlabel\n" + "".join(f"{text}\t{i % 2}\n" for i, text in enumerate(TEXTS * 4))
    for split in ("train", "dev"):
        (task / f"{split}.tsv").write_text(rows)
    (root / "texts.txt").write_text("".join(t + "\n" for t in TEXTS))
    run_previous(source, ["-c", MAKE_RUN, str(root / "pretrained"), str(vocab)])
    run_previous(source, ["-m", "electra_tf.finetune", "--task", "pieces", "--data_dir", str(task), "--init",
                          str(root / "pretrained"), "--output_dir", str(root / "run"), "--epochs", "1",
                          "--batch_size", "8", "--seq_length", str(SEQ_LENGTH), "--learning_rate", "1e-3",
                          "--verbose", "0"])
    run = root / "run"
    ids = in_parallel(
        (run_previous, source, ["-m", "electra_tf.export", "--kind", "serving", "--init", str(run), "--output_dir",
                                str(root / "serving"), "--model_name", "old"]),
        (run_previous, source, ["-m", "electra_tf.export", "--kind", "tflite", "--init", str(run), "--output_dir",
                                str(root / "litert")]),
        (run_previous, source, ["-m", "electra_tf.predict", "--init", str(run), "--input", str(root / "texts.txt"),
                                "--output_file", str(root / "predictions.jsonl")]),
        (run_previous, source, ["-c", OLD_IDS, str(run / "vocab.txt"), json.dumps(TEXTS)]),
    )[-1]
    return types.SimpleNamespace(root=root, run=run, task=task, serving=root / "serving" / "old" / "1",
                                 litert=root / "litert" / "model.tflite", ids=json.loads(ids.stdout),
                                 predictions=predictions(root / "predictions.jsonl"))


@pytest.mark.large
def test_the_previous_releases_runs_and_exports_give_their_ids_and_outputs(old, tmp_path):
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (registers the tokenizer ops of the old export)

    from electra_tf.data.tokenizer import LEGACY, SETTINGS_FILE, WordPieceTokenizer, new_settings
    from electra_tf.exporting.tflite_runtime import load_interpreter

    assert json.loads((old.run / SETTINGS_FILE).read_text()) == {"lower_case": True, "strip_accents": True}
    legacy = new_settings(normalization=LEGACY)
    tokenizer = WordPieceTokenizer(str(old.run / "vocab.txt"))
    assert tokenizer.settings == legacy
    assert tokenizer.tokenize(TEXTS).to_list() == old.ids
    tokens = [tokenizer.detokenize(row).numpy().tolist() for row in old.ids]
    assert tokens[0] == [b"fine", b"d", b"##z", b"istanbul", b"ss", b"st", b"##ras", b"##se"]
    (tmp_path / "bare").mkdir()  # the vocabulary without settings: a new vocabulary, BERT's normalisation
    (tmp_path / "bare" / "vocab.txt").write_bytes((old.run / "vocab.txt").read_bytes())
    assert WordPieceTokenizer(str(tmp_path / "bare" / "vocab.txt")).tokenize(TEXTS).to_list() != old.ids

    in_parallel(
        (run_python, ["-m", "electra_tf.predict", "--init", str(old.run), "--input", str(old.root / "texts.txt"),
                      "--output_file", str(tmp_path / "predictions.jsonl")]),
        (run_python, ["-m", "electra_tf.export", "--format", "serving", "--init", str(old.run), "--output_dir",
                      str(tmp_path / "serving"), "--model_name", "new"]),
        (run_python, ["-m", "electra_tf.export", "--format", "tflite", "--init", str(old.run), "--output_dir",
                      str(tmp_path / "litert")]),
        (run_python, ["-m", "electra_tf.finetune", "--task", "pieces", "--data_dir", str(old.task), "--init",
                      str(old.run / "classifier.keras"), "--output_dir", str(tmp_path / "further"), "--epochs", "1", "--batch_size", "8",
                      "--seq_length", str(SEQ_LENGTH), "--verbose", "0"]),
    )
    # predict with the old run folder: the old predictions
    np.testing.assert_allclose(predictions(tmp_path / "predictions.jsonl"), old.predictions, atol=TOLERANCE, rtol=0)

    # the old SavedModel and this code's re-export of the run: the same ids and probabilities
    exports = [tf.saved_model.load(str(path)) for path in (old.serving, tmp_path / "serving" / "new" / "1")]
    text = tf.constant(TEXTS)
    for export in exports:
        packed = export.signatures["preprocess"](text=text)
        ids = [row[row != 0].tolist() for row in packed["token_ids"].numpy()]
        assert ids == [[tokenizer.cls_id, *row, tokenizer.sep_id] for row in old.ids]
    served = [export.signatures["serving_default"](text=text)["probabilities"].numpy() for export in exports]
    np.testing.assert_allclose(served[0], old.predictions, atol=TOLERANCE, rtol=0)
    np.testing.assert_allclose(served[1], served[0], atol=TOLERANCE, rtol=0)
    assets = tmp_path / "serving" / "new" / "1" / "assets"
    assert json.loads((assets / SETTINGS_FILE).read_text()) == legacy

    # the old LiteRT model and the re-export: the same probabilities; the re-export records the normalisation
    litert = [load_interpreter(str(path)).get_signature_runner()(text=np.array(TEXTS))["probabilities"]
              for path in (old.litert, tmp_path / "litert" / "model.tflite")]
    np.testing.assert_allclose(litert[0], old.predictions, atol=TOLERANCE, rtol=0)
    np.testing.assert_allclose(litert[1], litert[0], atol=TOLERANCE, rtol=0)
    assert json.loads((tmp_path / "litert" / "tflite_config.json").read_text())["tokenizer"] == legacy
    assert json.loads((tmp_path / "litert" / SETTINGS_FILE).read_text()) == legacy

    # fine-tuned further (its classifier's encoder and vocabulary): the run keeps (and now records) the old normalisation
    assert json.loads((tmp_path / "further" / SETTINGS_FILE).read_text()) == legacy
    assert WordPieceTokenizer(str(tmp_path / "further" / "vocab.txt")).tokenize(TEXTS).to_list() == old.ids
