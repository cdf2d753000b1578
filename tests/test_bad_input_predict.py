"""`python -m electra_tf.predict` on bad input, run as a user runs it: its outputs never replace its model, its
input, its `--passages` or another artefact's files; blank lines keep their place; a folder it cannot write is
named by its flag; gold tags the model lacks are refused as unknown labels are; CoNLL tags are read in the file's
own scheme; `--passages` errors name `--passages`; a lone surrogate escape in JSON is named by file and line;
closed stdout or stderr; SIGTERM stops it at once (exit 143) leaving no partial file. Each checks the exit status,
the one `error:` line and, by checksum, that nothing that existed before changed."""

import json
import os
import re
import signal
import subprocess
import sys

import keras
import pytest

from helpers import REPO, LineReader, digests, exit_status, run_python, shared_data
from toy_tasks import CONLL_IOB1 as IOB1
from electra_tf.tasks import get as task_kind  # the registry: a kind by name

ClassificationKind = task_kind("classification")
EmbeddingKind = task_kind("embedding")
TaggingKind = task_kind("tagging")

pytestmark = pytest.mark.large  # slow tier: together these tests take minutes

LABELS = ["negative", "positive"]
TAGS = ["O", "B-LOC", "B-PER", "I-LOC", "I-PER"]  # no MISC, no ORG


def errors(result):
    return [line for line in result.stderr.splitlines() if line.startswith("error: ")]


