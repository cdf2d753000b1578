"""The one fine-tuning loop (`run_trials`): every argument check for the three kinds, per-epoch evaluation
with the best epoch kept and TensorBoard logs read back, the test split, GLUE submission files, the
non-finite-loss stop, strict JSON, and a finished run re-run."""

import glob
import json
import os
import types

import keras
import numpy as np
import pytest
import tensorflow as tf

from electra_tf import run_files, tasks
from electra_tf.tasks import FinetuneConfig
from electra_tf.tasks import finetune as run_trials
from helpers import make_run_dir, run_python, write_vocab
from test_bad_input_finetune import checksums
from test_finetune_strategies import write_toy_tasks
from test_journeys import conll_sentences, write_toy_choices
from toy_tasks import independent_dev_tags, write_conll, write_toy_pairs, write_toy_squad

pytestmark = pytest.mark.large  # slow tier: together these tests take minutes

KINDS = tuple(tasks.FINETUNED)  # every kind that fine-tunes (the registry)
# Each kind's toy task folder (a key of `data`): a kind the registry adds needs its own here.
TOY = {"classification": "text", "tagging": "text", "span_qa": "squad", "multiple_choice": "choices",
       "embedding": "pairs"}


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("data")
    return {"text": write_toy_tasks(root / "text", num_sentences=24),
            "squad": write_toy_squad(root / "squad", articles=(("train", 2), ("dev", 1))),
            "choices": write_toy_choices(root / "choices", splits=(("train", 16), ("dev", 8))),
            "pairs": write_toy_pairs(root / "pairs")}


def config_for(kind, data, init, output_dir, **overrides):
    """A tiny run of `kind` on the toy data."""
    assert kind in TOY, f"no toy task for the {kind} kind: add one to TOY"
    values = dict(task="toy", task_kind=kind, data_dir=data[TOY[kind]], init=str(init), output_dir=str(output_dir),
                  epochs=2, batch_size=8, learning_rate=2e-3, seq_length=32, verbose=0)
    if kind == "span_qa":
        values.update(data_dir=data["squad"], seq_length=48, doc_stride=16, max_query_length=12,
                      start_n_top=4, end_n_top=4)
    return FinetuneConfig(**dict(values, **overrides))


def cli_args(config):
    return ["-m", "electra_tf.finetune"] + [f"--{k}={v}" for k, v in vars(config).items() if v is not None]


# --- Every argument check, for every kind: refused before anything is written --------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_output_dir_equal_to_init_is_refused(kind, data, run_dir):
    before = checksums(run_dir)
    with pytest.raises(ValueError, match=r"`--output_dir=.*` is `--init`"):
        run_trials(config_for(kind, data, run_dir, run_dir))
    assert checksums(run_dir) == before


@pytest.mark.parametrize("kind", KINDS)
def test_output_dir_holding_another_artefact_is_refused(kind, data, run_dir, bert_vocab, tmp_path):
    other = make_run_dir(tmp_path / "pretraining_run", bert_vocab)
    before = checksums(other)
    with pytest.raises(FileExistsError, match=r"`--output_dir=.*pretraining_run` holds a pre-training run"):
        run_trials(config_for(kind, data, run_dir, other))
    assert checksums(other) == before
    # A fine-tuning output of other settings (another kind here): refused, not overwritten.
    finished = tmp_path / "finished"
    finished.mkdir()
    other_kind = KINDS[(KINDS.index(kind) + 1) % len(KINDS)]
    (finished / "results.json").write_text(json.dumps({"settings": {"task_kind": other_kind}}))
    (finished / "finetune_config.json").write_text("{}")
    before = checksums(finished)
    with pytest.raises(FileExistsError, match=rf"holds a finished fine-tuning run .* other settings: .*"
                                              rf"--task_kind='{kind}' vs '{other_kind}'"):
        run_trials(config_for(kind, data, run_dir, finished))
    assert checksums(finished) == before


