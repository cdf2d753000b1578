"""Artefacts written by the previous release's code give the ids and outputs they gave there.

The previous release (commit `PREVIOUS_RELEASE`) is unpacked from the repository's history and
run as it was (its own package on `PYTHONPATH`, this environment): a tiny fine-tuning run, its TF
Serving and LiteRT exports, its predictions and its tokenizer's ids; a tiny pre-training run (its
checkpoints and `discriminator.keras`); a tagger, a SQuAD QA model and a multiple-choice model as
its fine-tuning leaves them, with its `predict`'s outputs. This code then predicts with the old
runs, re-exports the classifier, fine-tunes it further, loads the old exports and the old
`.keras` discriminator, and resumes the old pre-training run: the same ids, and outputs within
`TOLERANCE`. The release normalised text with ICU's NFKC case folding, which this code's own
normalisation (BERT's) tokenizes differently for these texts.
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

from helpers import REPO, assert_same_records, read_records, run_python, shared_data, write_records

PREVIOUS_RELEASE = "7caea23"
TEXTS = ["ﬁne ǅ İstanbul ß Straße", "é́́ ﬁne Straße was built in 1901."]
TOLERANCE = 1e-5
SEQ_LENGTH = 32

# Run by the previous release's code: its test helper's tiny pre-training run, a tiny tagger, SQuAD QA and
# multiple-choice run folder as its fine-tuning leaves them (model file, vocabulary, `finetune_config.json`).
MAKE_RUNS = """
import json, pathlib, shutil, sys
sys.path.insert(0, "tests")
import keras
from helpers import make_run_dir
from electra_tf.finetuning import kinds
from electra_tf.models.encoder import ElectraEncoder
from electra_tf.models.multiple_choice import ElectraMultipleChoice
from electra_tf.models.question_answerer import ElectraQuestionAnswerer
from electra_tf.models.token_classifier import ElectraTokenClassifier
root, vocab = pathlib.Path(sys.argv[1]), sys.argv[2]
make_run_dir(str(root / "pretrained"), vocab)
runs = {
    "tagging": (lambda e: ElectraTokenClassifier(e, num_labels=5),
                {"task": "ner", "kind": "tagging", "label_names": ["O", "B-LOC", "B-PER", "I-LOC", "I-PER"],
                 "scheme": "IOB2", "seq_length": 8, "stride": 3}),
    "span_qa": (lambda e: ElectraQuestionAnswerer(e, start_n_top=3, end_n_top=3, joint_hidden_dim=16),
                {"task": "squad", "kind": "span_qa", "seq_length": 32, "doc_stride": 8, "max_query_length": 8,
                 "max_answer_length": 10, "answerable": False, "null_threshold": None}),
    "multiple_choice": (lambda e: ElectraMultipleChoice(e),
                        {"task": "swag", "kind": "multiple_choice", "seq_length": 24}),
}
for i, (name, (build, config)) in enumerate(runs.items()):
    keras.utils.set_random_seed(10 + i)
    model = build(ElectraEncoder(vocab_size=30522, max_sequence_length=64, num_layers=1, num_heads=2,
                                 hidden_dim=16, embedding_dim=16, intermediate_dim=32))
    model.build()
    run = root / name
    run.mkdir()
    model.save(str(run / kinds.get(name).model_file))
    shutil.copyfile(vocab, run / "vocab.txt")
    (run / "finetune_config.json").write_text(json.dumps(config))
"""
OLD_IDS = """
import json, sys
from electra_tf.data.tokenizer import WordPieceTokenizer
tokenizer = WordPieceTokenizer(sys.argv[1])
print(json.dumps(tokenizer.tokenize(json.loads(sys.argv[2])).to_list()))
"""
# In one process, by the code on the path (the previous release's or this one): `predict`'s own `main` once
# for each command line of argv[1] (a JSON list), then the outputs for the ids argv[3] of the model in the
# `.keras` file argv[2] (a pre-training run's `discriminator.keras`: its encoder), printed.
PREDICT_EACH = """
import json, sys
import keras
import numpy as np
from absl import flags
from electra_tf import cli, predict
cli.prepare_tensorflow()
predict.define_flags()
for argv in json.loads(sys.argv[1]):
    flags.FLAGS.unparse_flags()
    flags.FLAGS(["predict", *argv])
    predict.main(["predict"])