def predict(*args, check=False, **kwargs):
    return run_python(["-m", "electra_tf.predict", *map(str, args)], check=check, **kwargs)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A tiny classifier, a tiny tagger and a tiny embedder, as `finetune` leaves them (untrained), and inputs."""
    from electra_tf import run_files
    from electra_tf.models.encoder import ElectraEncoder
    ElectraClassifier = task_kind("classification").model_class
    ElectraEmbedder = task_kind("embedding").model_class
    ElectraTokenClassifier = task_kind("tagging").model_class

    vocab = shared_data("vocab", "bert_uncased_vocab.txt").read_text()
    root = tmp_path_factory.mktemp("predict_bad")
    for i, (name, build, file_name, config) in enumerate((
            ("ft", lambda e: ElectraClassifier(e, num_labels=2), ClassificationKind.model_file,
             {"task": "toy", "kind": "classification", "label_names": LABELS, "regression": False, "pair": False,
              "seq_length": 16}),
            ("tagger", lambda e: ElectraTokenClassifier(e, num_labels=len(TAGS)), TaggingKind.model_file,
             {"task": "ner", "kind": "tagging", "label_names": TAGS, "scheme": "IOB2", "seq_length": 16}),
            ("embedder", ElectraEmbedder, EmbeddingKind.model_file,
             {"task": "faq", "kind": "embedding", "seq_length": 16}))):
        keras.utils.set_random_seed(20 + i)
        encoder = ElectraEncoder(vocab_size=30522, num_layers=1, num_heads=2, hidden_dim=16, embedding_dim=16,
                                 intermediate_dim=32, max_sequence_length=64)
        model = build(encoder)
        model.build()
        (root / name).mkdir()
        model.save(str(root / name / file_name))
        (root / name / run_files.VOCAB_FILE).write_text(vocab)
        (root / name / run_files.FINETUNE_CONFIG_FILE).write_text(json.dumps(config))
        (root / name / run_files.RESULTS_FILE).write_text("{}")
    (root / "other_ft").mkdir()  # another fine-tuning output
    (root / "other_ft" / run_files.RESULTS_FILE).write_text(json.dumps({"trials": [], "metric": "accuracy"}))
    (root / "pre").mkdir()  # a pre-training run
    (root / "pre" / run_files.CONFIG_FILE).write_text("{}")
    (root / "pre" / run_files.DISCRIMINATOR_FILE).write_text("model")
    (root / "serving" / "toy" / "1").mkdir(parents=True)  # a TF Serving export
    (root / "serving" / "toy" / "1" / run_files.SAVED_MODEL_FILE).write_text("graph")
    (root / "dev.tsv").write_text("sentence\tlabel\nA very good film!\t1\nboring\t0\n")
    (root / "queries.txt").write_text("where does the cat live\nwhat does the dog eat\n")
    (root / "passages.txt").write_text("the cat lives in the barn\nthe dog eats meat\nthe cow eats grass\n")
    (root / "work").mkdir()
    return root


REFUSED = [
    ("--output_file", "ft/classifier.keras", r"`--output_file=.*classifier\.keras` lies inside `--init="),
    ("--output_file", "dev.tsv", r"`--output_file=.*dev\.tsv` is `--input="),
    ("--metrics_file", "ft/results.json", r"`--metrics_file=.*results\.json` lies inside `--init="),
    ("--output_file", "other_ft/predictions.jsonl", r"`--output_file=.*` lies inside a fine-tuning output"),
    ("--output_file", "pre/predictions.jsonl", r"`--output_file=.*` lies inside a pre-training run"),
    ("--metrics_file", "serving/toy/1/metrics.json", r"`--metrics_file=.*` lies inside an exported SavedModel"),
    ("--output_file", "serving/toy/predictions.jsonl", r"`--output_file=.*` lies inside a TF Serving export"),
    ("--metrics_file", "work/out.jsonl", r"`--metrics_file=.*out\.jsonl` is also `--output_file`"),
]


def test_outputs_are_checked_before_anything_loads(runs):
    """Every refused case, through `writing.check_outputs` (what `predict` calls first); an ordinary file passes."""
    from electra_tf.predicting.writing import check_outputs

    for flag, target, message in REFUSED:
        outputs = {"output_file": str(runs / "work" / "out.jsonl"), flag[2:]: str(runs / target)}
        with pytest.raises((ValueError, FileExistsError)) as error:
            check_outputs(outputs, {"input": str(runs / "dev.tsv"), "init": str(runs / "ft")})
        assert re.search(message, str(error.value)), str(error.value)
    (runs / "work" / "earlier.jsonl").write_text("an earlier run's predictions\n")
    check_outputs({"output_file": str(runs / "work" / "earlier.jsonl"), "metrics_file": None},
                  {"input": "-", "init": str(runs / "ft")})
    (runs / "work" / "earlier.jsonl").unlink()
    assert not [name for name in os.listdir(runs / "work") if name.startswith(".partial")]


@pytest.mark.parametrize("flag,target,message", [
    pytest.param(*case, id=case[1], marks=[pytest.mark.large] if i > 1 else []) for i, case in enumerate(REFUSED)])
def test_outputs_never_replace_the_model_the_input_or_another_artefacts_files(runs, flag, target, message):
    before = digests(runs)
    result = predict("--init", runs / "ft", "--input", runs / "dev.tsv", "--output_file", runs / "work" / "out.jsonl",
                     flag, runs / target)
    assert (result.returncode, result.stdout) == (1, ""), result.stderr[-2000:]
    assert len(errors(result)) == 1 and re.search(message, errors(result)[0]), result.stderr[-2000:]
    assert digests(runs) == before


def test_a_folder_it_cannot_write_is_named_by_its_flag(runs, tmp_path):
    """Before the model loads; the message names `--output_file`, not a temporary file."""
    if os.geteuid() != 0:
        folder = tmp_path / "read_only"
        folder.mkdir()
        folder.chmod(0o555)
    else:  # root writes anywhere but where the kernel refuses files (sysfs)
        folder = "/sys"
        try:
            os.close(os.open("/sys/.electra_tf_probe", os.O_WRONLY | os.O_CREAT | os.O_EXCL))
            os.remove("/sys/.electra_tf_probe")
            pytest.skip("no folder this user cannot write")
        except PermissionError:
            pass
    before = digests(runs)
    result = predict("--init", runs / "ft", "--input", runs / "dev.tsv", "--output_file",
                     os.path.join(folder, "predictions.jsonl"))
    assert result.returncode == 1, result.stderr[-2000:]
    assert errors(result) == [f"error: Cannot write `--output_file={os.path.join(folder, 'predictions.jsonl')}`: "
                              f"Permission denied (in {folder})."]
    assert ".partial" not in result.stderr and digests(runs) == before


@pytest.mark.large
def test_every_input_line_gives_one_record_with_its_line_and_files_get_the_umask_mode(runs, tmp_path):
    """Text lines with blanks: one record per line, blanks `skipped`; TSV rows carry their line; 0666 less umask."""
    text = tmp_path / "reviews.txt"
    text.write_text("A very good film!\n\nboring\n   \nThe plot is fine\n")
    out, metrics = tmp_path / "out.jsonl", tmp_path / "metrics.json"
    result = predict("--init", runs / "ft", "--input", text, "--output_file", out, preexec_fn=lambda: os.umask(0o027))
    assert result.returncode == 0, result.stderr[-2000:]
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["line"] for r in records] == [1, 2, 3, 4, 5]
    assert [r.get("skipped") for r in records] == [None, "blank line", None, "blank line", None]
    assert [set(r) for r in records[::2]] == [{"line", "label", "probabilities"}] * 3
    assert records[1] == {"line": 2, "skipped": "blank line"}
    assert oct(out.stat().st_mode & 0o777) == oct(0o640)

    table = tmp_path / "dev.tsv"
    table.write_text("sentence\tlabel\nA very good film!\t1\n\nboring\t0\n")
    result = predict("--init", runs / "ft", "--input", table, "--output_file", out, "--metrics_file", metrics)
    assert result.returncode == 0, result.stderr[-2000:]
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["line"], "label" in r, r.get("skipped")) for r in records] == [
        (2, True, None), (3, False, "blank line"), (4, True, None)]
    assert json.loads(metrics.read_text())["examples"] == 2
    assert oct(metrics.stat().st_mode & 0o777) == oct(0o666 & ~current_umask())
    assert sorted(os.listdir(tmp_path)) == ["dev.tsv", "metrics.json", "out.jsonl", "reviews.txt"]


def current_umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_reading_a_gold_tag_the_model_lacks_is_an_error_as_an_unknown_label_is(tmp_path):
    from electra_tf.predicting.inputs import read_examples

    path = tmp_path / "dev.conll"
    path.write_text("EU NNP B-ORG\nrejects VBZ O\n")
    with pytest.raises(ValueError, match=r"dev\.conll:1: gold entity type 'ORG' is none of the model's types "
                                         r"\['LOC', 'PER'\]"):
        read_examples(str(path), "auto", TaggingKind, {"label_names": TAGS, "spans": True})
    path = tmp_path / "dev.jsonl"
    path.write_text('{"words": ["EU", "rejects"], "tags": ["B-MISC", "O"]}\n')
    with pytest.raises(ValueError, match=r"dev\.jsonl:1: gold entity type 'MISC' is none of the model's types"):
        read_examples(str(path), "auto", TaggingKind, {"label_names": TAGS, "spans": True})
    path.write_text('{"words": ["EU", "rejects"], "tags": ["NNP", "VBD"]}\n')  # POS: tags as they are
    with pytest.raises(ValueError, match=r"dev\.jsonl:1: gold tag 'VBD' is none of the model's tags \['NNP'"):
        read_examples(str(path), "auto", TaggingKind, {"label_names": ["NNP", "VBZ"], "spans": False})
    path = tmp_path / "dev.tsv"
    path.write_text("sentence\tlabel\ngood\tneutral\n")
    with pytest.raises(ValueError, match=r"dev\.tsv:2: label 'neutral' is none of the model's labels"):
        read_examples(str(path), "auto", ClassificationKind, {"label_names": LABELS})


@pytest.mark.large
def test_gold_tags_the_model_lacks_are_one_error_line(runs, tmp_path):
    path = tmp_path / "dev.txt"
    path.write_text(IOB1 + "\nEU NNP I-NP I-ORG\nrejects VBZ I-VP O\n")
    before = digests(runs)
    result = predict("--init", runs / "tagger", "--input", path, "--metrics_file", tmp_path / "metrics.json")
    assert (result.returncode, result.stdout) == (1, "")
    assert errors(result) == [f"error: {path}:17: gold entity type 'ORG' is none of the model's types ['LOC', "
                              "'PER']: the model cannot predict it, so it cannot be scored (predict without the gold "
                              "tags, or with a model trained on them)."]
    assert digests(runs) == before and not (tmp_path / "metrics.json").exists()


@pytest.mark.large
def test_an_iob1_file_is_read_as_iob1_and_scored_as_seqeval_scores_it(runs, tmp_path):
    """The scheme is detected and said (a log line); entity scores equal seqeval's on the file's own tags."""
    import seqeval.metrics

    path = tmp_path / "eng.testa"
    path.write_text(IOB1)
    metrics = tmp_path / "metrics.json"
    result = predict("--init", runs / "tagger", "--input", path, "--input_format", "conll", "--metrics_file", metrics,
                     check=True)
    assert "span tags read as IOB1 (I-PER starts a span at line 3)" in result.stderr
    assert "ill-formed" not in result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["line"] for r in records] == [3, 9]  # each sentence's first word
    gold = [[line.split()[-1] for line in block.splitlines()] for block in IOB1.split("\n\n")[1:]]
    predicted = [r["tags"] for r in records]  # CoNLL words are served as they are: one tag per word
    scores = json.loads(metrics.read_text())
    assert scores["entity_f1"] == pytest.approx(seqeval.metrics.f1_score(gold, predicted))
    assert scores["entity_precision"] == pytest.approx(seqeval.metrics.precision_score(gold, predicted))
    assert scores["num_true"] == len(seqeval.metrics.sequence_labeling.get_entities(gold)) == 6  # Berlin: B-
    as_iob2 = predict("--init", runs / "tagger", "--input", path, "--tag_scheme", "IOB2", "--metrics_file",
                      tmp_path / "iob2.json", check=True)
    assert "ill-formed IOB2" in as_iob2.stderr  # the user said IOB2: the warning stays
    assert json.loads((tmp_path / "iob2.json").read_text()) == scores  # IOB1 and IOB2 read the spans alike


@pytest.mark.large
def test_sigterm_stops_prediction_at_once_with_143_and_no_partial_file(runs, tmp_path):
    """A long input: SIGTERM once the progress line shows prediction started; stopped inside the pass (the
    progress line, drawn at the last example, never reaches it), exit 143, no file written."""
    text = tmp_path / "long.txt"
    text.write_text("".join(f"review number {i} of a rather long film\n" for i in range(20000)))
    out = tmp_path / "predictions.jsonl"
    out.write_text("an earlier file\n")
    env = {**os.environ, "PYTHONPATH": str(REPO), "TF_CPP_MIN_LOG_LEVEL": "2"}
    process = subprocess.Popen([sys.executable, "-m", "electra_tf.predict", "--init", str(runs / "ft"), "--input",
                                str(text), "--output_file", str(out), "--batch_size", "4", "--progress"],
                               cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    stderr = LineReader(process.stderr)  # text mode: each `\r`-redrawn progress state is a line
    try:
        stderr.wait_for("predict: 4/20000")
        process.send_signal(signal.SIGTERM)
        code = exit_status(process, "SIGTERM during prediction")
    finally:
        process.kill()
    stderr = stderr.text()
    assert code == 143, stderr[-2000:]
    assert "predict: stopped by SIGTERM; no output file written" in stderr
    assert "predict: 20000/20000" not in stderr, stderr[-2000:]
    assert out.read_text() == "an earlier file\n"
    assert sorted(os.listdir(tmp_path)) == ["long.txt", "predictions.jsonl"]


@pytest.mark.parametrize("flag,how", [pytest.param(*case, id=case[1], marks=[pytest.mark.large] if i else [])
                                      for i, case in enumerate((("--output_file", "itself"),
                                                                ("--output_file", "a symlink"),
                                                                ("--metrics_file", "a hard link")))])
def test_an_output_never_replaces_the_passages_file_directly_or_through_a_link(runs, tmp_path, flag, how):
    """The guard compares files, not spellings: the passages file itself, a symlink to it, a hard link of it."""
    passages = runs / "passages.txt"
    target = {"itself": passages, "a symlink": tmp_path / "link.txt", "a hard link": tmp_path / "hard.txt"}[how]
    if how == "a symlink":
        target.symlink_to(passages)
    elif how == "a hard link":
        os.link(passages, target)
    before = digests(runs)
    result = predict("--init", runs / "embedder", "--input", runs / "queries.txt", "--passages", passages, flag, target)
    assert (result.returncode, result.stdout) == (1, ""), result.stderr[-2000:]
    assert errors(result) == [f"error: `{flag}={target}` is `--passages={passages}`: writing it would replace what "
                              f"is being read. Choose another {flag}."], result.stderr[-2000:]
    assert digests(runs) == before and passages.read_text().startswith("the cat lives in the barn\n")


PASSAGES_ERRORS = [  # (case, the passages file's text (None: a folder), the error after `error: `)
    ("empty", "", "{path}: no passages: `--passages={path}` is empty or blank; give the passages to rank, one per "
     "line."),
    ("blank", "  \n\n\t\n", "{path}: no passages: `--passages={path}` is empty or blank; give the passages to rank, "
     "one per line."),
    ("folder", None, "{path} is a folder; --passages takes a file."),
]


@pytest.mark.parametrize("case,text,message", [
    pytest.param(*case, id=case[0], marks=[pytest.mark.large] if i else []) for i, case in enumerate(PASSAGES_ERRORS)])
def test_passages_errors_name_passages(runs, tmp_path, case, text, message):
    path = tmp_path / "passages.txt"
    if text is None:
        path.mkdir()
    else:
        path.write_text(text)
    before = digests(runs)
    out = tmp_path / "out.jsonl"
    result = predict("--init", runs / "embedder", "--input", runs / "queries.txt", "--passages", path,
                     "--output_file", out)
    assert (result.returncode, result.stdout) == (1, ""), result.stderr[-2000:]
    assert errors(result) == ["error: " + message.format(path=path)], result.stderr[-2000:]
    assert "Traceback" not in result.stderr and digests(runs) == before and not out.exists()


def test_passages_with_a_model_that_takes_none_are_refused_naming_the_flag_and_the_kind(runs, tmp_path):
    """Before the model loads; the line says which models read `--passages`, not another kind's sources."""
    before = digests(runs)
    result = predict("--init", runs / "ft", "--input", runs / "queries.txt", "--passages", runs / "passages.txt")
    assert (result.returncode, result.stdout) == (1, ""), result.stderr[-2000:]
    assert errors(result) == [f"error: `--passages` applies to embedding models (a `finetune --task_kind embedding` "
                              f"output dir, or its `export --format serving`); --init {runs / 'ft'} is a "
                              "classification model."]
    assert digests(runs) == before