@pytest.mark.parametrize("kind", KINDS)
def test_seq_length_beyond_the_position_table_and_a_larger_vocabulary_are_named(kind, data, run_dir, tmp_path):
    out = tmp_path / "out"
    with pytest.raises(ValueError, match=r"`--seq_length=256` exceeds the encoder's position table "
                                         r"\(max_sequence_length=128\)"):
        run_trials(config_for(kind, data, run_dir, out, seq_length=256))
    big = write_vocab(tmp_path / "big_vocab.txt", 30600)
    with pytest.raises(ValueError, match=r"big_vocab.txt has 30600 entries, more than the encoder's token table"):
        run_trials(config_for(kind, data, run_dir, out, vocab_file=big))
    assert not out.exists()


def test_qa_query_length_must_leave_room_for_the_context(data, run_dir, tmp_path):
    with pytest.raises(ValueError, match=r"`--max_query_length=61` leaves no room .* < `--seq_length=64`"):
        run_trials(config_for("span_qa", data, run_dir, tmp_path / "out", seq_length=64, max_query_length=61))
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("kind", KINDS)
def test_cli_strategy_tpu_without_tpu_is_one_line(kind, data, run_dir, tmp_path):
    out = tmp_path / "out"
    result = run_python(cli_args(config_for(kind, data, run_dir, out, strategy="tpu")), check=False)
    assert result.returncode == 1, result.stderr[-2000:]
    assert result.stderr.strip().splitlines()[-1].startswith("error: `--strategy=tpu` needs `--tpu`")
    assert "Traceback" not in result.stderr and not out.exists()


def test_cli_strategy_cpu_classification(data, run_dir, tmp_path):
    """`finetune --strategy cpu` (it crashed with AttributeError: the string reached a Strategy parameter)."""
    out = tmp_path / "out"
    result = run_python(cli_args(config_for("classification", data, run_dir, out, strategy="cpu", epochs=1)))
    assert "dev accuracy: mean" in result.stdout
    assert json.loads((out / "results.json").read_text())["hparams"]["strategy"] == "cpu"


@pytest.mark.large
@pytest.mark.parametrize("kind", ["tagging", "span_qa"])
def test_cli_strategy_cpu_tagging_and_qa(kind, data, run_dir, tmp_path):
    out = tmp_path / "out"
    result = run_python(cli_args(config_for(kind, data, run_dir, out, strategy="cpu", epochs=1)))
    assert "results: " in result.stdout and (out / "results.json").exists()


@pytest.mark.large  # 20-40 s on 2 cores
def test_cli_non_finite_loss_stops_naming_the_step_and_saves_nothing(data, run_dir, tmp_path):
    out = tmp_path / "out"
    result = run_python(cli_args(config_for("classification", data, run_dir, out, learning_rate=1e30,
                                            save_checkpoints_steps=1)), check=False)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1].startswith("error: Non-finite loss (")
    assert " at step " in result.stderr.strip().splitlines()[-1]
    assert not (out / "classifier.keras").exists() and not (out / "results.json").exists()
    from electra_tf.sources.named_checkpoint import all_finite

    for index in glob.glob(str(out / "trials" / "*" / "checkpoints" / "*.index")):
        reader = tf.train.load_checkpoint(index[:-len(".index")])
        values = [reader.get_tensor(n) for n, _ in tf.train.list_variables(index[:-len(".index")])]
        assert all_finite([v for v in values if getattr(v, "dtype", None) is not None and v.dtype.kind == "f"])


def test_json_files_never_hold_nan(tmp_path):
    from electra_tf.finetuning.recipe import summarize

    with pytest.raises(ValueError, match="Out of range float values are not JSON compliant"):
        run_files.write_results(str(tmp_path), {"f1": float("nan")}, {})
    assert summarize([float("nan"), float("nan")])["mean"] is None
    assert summarize([1.0, None, 3.0])["mean"] == 2.0


# --- Per-epoch evaluation, the kept epoch, TensorBoard, a finished run -------------------------------------


def scalars(log_dir, tag):
    """step -> value of every `tag` scalar in the event files under `log_dir`."""
    values = {}
    for path in glob.glob(os.path.join(log_dir, "**", "events*"), recursive=True):
        for event in tf.compat.v1.train.summary_iterator(path):
            for value in event.summary.value:
                if value.tag == tag:
                    values[event.step] = float(tf.make_ndarray(value.tensor))
    return values