import electra_tf.models.discriminator  # noqa: F401  (registers the serialized classes)
model = keras.saving.load_model(sys.argv[2], compile=False)
ids = np.array(json.loads(sys.argv[3]), dtype="int32")
inputs = {"token_ids": ids, "padding_mask": (ids != 0).astype("int32"), "segment_ids": np.zeros_like(ids)}
print(json.dumps(np.asarray(model(inputs)).tolist()))
"""
# The tiny pre-training run (4 steps, a checkpoint every 2) on random records of a 400-piece vocabulary.
PRETRAIN = dict(config="tiny", vocab_size=400, embedding_dim=16, hidden_dim=32, num_layers=2, num_heads=2,
                intermediate_dim=64, seq_length=32, max_sequence_length=32, batch_size=8, warmup_steps=2,
                train_steps=4, save_checkpoints_steps=2, keep_checkpoint_max=5, log_steps=2, shuffle_buffer=50,
                deterministic="true", verbose=0)
PIECE_TEXTS = ["piece150 piece151 piece377 piece200", "piece399 piece160 piece150"]
IDS = [[101, 255, 256, 397, 102, 0], [101, 399, 300, 250, 102, 102]]  # below the 400 pieces
TAGGING = [{"text": "Peter Blackburn lives in Zürich ."}, {"words": ["The", "U.S.", "and", "New", "York", "met"]}]
SQUAD = {"version": "1.1", "data": [{"title": "t", "paragraphs": [
    {"context": "Paris is the capital of France. It lies on the Seine, a river of 777 km.",
     "qas": [{"id": "q1", "question": "What is the capital of France?",
              "answers": [{"text": "Paris", "answer_start": 0}]},
             {"id": "q2", "question": "Which river?", "answers": [{"text": "the Seine", "answer_start": 44}]}]}]}]}
CHOICES = [{"context": "A cat.", "question": "The cat sat", "choices": ["on the mat.", "in the sky.", "under ﬁne Straße."], "answer": 0},
           {"context": "İstanbul", "question": "It is a", "choices": ["city", "river"], "answer": 1}]
KIND_INPUTS = {"tagging": ("tagging.jsonl", "".join(json.dumps(x) + "\n" for x in TAGGING)), "span_qa": ("squad.json", json.dumps(SQUAD)),
               "multiple_choice": ("choices.jsonl", "".join(json.dumps(q) + "\n" for q in CHOICES)),
               "pretraining": ("pieces.txt", "".join(t + "\n" for t in PIECE_TEXTS))}

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


def kind_predictions(root, out):
    """`predict`'s command lines for the tagger, QA and multiple-choice runs and the pre-training run under `root`
    (the replaced-token scores of its latest checkpoint), their output files in `out`."""
    out.mkdir()
    return [["--init", str(root / name), "--input", str(root / file_name), "--output_file", str(out / f"{name}.jsonl")]
            for name, (file_name, _) in KIND_INPUTS.items()]


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
    data = write_records(root / "records", num_files=1, num_examples=48)
    pretraining = root / "pretraining"
    in_parallel(
        (run_previous, source, ["-c", MAKE_RUNS, str(root), str(vocab)]),
        (run_previous, source, ["-m", "electra_tf.pretrain", "--model_dir", str(pretraining), "--data", data,
                                *[f"--{k}={v}" for k, v in PRETRAIN.items()]]),
    )
    for name, (file_name, text) in KIND_INPUTS.items():
        (root / file_name).write_text(text)
    jobs = kind_predictions(root, root / "old")
    run = root / "run"
    outputs = in_parallel(
        (run_previous, source, ["-m", "electra_tf.finetune", "--task", "pieces", "--data_dir", str(task), "--init",
                                str(root / "pretrained"), "--output_dir", str(run), "--epochs", "1",
                                "--batch_size", "8", "--seq_length", str(SEQ_LENGTH), "--learning_rate", "1e-3",
                                "--verbose", "0"]),
        (run_previous, source, ["-c", PREDICT_EACH, json.dumps(jobs), str(pretraining / "discriminator.keras"),
                                json.dumps(IDS)]),
    )[-1]
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
                                 predictions=predictions(root / "predictions.jsonl"), pretraining=pretraining,
                                 data=data, outputs=np.array(json.loads(outputs.stdout.splitlines()[-1])))


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


@pytest.mark.large
def test_the_previous_releases_pretraining_tagging_qa_and_multiple_choice_runs_give_their_outputs(old, tmp_path):
    import shutil

    import tensorflow as tf

    from electra_tf import run_files

    # The old pre-training run as it stood at step 2 (its ckpt-4 left out): this code resumes it.
    resumed = tmp_path / "resumed"
    shutil.copytree(old.pretraining, resumed)
    checkpoints = resumed / run_files.CHECKPOINT_DIR
    for path in checkpoints.glob("ckpt-4.*"):
        path.unlink()
    (checkpoints / "checkpoint").write_text('model_checkpoint_path: "ckpt-2"\nall_model_checkpoint_paths: "ckpt-2"\n')
    (resumed / run_files.DISCRIMINATOR_FILE).unlink()
    jobs = kind_predictions(old.root, tmp_path / "new")
    _, predicted = in_parallel(
        (run_python, ["-m", "electra_tf.pretrain", "--model_dir", str(resumed), "--data", old.data,
                      *[f"--{k}={v}" for k, v in PRETRAIN.items()]]),
        (run_python, ["-c", PREDICT_EACH, json.dumps(jobs), str(old.pretraining / "discriminator.keras"),
                      json.dumps(IDS)]),
    )
    # the old run folders by this code's predict: the old predict's records (tags, entities, answers, choices,
    # replaced-token scores of the old checkpoint), numbers within the tolerance
    for name in KIND_INPUTS:
        new = read_records(tmp_path / "new" / f"{name}.jsonl")
        previous = read_records(old.root / "old" / f"{name}.jsonl")
        assert len(previous) >= 2
        assert_same_records(new, previous)
    # the old run's `discriminator.keras` (its encoder) loaded by this code: the old outputs
    outputs = np.array(json.loads(predicted.stdout.splitlines()[-1]))
    assert outputs.shape == (*np.array(IDS).shape, PRETRAIN["hidden_dim"])
    np.testing.assert_allclose(outputs, old.outputs, atol=TOLERANCE, rtol=0)

    # resumed from the old ckpt-2 to step 4: the weights the old code's own ckpt-4 holds
    def weights(model_dir):
        path = run_files.latest_checkpoint(str(model_dir))
        reader = tf.train.load_checkpoint(path)
        return path, {n: reader.get_tensor(n) for n, _ in tf.train.list_variables(path)
                      if n.startswith("model/") and "seed_generator" not in n}

    (path, new), (old_path, previous) = weights(resumed), weights(old.pretraining)
    assert os.path.basename(path) == os.path.basename(old_path) == "ckpt-4"
    assert new.keys() == previous.keys() and len(new) > 50
    assert max(float(np.abs(new[n] - previous[n]).max()) for n in new) <= TOLERANCE
    assert (resumed / run_files.DISCRIMINATOR_FILE).exists()