@pytest.mark.large
def test_a_text_passages_file_whose_first_line_starts_with_a_brace_is_text(runs, tmp_path):
    """Told as `--input` is: the first line is no JSON object and no later line is one, so the file is text lines;
    each query ranks all three passages, the brace line among them as written."""
    lines = ["{braces} mark a block in C", "the cat lives in the barn", "the dog eats meat"]
    path = tmp_path / "passages.txt"
    path.write_text("\n".join(lines) + "\n")
    result = predict("--init", runs / "embedder", "--input", runs / "queries.txt", "--passages", path)
    assert result.returncode == 0, result.stderr[-2000:]
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["line"] for r in records] == [1, 2]
    for record in records:
        assert sorted((hit["index"], hit["text"]) for hit in record["top_k"]) == list(enumerate(lines))


def test_a_lone_surrogate_escape_in_json_lines_is_named_by_file_and_line(runs, tmp_path):
    """`\\ud800` alone decodes to no character (TensorFlow cannot make a tensor of it): refused naming the file,
    the line and the column; the pair `\\ud83d\\ude00` (one emoji) on line 1 reads."""
    path = tmp_path / "queries.jsonl"
    path.write_text('{"text": "a smile \\ud83d\\ude00"}\n{"text": "bad \\ud800"}\n')
    out = tmp_path / "out.jsonl"
    before = digests(runs)
    result = predict("--init", runs / "embedder", "--input", path, "--output_file", out)
    assert (result.returncode, result.stdout) == (1, ""), result.stderr[-2000:]
    assert errors(result) == [f"error: {path}:2: \\ud800 at column 15 is a lone UTF-16 surrogate (half of a pair), "
                              "which is no character: write the character itself, or both escapes of its pair."]
    assert "Traceback" not in result.stderr and digests(runs) == before and not out.exists()


