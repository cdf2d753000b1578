"""`python -m electra_tf.predict`: on a fine-tuning dir and on its serving export, the predictions are the
served SavedModel's outputs (loaded in a fresh process that imports only tensorflow and tensorflow_text);
stdin; gold labels scored against independent computations (seqeval, the official SQuAD formulas); bad
input files end with one `error:` line and exit 1."""

import json
import os
import re

import numpy as np
import pytest

from helpers import finetuned_runs, official_exact, official_f1, run_python, shared_data

from electra_tf import tasks as kinds
from electra_tf.tasks import get as task_kind  # the registry: a kind by name

ClassificationKind = task_kind("classification")
SpanQAKind = task_kind("span_qa")
TaggingKind = task_kind("tagging")

pytestmark = pytest.mark.large  # slow tier: together these tests take minutes

LABELS = ["negative", "positive"]
TAGS = ["O", "B-LOC", "B-PER", "I-LOC", "I-PER"]
TSV = ("sentence\tlabel\n"
       "A very good film!\t1\n"
       "\t0\n"
       "boring boring boring and far too long, with actors who seem bored themselves\t0\n"
       "Café déjà vu, naïve résumé\tpositive\n"
       'He said "not bad" twice\tnegative\n'
       "The plot is fine\t1\n")
CONLL = ("-DOCSTART- -X- -X- O\n\n"
         "Peter NNP B-NP B-PER\nBlackburn NNP I-NP I-PER\nlives VBZ B-VP O\nin IN B-PP O\nZürich NNP B-NP B-LOC\n"
         ". . O O\n\n"
         "The DT B-NP O\nU.S. NNP I-NP B-LOC\nand CC O O\nNew NNP B-NP B-LOC\nYork NNP I-NP I-LOC\n"
         "met VBD B-VP O\nO'Neil NNP B-NP B-PER\n\n"
         "EU NNP B-NP B-LOC\nrejects VBZ B-VP O\nGerman JJ B-NP O\ncall NN I-NP O\nto TO B-VP O\n"
         "boycott VB I-VP O\nBritish JJ B-NP O\nlamb NN I-NP O\n. . O O\n")
SQUAD = {"version": "1.1", "data": [{"title": "t", "paragraphs": [
    {"context": "Paris is the capital of France. It lies on the Seine, a river of 777 km.",
     "qas": [{"id": "q1", "question": "What is the capital of France?",
              "answers": [{"text": "Paris", "answer_start": 0}]},
             {"id": "q2", "question": "Which river?", "answers": [{"text": "the Seine", "answer_start": 44},
                                                                  {"text": "Seine", "answer_start": 48}]}]},
    {"context": "Dear Sir, thank you for the parcel. Yours, Margaret Hale (Milton, 1854). " * 3,
     "qas": [{"id": "q3", "question": "Who wrote the letter?",
              "answers": [{"text": "Margaret Hale", "answer_start": 43}]}]}]}]}

# Runs in a fresh interpreter: the served SavedModel's outputs on the same text.
SERVED = r"""
import json, sys
import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401
requests = json.load(open(sys.argv[1]))
out = {}
for name, (path, signature, inputs) in requests.items():
    signatures = tf.saved_model.load(path).signatures
    signature = signature if signature in signatures else "serving_default"
    values = signatures[signature](**{k: tf.constant(v) for k, v in inputs.items()})
    decode = np.vectorize(bytes.decode, otypes=[str])
    out[name] = {k: (decode(v.numpy()) if v.dtype == tf.string else v.numpy()).tolist() for k, v in values.items()}
assert not any(m.startswith(("electra_tf", "keras_hub")) for m in sys.modules), "imported project code"
json.dump(out, open(sys.argv[2], "w"))
"""


def conll_sentences():
    sentences, words, tags = [], [], []
    for line in CONLL.splitlines() + [""]:
        columns = line.split()
        if not columns or columns[0] == "-DOCSTART-":
            if words:
                sentences.append((words, tags))
            words, tags = [], []
        else:
            words.append(columns[0])
            tags.append(columns[-1])
    return sentences