def independent_accuracy(model_path, vocab_file, tsv):
    """Dev accuracy of a saved classifier, packed and scored here, not through the package's evaluation."""
    from electra_tf.data.tokenizer import WordPieceTokenizer

    model = keras.saving.load_model(model_path, compile=False)
    rows = [line.rstrip("\n").split("\t") for line in open(tsv)][1:]
    tokenizer = WordPieceTokenizer(vocab_file)
    inputs = tokenizer.pack(tf.constant([r[0] for r in rows]), seq_length=32)
    predicted = model(inputs, training=False).numpy().argmax(-1)
    return float(np.mean(predicted == np.array([int(r[1]) for r in rows])))


@pytest.mark.large  # 20-40 s on 2 cores
@pytest.mark.parametrize("keep", ["best", "last"])
def test_each_epoch_is_scored_logged_and_the_kept_epoch_is_the_saved_model(keep, data, run_dir, tmp_path, capsys):
    out = tmp_path / "out"
    config = config_for("classification", data, run_dir, out, epochs=4, learning_rate=1e-2, keep=keep,
                        log_steps=1)
    results = run_trials(config)
    trial = results["trials"][0]
    records = trial["epochs"]
    accuracies = [r["dev"]["accuracy"] for r in records]
    assert [r["epoch"] for r in records] == [1, 2, 3, 4]
    kept = int(np.argmax(accuracies)) + 1 if keep == "best" else 4
    assert trial["kept_epoch"] == kept and results["keep"] == keep
    assert trial["dev"] == records[kept - 1]["dev"]
    # The saved model is the kept epoch's: scored independently.
    saved = independent_accuracy(out / "classifier.keras", out / "vocab.txt", os.path.join(data["text"], "dev.tsv"))
    assert saved == pytest.approx(trial["dev"]["accuracy"], abs=1e-9)
    # One readable line per epoch.
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("epoch ")]
    assert len(lines) == 4 and lines[0].startswith("epoch 1/4: train loss ") and "dev accuracy " in lines[0]
    assert lines[0].endswith("(best)")
    # TensorBoard: every dev metric per epoch, train loss and learning rate per step.
    log_dir = str(out / "logs")
    assert scalars(log_dir, "dev/accuracy") == pytest.approx({i + 1: a for i, a in enumerate(accuracies)})
    assert set(scalars(log_dir, "dev/mcc")) == {1, 2, 3, 4}
    steps = 4 * 3  # 24 rows, batch 8
    assert set(scalars(log_dir, "train/loss")) == set(range(1, steps + 1))
    assert set(scalars(log_dir, "train/learning_rate")) == set(range(1, steps + 1))
    assert not (out / "trials").exists()  # the checkpoints go once the results are written
    # The same command again: says so, changes nothing.
    before = checksums(out)
    again = run_trials(config)
    assert "already finished; results in" in capsys.readouterr().out
    assert again == json.loads((out / "results.json").read_text()) and checksums(out) == before


def test_zero_epochs_score_and_save_the_init_model_as_it_is(data, run_dir, tmp_path, capsys):
    """`--epochs 0`: no update; the dev score is the untrained head's, and the saved model is that model."""
    out = tmp_path / "out"
    results = run_trials(config_for("classification", data, run_dir, out, epochs=0))
    trial = results["trials"][0]
    assert trial["kept_epoch"] == 0 and [r["epoch"] for r in trial["epochs"]] == [0]
    assert trial["train_loss"] == [None] and trial["train_examples_per_second"] == 0
    saved = independent_accuracy(out / "classifier.keras", out / "vocab.txt", os.path.join(data["text"], "dev.tsv"))
    assert saved == pytest.approx(trial["dev"]["accuracy"], abs=1e-9)
    assert "epochs 0: dev accuracy " in capsys.readouterr().out


def test_early_stopping_after_patience_epochs_without_a_better_score(data, run_dir, tmp_path):
    config = config_for("classification", data, run_dir, tmp_path / "out", epochs=5, learning_rate=1e-9,
                        early_stopping_patience=1)
    trial = run_trials(config)["trials"][0]
    assert len(trial["epochs"]) == 2 and trial["kept_epoch"] == 1  # epoch 2 is not better than epoch 1