def with_closed(streams, *args):
    """`python -m electra_tf.predict args` with `streams` closed (a shell redirection: `>&-`, `2>&-`), as a shell
    runs it; the others captured."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "TF_CPP_MIN_LOG_LEVEL": "2"}
    return subprocess.run(["bash", "-c", f'exec "$@" {streams}', "bash", sys.executable, "-m", "electra_tf.predict",
                           *map(str, args)], cwd=REPO, env=env, capture_output=True, text=True, timeout=600)


def test_predictions_to_a_closed_stdout_are_one_error_line(runs, tmp_path):
    """`predict >&-` without `--output_file`: the records would be lost; one line, exit 1, before the model loads."""
    before = digests(runs)
    result = with_closed(">&-", "--init", runs / "ft", "--input", runs / "dev.tsv", "--metrics_file",
                         tmp_path / "metrics.json")
    assert result.returncode == 1, result.stderr[-2000:]
    assert errors(result) == ["error: stdout is closed: the output would be lost. Give --output_file, or run with "
                              "stdout open."]
    assert "Traceback" not in result.stderr and digests(runs) == before and os.listdir(tmp_path) == []


@pytest.mark.large
def test_a_closed_stdout_with_an_output_file_or_a_closed_stderr_predicts_and_exits_0(runs, tmp_path):
    """`predict --output_file F >&-` writes F; `predict 2>&-` writes the records to stdout: the same records, exit 0,
    no traceback, nothing else written."""
    out = tmp_path / "predictions.jsonl"
    to_file = with_closed(">&-", "--init", runs / "ft", "--input", runs / "dev.tsv", "--output_file", out)
    assert to_file.returncode == 0 and "Traceback" not in to_file.stderr, to_file.stderr[-2000:]
    to_stdout = with_closed("2>&-", "--init", runs / "ft", "--input", runs / "dev.tsv")
    assert (to_stdout.returncode, to_stdout.stderr) == (0, "")
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["line"] for r in records] == [2, 3] and set(records[0]) == {"line", "label", "probabilities"}
    assert [json.loads(line) for line in to_stdout.stdout.splitlines()] == records
    assert os.listdir(tmp_path) == ["predictions.jsonl"]


def test_passages_and_the_input_both_from_stdin_are_refused(runs):
    """Stdin is read once: the second reader would find nothing. One line before the model loads."""
    result = predict("--init", runs / "embedder", "--passages", "-", input="where does the cat live\n")
    assert (result.returncode, result.stdout) == (1, ""), result.stderr[-2000:]
    assert errors(result) == ["error: `--passages=-` and the input both read stdin, which is read once: give --input "
                              "or --passages a file."]


def test_an_input_whose_first_line_starts_with_a_brace_is_text_unless_it_is_json(tmp_path):
    """`--input` by content, as `--passages`: a brace-led text line is text; a JSON document is still refused as
    the format it is (a classifier reads no SQuAD JSON); JSON Lines with a damaged first line name that line."""
    from electra_tf import tasks
    from electra_tf.predicting.inputs import read_examples

    settings = {"label_names": LABELS}
    path = tmp_path / "reviews.txt"
    path.write_text("{sic} a fine film\ndull\n")
    examples = read_examples(str(path), "auto", ClassificationKind, settings, extensions=tasks.format_extensions())
    assert [(e.inputs, e.line) for e in examples] == [({"text": "{sic} a fine film"}, 1), ({"text": "dull"}, 2)]
    path.write_text('{\n  "data": []\n}\n')
    with pytest.raises(ValueError, match="a classification model reads tsv, csv, jsonl, text, not squad"):
        read_examples(str(path), "auto", ClassificationKind, settings, extensions=tasks.format_extensions())
    path.write_text('{"text": "good"\n{"text": "bad"}\n')
    with pytest.raises(ValueError, match=re.escape(f"{path}:1: not valid JSON")):
        read_examples(str(path), "auto", ClassificationKind, settings, extensions=tasks.format_extensions())