def squad_questions():
    return [(qa["id"], qa["question"], p["context"], [a["text"] for a in qa["answers"]])
            for article in SQUAD["data"] for p in article["paragraphs"] for qa in p["qas"]]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """Three tiny fine-tuning output dirs (as `finetune` leaves them), their exports, the input files."""
    ElectraClassifier = task_kind("classification").model_class
    ElectraQuestionAnswerer = task_kind("span_qa").model_class
    ElectraTokenClassifier = task_kind("tagging").model_class

    vocab = str(shared_data("vocab", "bert_uncased_vocab.txt"))
    root = tmp_path_factory.mktemp("predict")
    configs = {
        "classification": (lambda e: ElectraClassifier(e, num_labels=2), ClassificationKind.model_file,
                           {"task": "toy", "kind": "classification", "label_names": LABELS, "regression": False,
                            "pair": False, "seq_length": 16}),
        "tagging": (lambda e: ElectraTokenClassifier(e, num_labels=len(TAGS)), TaggingKind.model_file,
                    {"task": "ner", "kind": "tagging", "label_names": TAGS, "scheme": "IOB2", "seq_length": 8,
                     "stride": 3}),  # 6 pieces a window: the long sentence is windowed
        "span_qa": (lambda e: ElectraQuestionAnswerer(e, start_n_top=3, end_n_top=3, joint_hidden_dim=16),
                    SpanQAKind.model_file,
                    {"task": "squad", "kind": "span_qa", "seq_length": 32, "doc_stride": 8,
                     "max_query_length": 8, "max_answer_length": 10, "answerable": False, "null_threshold": None}),
    }
    dirs, exports = finetuned_runs(root, configs, vocab, seed=10, num_layers=1, num_heads=2, hidden_dim=16,
                                   embedding_dim=16, intermediate_dim=32)
    inputs = {"classification": root / "dev.tsv", "tagging": root / "dev.txt", "span_qa": root / "dev.json"}
    inputs["classification"].write_text(TSV)
    inputs["tagging"].write_text(CONLL)
    inputs["span_qa"].write_text(json.dumps(SQUAD))
    return dirs, exports, {k: str(v) for k, v in inputs.items()}, root


@pytest.fixture(scope="module")
def served(models):
    """The served SavedModels' outputs on the inputs' texts, from a fresh process."""
    _, exports, _, root = models
    rows = [line.split("\t") for line in TSV.splitlines()[1:]]
    requests = {
        "classification": (exports["classification"], "serving_default", {"text": [r[0] for r in rows]}),
        "tagging": (exports["tagging"], "serve_words", {"text": [" ".join(w) for w, _ in conll_sentences()]}),
        "span_qa": (exports["span_qa"], "serving_default",
                    {"question": [q for _, q, _, _ in squad_questions()],
                     "context": [c for _, _, c, _ in squad_questions()]}),
    }
    (root / "requests.json").write_text(json.dumps(requests))
    (root / "served.py").write_text(SERVED)
    run_python([str(root / "served.py"), str(root / "requests.json"), str(root / "served.json")])
    return json.loads((root / "served.json").read_text())


def stderr_lines(result):
    """stderr less TensorFlow's C++ log lines (the tests run with TF_CPP_MIN_LOG_LEVEL=2)."""
    return [line for line in result.stderr.splitlines()
            if line.strip() and not re.match(r"[IWEF]\d{4} \d\d:\d\d:\d\d", line)]


def predict(*args, stdin=None, check=True):
    result = run_python(["-m", "electra_tf.predict", *map(str, args)], input=stdin, check=check)
    lines = [json.loads(line) for line in result.stdout.splitlines()] if result.returncode == 0 else None
    return result, lines


def rows_of(served):
    """The served outputs, one dict per example."""
    n = len(next(iter(served.values())))
    return [{k: v[i] for k, v in served.items()} for i in range(n)]


def assert_classification(lines, served):
    assert len(lines) == len(served["label"])
    for line, row in zip(lines, rows_of(served)):
        assert line["label"] == row["label"]
        assert list(line["probabilities"]) == LABELS
        np.testing.assert_allclose(list(line["probabilities"].values()), row["probabilities"], atol=1e-5, rtol=0)


def assert_tagging(lines, served, texts):
    assert len(lines) == len(texts)
    for line, row, text in zip(lines, rows_of(served), texts):
        n = row["num_words"]
        assert line["text"] == text
        assert (line["words"], line["tags"]) == (row["words"][:n], row["tags"][:n])
        m = row["num_entities"]
        assert line["entities"] == [
            {"text": t, "type": y, "start": s, "end": e} for t, y, s, e in
            zip(row["entity_text"][:m], row["entity_type"][:m], row["entity_start"][:m], row["entity_end"][:m])]
        assert all(text[e["start"]:e["end"]] == e["text"] for e in line["entities"])