# --- Test splits -------------------------------------------------------------------------------------------


def test_conll_style_run_prints_dev_f1_per_epoch_keeps_the_best_and_scores_test(run_dir, tmp_path):
    from seqeval.metrics import f1_score

    data = write_conll(tmp_path / "conll", splits=(("train", 48), ("dev", 16), ("test", 16)))
    out = tmp_path / "out"
    config = FinetuneConfig(task="toy_ner", task_kind="tagging", data_dir=data, init=run_dir, output_dir=str(out),
                            epochs=3, batch_size=8, learning_rate=3e-3, seq_length=32, verbose=0)
    result = run_python(cli_args(config))
    lines = [line for line in result.stdout.splitlines() if line.startswith("epoch ")]
    assert len(lines) == 3 and all(" dev entity_f1 " in line for line in lines)
    results = json.loads((out / "results.json").read_text())
    trial = results["trials"][0]
    f1s = [r["dev"]["entity_f1"] for r in trial["epochs"]]
    assert trial["kept_epoch"] == int(np.argmax(f1s)) + 1
    assert "test entity_f1" in result.stdout or "test_entity_f1" in results["summary"]
    model = keras.saving.load_model(out / "token_classifier.keras")
    test = [types.SimpleNamespace(words=words, tags=tags)  # read without the package's CoNLL reader
            for words, tags in conll_sentences(os.path.join(data, "test.txt"))]
    predicted = independent_dev_tags(model, str(out / "vocab.txt"), test, results["labels"])
    assert trial["test"]["entity_f1"] == pytest.approx(f1_score([list(s.tags) for s in test], predicted), abs=1e-9)


@pytest.mark.large  # 20-40 s on 2 cores
def test_glue_layout_unlabelled_test_split_gets_the_submission_file(run_dir, tmp_path):
    from electra_tf.data.tokenizer import WordPieceTokenizer

    data = tmp_path / "sst2"
    data.mkdir()
    rng = np.random.RandomState(0)
    words = ["good", "bad", "film", "the", "was", "plot"]
    for split, count in (("train", 24), ("dev", 8)):
        rows = [" ".join(words[i] for i in rng.randint(0, 6, 5)) for _ in range(count)]
        (data / f"{split}.tsv").write_text("sentence\tlabel\n" + "".join(f"{r}\t{int('good' in r)}\n" for r in rows))
    test_rows = [" ".join(words[i] for i in rng.randint(0, 6, 5)) for _ in range(7)]
    (data / "test.tsv").write_text("index\tsentence\n" + "".join(f"{i + 100}\t{r}\n" for i, r in enumerate(test_rows)))
    out = tmp_path / "out"
    config = FinetuneConfig(task="SST-2", data_dir=str(data), init=run_dir, output_dir=str(out), epochs=1,
                            batch_size=8, seq_length=32, verbose=0)
    run_python(cli_args(config))
    lines = (out / "SST-2.tsv").read_text().splitlines()
    assert lines[0] == "index\tprediction" and [l.split("\t")[0] for l in lines[1:]] == [str(i + 100) for i in range(7)]
    model = keras.saving.load_model(out / "classifier.keras", compile=False)
    inputs = WordPieceTokenizer(str(out / "vocab.txt")).pack(tf.constant(test_rows), seq_length=32)
    expected = model(inputs, training=False).numpy().argmax(-1)
    assert [l.split("\t")[1] for l in lines[1:]] == [str(i) for i in expected]
    assert json.loads((out / "results.json").read_text())["test_submissions"] == ["SST-2.tsv"]


def test_submission_file_names_are_the_official_ones():
    assert run_files.submission_file("mnli", "test") == "MNLI-m.tsv"
    assert run_files.submission_file("mnli", "test_mismatched") == "MNLI-mm.tsv"
    assert run_files.submission_file("cola", "test") == "CoLA.tsv"
    assert run_files.submission_file("my_task", "test") == "my_task.tsv"