def assert_qa(lines, served):
    questions = squad_questions()
    assert [line["id"] for line in lines] == [q for q, _, _, _ in questions]
    for line, row, (_, _, context, _) in zip(lines, rows_of(served), questions):
        assert (line["answer"], line["start"], line["end"]) == (row["answer"], row["start"], row["end"])
        assert line["answer"] == context[line["start"]:line["end"]]
        assert line["no_answer"] is False
        np.testing.assert_allclose(line["score"], row["score"], atol=1e-5, rtol=0)


def check_classification(init, inputs, served, tmp_path):
    metrics = tmp_path / "metrics.json"
    result, lines = predict("--init", init, "--input", inputs, "--metrics_file", metrics, "--batch_size", 4)
    assert_classification(lines, served)
    gold = [LABELS[int(r.split("\t")[1])] if r.split("\t")[1].isdigit() else r.split("\t")[1]
            for r in TSV.splitlines()[1:]]
    accuracy = np.mean([label == g for label, g in zip(served["label"], gold)])
    t = np.array([LABELS.index(g) for g in gold]) == 1  # binary F1 and MCC of label 1, from their definitions
    p = np.array([LABELS.index(label) for label in served["label"]]) == 1
    tp, fp, fn, tn = np.sum(t & p), np.sum(~t & p), np.sum(t & ~p), np.sum(~t & ~p)
    f1 = 2 * tp / (2 * tp + fp + fn) if tp else 0.0
    denominator = np.sqrt(float((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn)))
    mcc = (tp * tn - fp * fn) / denominator if denominator else 0.0
    assert json.loads(metrics.read_text()) == {"metric": "accuracy", "accuracy": pytest.approx(accuracy),
                                               "f1": pytest.approx(f1), "mcc": pytest.approx(mcc),
                                               "examples": len(gold)}
    assert len(stderr_lines(result)) == 1  # the summary line alone (no progress: stderr is not a terminal)
    assert stderr_lines(result)[-1].startswith(f"accuracy {accuracy:.4f} (f1 {f1:.4f}, mcc {mcc:.4f}) (6 examples, ")


def check_tagging(init, served, tmp_path, **stdin_or_file):
    """CoNLL input (a file, or stdin with `stdin=`): the served outputs, and seqeval's entity F1."""
    import seqeval.metrics

    metrics = tmp_path / "metrics.json"
    source = ["--input", stdin_or_file["path"]] if "path" in stdin_or_file else []
    _, lines = predict("--init", init, *source, "--metrics_file", metrics, "--batch_size", 2,
                       stdin=stdin_or_file.get("stdin"))
    sentences = conll_sentences()
    assert_tagging(lines, served, [" ".join(w) for w, _ in sentences])
    scores = json.loads(metrics.read_text())
    true = [t for _, t in sentences]
    predicted = []  # each CoNLL word's tag: the served word starting where it starts (`U.S.` -> `U` without
    for (words, _), row in zip(sentences, rows_of(served)):  # `serve_words`)
        starts = np.cumsum([0] + [len(w) + 1 for w in words[:-1]]).tolist()
        predicted.append([row["tags"][row["word_start"].index(s)] for s in starts])
    assert scores["metric"] == "entity_f1"
    assert scores["entity_f1"] == pytest.approx(seqeval.metrics.f1_score(true, predicted))
    assert scores["entity_recall"] == pytest.approx(seqeval.metrics.recall_score(true, predicted))
    assert scores["token_accuracy"] == pytest.approx(np.mean([t == p for ts, ps in zip(true, predicted)
                                                              for t, p in zip(ts, ps)]))
    assert scores["sentences"] == 3


def check_qa(init, inputs, served, tmp_path):
    metrics = tmp_path / "metrics.json"
    _, lines = predict("--init", init, "--input", inputs, "--metrics_file", metrics)
    assert_qa(lines, served)
    golds = [g for _, _, _, g in squad_questions()]
    exact = 100 * np.mean([max(official_exact(line["answer"], g) for g in gs) for line, gs in zip(lines, golds)])
    f1 = 100 * np.mean([max(official_f1(line["answer"], g) for g in gs) for line, gs in zip(lines, golds)])
    scores = json.loads(metrics.read_text())
    assert (scores["exact"], scores["f1"], scores["total"]) == (pytest.approx(exact), pytest.approx(f1), 3)


def test_classification_from_a_finetuning_dir_equals_the_served_model_and_is_scored(models, served, tmp_path):
    dirs, _, inputs, _ = models
    check_classification(dirs["classification"], inputs["classification"], served["classification"], tmp_path)


def test_tagging_from_an_export_read_from_stdin_equals_the_served_model_and_is_scored(models, served, tmp_path):
    """The model folder of the export (its highest version); CoNLL columns piped into stdin."""
    _, exports, _, _ = models
    check_tagging(os.path.dirname(exports["tagging"]), served["tagging"], tmp_path, stdin=CONLL)


def test_qa_from_a_finetuning_dir_equals_the_served_model_and_is_scored(models, served, tmp_path):
    dirs, _, inputs, _ = models
    check_qa(dirs["span_qa"], inputs["span_qa"], served["span_qa"], tmp_path)


@pytest.mark.large
def test_every_kind_from_the_other_source(models, served, tmp_path):
    """Classification and QA from the export's version folder, tagging from the fine-tuning dir."""
    dirs, exports, inputs, _ = models
    check_classification(exports["classification"], inputs["classification"], served["classification"], tmp_path)
    check_tagging(dirs["tagging"], served["tagging"], tmp_path, path=inputs["tagging"])
    check_qa(exports["span_qa"], inputs["span_qa"], served["span_qa"], tmp_path)


@pytest.mark.large
def test_stdin_jsonl_and_text_lines_and_an_output_file(models, served, tmp_path):
    """Examples piped into stdin: text lines (classification, to --output_file), JSON Lines (tagging by words, QA)."""
    dirs, exports, _, _ = models
    texts = [line.split("\t")[0] for line in TSV.splitlines()[1:] if line.split("\t")[0]]
    keep = [i for i, line in enumerate(TSV.splitlines()[1:]) if line.split("\t")[0]]  # blank lines are skipped
    out = tmp_path / "predictions.jsonl"
    result, _ = predict("--init", exports["classification"], "--output_file", out, stdin="\n".join(texts) + "\n")
    assert result.stdout == "" and not [p for p in os.listdir(tmp_path) if p.startswith(".partial")]
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert_classification(lines, {k: [v[i] for i in keep] for k, v in served["classification"].items()})

    sentences = conll_sentences()
    stdin = "".join(json.dumps({"words": w}) + "\n" for w, _ in sentences)
    _, lines = predict("--init", dirs["tagging"], "--input", "-", stdin=stdin)
    assert_tagging(lines, served["tagging"], [" ".join(w) for w, _ in sentences])

    stdin = "".join(json.dumps({"id": q, "question": question, "context": c}) + "\n"
                    for q, question, c, _ in squad_questions())
    result, lines = predict("--init", exports["span_qa"], "--input_format", "jsonl", stdin=stdin)
    assert_qa(lines, served["span_qa"])
    assert stderr_lines(result) == []  # no gold answers: no score line


def test_an_output_file_is_written_whole_or_not_at_all(tmp_path):
    from electra_tf.predicting.writing import JsonLines

    out = tmp_path / "predictions.jsonl"
    out.write_text("an earlier file\n")
    with pytest.raises(KeyboardInterrupt):
        with JsonLines(str(out)) as lines:
            lines.write({"label": "positive"})
            raise KeyboardInterrupt
    assert out.read_text() == "an earlier file\n" and os.listdir(tmp_path) == ["predictions.jsonl"]
    with JsonLines(str(out)) as lines:
        lines.write({"label": "négatif"})
    assert out.read_text() == '{"label": "négatif"}\n' and os.listdir(tmp_path) == ["predictions.jsonl"]


BAD_INPUTS = [
    ("classification", "missing.tsv", None, r"Input file not found: .*missing\.tsv"),
    ("classification", "latin1.tsv", b"sentence\tlabel\nfine\t1\ncaf\xe9\t0\n", r"latin1\.tsv:3: not UTF-8 text"),
    ("classification", "columns.tsv", "review\tstars\ngood\t1\n",
     r"columns\.tsv:1: no text column: the header has \['review', 'stars'\]"),
    ("classification", "fields.tsv", "sentence\tlabel\ngood\t1\nbad\t0\textra\n",
     r"fields\.tsv:3: 3 fields, but the header has 2"),
    ("classification", "labels.tsv", "sentence\tlabel\ngood\tneutral\n",
     r"labels\.tsv:2: label 'neutral' is none of the model's labels"),
    ("classification", "bad.jsonl", '{"text": "good"}\n{"text": "bad"\n', r"bad\.jsonl:2: not valid JSON"),
    ("classification", "field.jsonl", '{"text": "good"}\n{"sentence": 3}\n',
     r'field\.jsonl:2: "sentence" must be a str'),
    ("tagging", "bad.conll", "Peter NNP B-PER\nlives VBZ\n", r"bad\.conll:2: 2 columns, but the first data line"),
    ("tagging", "tags.conll", "Peter NNP X-PER\n", r"tags\.conll:1: 'X-PER' is not a IOB2 tag"),
    ("span_qa", "bad.json", '{"data": [{"paragraphs": [{"context": 3}]}]}',
     r"bad\.json: `data\[0\]\.paragraphs\[0\]\.context` must be a str"),
    ("span_qa", "empty.jsonl", '{"question": " ", "context": "Paris."}\n', r"empty\.jsonl:1: empty question"),
    ("span_qa", "lines.txt", "Where is Paris?\n", r"lines\.txt: a span_qa model reads squad, jsonl, not text"),
]
SETTINGS = {"classification": {"label_names": LABELS}, "tagging": {"label_names": TAGS, "spans": True},
            "span_qa": {}}


@pytest.mark.parametrize("kind,name,content,message", BAD_INPUTS, ids=[b[1] for b in BAD_INPUTS])
def test_bad_input_names_the_file_and_line(tmp_path, kind, name, content, message):
    from electra_tf.predicting.inputs import read_examples

    path = tmp_path / name
    if content is not None:
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises((ValueError, FileNotFoundError)) as error:
        read_examples(str(path), "auto", kinds.get(kind), SETTINGS[kind])
    assert re.search(message, str(error.value)), str(error.value)


def test_bad_input_file_is_one_error_line_and_exit_1(models, tmp_path):
    dirs, _, _, _ = models
    path = tmp_path / "latin1.tsv"
    path.write_bytes(b"sentence\tlabel\nfine\t1\ncaf\xe9\t0\n")
    result, _ = predict("--init", dirs["classification"], "--input", path, check=False)
    assert (result.returncode, result.stdout) == (1, "")
    assert stderr_lines(result) == [f"error: {path}:3: not UTF-8 text (byte 0xe9 at column 4)."]


def test_a_folder_that_is_not_a_model_is_a_clear_error(tmp_path):
    from electra_tf.tasks.served import open_model

    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "notes.txt").write_text("no model here")
    with pytest.raises(FileNotFoundError) as error:
        open_model(str(tmp_path / "notes"))
    from electra_tf import tasks

    model_files = ", ".join(tasks.OUTPUTS.model_files().values())  # every kind's, in registry order
    assert "classifier.keras, token_classifier.keras" in model_files
    assert str(error.value) == (
        f"--init {tmp_path / 'notes'} is neither a fine-tuning output dir (no {model_files}), a TF Serving export (no "
        "saved_model.pb in it or in a numbered version folder) nor a pre-trained ELECTRA for replaced-token scores "
        "(a pre-training run, hf:DIR, official:DIR): fine-tune with `python -m electra_tf.finetune` first.")
    # A pre-training run is read for its replaced-token scores: without checkpoints it has no head.
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "config.json").write_text("{}")
    with pytest.raises(FileNotFoundError, match="no checkpoint in .* without the replaced-token head"):
        open_model(str(tmp_path / "run"))
    with pytest.raises(FileNotFoundError, match="does not exist"):
        open_model(str(tmp_path / "missing"))


def test_an_export_folder_resolves_to_its_highest_complete_version(tmp_path):
    """As TF Serving: numbered folders with a saved_model.pb; an interrupted export (partial-N, no .pb) is not one."""
    from electra_tf.predicting.predictor import export_version

    model = tmp_path / "base" / "movie"
    for name, complete in (("1", True), ("3", True), ("12", False), ("partial-20", True)):
        (model / name).mkdir(parents=True)
        if complete:
            (model / name / "saved_model.pb").write_bytes(b"")
    assert export_version(str(model / "1")) == str(model / "1")
    assert export_version(str(model)) == str(model / "3")
    assert export_version(str(tmp_path / "base")) == str(model / "3")  # the base folder of one model
    (tmp_path / "base" / "other" / "1").mkdir(parents=True)
    (tmp_path / "base" / "other" / "1" / "saved_model.pb").write_bytes(b"")
    with pytest.raises(ValueError, match="holds several served models \\(movie, other\\)"):
        export_version(str(tmp_path / "base"))
    assert export_version(str(tmp_path)) is None
