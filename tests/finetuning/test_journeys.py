"""Every task kind, end to end as users run it: `finetune` -> `export --format serving` -> `predict` from the run dir
and from the export -> a fresh process with TensorFlow and tensorflow-text alone serving the raw text.

All agree: `predict` writes the same records from the run dir and from the export, and they are the served
model's outputs; the dev metric of the served outputs, computed here from its definition (accuracy; seqeval's
entity F1; the official SQuAD F1), equals what `predict` reports and, within 0.5 points, the dev metric that
`finetune` reported in `results.json`.
"""

import json
import os
import sys

import numpy as np
import pytest

from test_finetune_strategies import write_toy_tasks
from toy_tasks import write_conll, write_toy_squad

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from helpers import assert_same_records, make_run_dir, official_f1, read_records, run_python, shared_data  # noqa: E402

pytestmark = [pytest.mark.large, pytest.mark.filterwarnings("ignore::UserWarning")]

ANIMALS = ["cat", "dog", "horse", "cow", "sheep", "goat"]
THINGS = ["car", "table", "phone", "chair", "lamp", "spoon", "door", "cup"]

# Runs in a fresh interpreter with TensorFlow and tensorflow-text alone: the served model on raw text.
SERVE = r"""
import json, sys
import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401
assert not [m for m in sys.modules if m.startswith("electra_tf")]
export, requests, out = sys.argv[1:]
serve = tf.saved_model.load(export).signatures["serving_default"]
rows = []
for request in json.load(open(requests)):
    args = {}
    for key, values in request.items():
        if values and isinstance(values[0], list):  # choices: padded with "" to the widest question
            width = max(len(v) for v in values)
            values = [v + [""] * (width - len(v)) for v in values]
        args[key] = tf.constant(values)
    outputs = {k: v.numpy() for k, v in serve(**args).items()}
    for i in range(len(next(iter(request.values())))):
        rows.append({k: (v[i].decode() if isinstance(v[i], bytes) else
                         [x.decode() if isinstance(x, bytes) else x for x in v[i].tolist()] if v[i].ndim else
                         v[i].item()) for k, v in outputs.items()})
json.dump(rows, open(out, "w"))
"""


def write_toy_choices(directory, splits=(("train", 64), ("dev", 32)), seed=0):
    """Toy multiple choice: "Which of these is an animal?" over one animal and two or three things."""
    rng = np.random.RandomState(seed)
    os.makedirs(directory, exist_ok=True)
    for split, count in splits:
        with open(os.path.join(directory, f"{split}.jsonl"), "w") as f:
            for _ in range(count):
                choices = list(rng.choice(THINGS, rng.randint(2, 4), replace=False))
                answer = rng.randint(len(choices) + 1)
                choices.insert(answer, ANIMALS[rng.randint(len(ANIMALS))])
                f.write(json.dumps({"context": "Pick the one that is alive.", "question": "Which is an animal?",
                                    "choices": choices, "answer": int(answer)}) + "\n")
    return str(directory)


def questions_of(path):
    return [json.loads(line) for line in open(path)]


def conll_sentences(path):
    sentences, words, tags = [], [], []
    for line in list(open(path)) + [""]:
        parts = line.split()
        if not parts or parts[0] == "-DOCSTART-":
            if words:
                sentences.append((words, tags))
            words, tags = [], []
            continue
        words.append(parts[0])
        tags.append(parts[-1])
    return sentences


def squad_questions(path):
    return [(qa["question"], paragraph["context"], [a["text"] for a in qa["answers"]])
            for article in json.load(open(path))["data"] for paragraph in article["paragraphs"]
            for qa in paragraph["qas"]]


# kind -> (task name, finetune flags, data writer, dev file, requests of the dev file, metric of served rows)
def classification_case(data):
    rows = [line.rstrip("\n").split("\t") for line in open(os.path.join(data, "dev.tsv"))][1:]
    requests = [{"text": [r[0] for r in rows]}]

    def metric(served):
        return "accuracy", float(np.mean([s["label"] == r[1] for s, r in zip(served, rows)]))

    return os.path.join(data, "dev.tsv"), requests, metric


def tagging_case(data):
    sentences = conll_sentences(os.path.join(data, "dev.txt"))
    requests = [{"text": [" ".join(words) for words, _ in sentences]}]

    def metric(served):
        import seqeval.metrics

        predicted = []
        for (words, _), row in zip(sentences, served):  # each word: the served word starting where it starts
            starts = np.cumsum([0] + [len(w) + 1 for w in words[:-1]]).tolist()
            predicted.append([row["tags"][row["word_start"].index(s)] for s in starts])
        return "entity_f1", float(seqeval.metrics.f1_score([t for _, t in sentences], predicted))

    return os.path.join(data, "dev.txt"), requests, metric


def qa_case(data):
    questions = squad_questions(os.path.join(data, "dev.json"))
    requests = [{"question": [q for q, _, _ in questions], "context": [c for _, c, _ in questions]}]

    def metric(served):
        return "f1", 100 * float(np.mean([max(official_f1(s["answer"], g) for g in golds)
                                          for s, (_, _, golds) in zip(served, questions)]))

    return os.path.join(data, "dev.json"), requests, metric


def choice_case(data):
    questions = questions_of(os.path.join(data, "dev.jsonl"))
    requests = [{"context": [q["context"] for q in questions], "question": [q["question"] for q in questions],
                 "choices": [q["choices"] for q in questions]}]

    def metric(served):
        return "accuracy", float(np.mean([s["choice"] == q["answer"] for s, q in zip(served, questions)]))

    return os.path.join(data, "dev.jsonl"), requests, metric


CASES = {
    "classification": ("movie", [], write_toy_tasks, classification_case),
    "tagging": ("ner", ["--task_kind", "tagging"], lambda d: write_conll(d, (("train", 48), ("dev", 24))), tagging_case),
    "span_qa": ("squad", ["--doc_stride", "16", "--max_query_length", "12"],
                lambda d: write_toy_squad(d, (("train", 4), ("dev", 2))), qa_case),
    "multiple_choice": ("pick", ["--task_kind", "multiple_choice"], write_toy_choices, choice_case),
}


def command(module, *args):
    result = run_python(["-m", module, *map(str, args)], check=False)
    assert result.returncode == 0, f"{module} {args}:\n{result.stderr[-3000:]}"
    return result


def assert_predictions_are_the_served_outputs(kind, predicted, served):
    assert len(predicted) == len(served)
    for record, row in zip(predicted, served):
        if kind == "classification":
            assert record["label"] == row["label"]
            np.testing.assert_allclose(list(record["probabilities"].values()), row["probabilities"], atol=1e-5)
        elif kind == "tagging":
            assert record["tags"] == row["tags"][:row["num_words"]]
        elif kind == "span_qa":
            assert (record["answer"], record["start"], record["end"]) == (row["answer"], row["start"], row["end"])
        else:
            assert record["choice"] == row["choice"] == int(np.argmax(row["probabilities"]))
            n = len(record["probabilities"])
            np.testing.assert_allclose(record["probabilities"], row["probabilities"][:n], atol=1e-5)


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory):
    return make_run_dir(tmp_path_factory.mktemp("pre"), str(shared_data("vocab", "bert_uncased_vocab.txt")))


@pytest.mark.parametrize("kind", list(CASES))
def test_finetune_export_predict_and_a_fresh_server_agree(kind, pretrained, tmp_path):
    task, flags, write, case = CASES[kind]
    data = write(str(tmp_path / "data"))
    dev, requests, served_metric = case(data)
    run, serving = tmp_path / "run", tmp_path / "serving"
    command("electra_tf.finetune", "--task", task, *flags, "--data_dir", data, "--init", pretrained,
            "--output_dir", run, "--epochs", 1, "--batch_size", 8, "--seq_length", 48, "--learning_rate", 1e-3)
    results = json.loads((run / "results.json").read_text())
    assert results["kind"] == kind
    command("electra_tf.export", "--format", "serving", "--init", run, "--output_dir", serving, "--model_name", kind)
    command("electra_tf.predict", "--init", run, "--input", dev, "--output_file", tmp_path / "run.jsonl",
            "--metrics_file", tmp_path / "run_metrics.json")
    command("electra_tf.predict", "--init", serving / kind, "--input", dev, "--output_file",
            tmp_path / "export.jsonl", "--metrics_file", tmp_path / "export_metrics.json")
    (tmp_path / "requests.json").write_text(json.dumps(requests))
    result = run_python(["-c", SERVE, serving / kind / "1", tmp_path / "requests.json", tmp_path / "served.json"],
                        check=False)
    assert result.returncode == 0, result.stderr[-3000:]

    from_run, from_export = read_records(tmp_path / "run.jsonl"), read_records(tmp_path / "export.jsonl")
    assert_same_records(from_run, from_export)
    served = json.loads((tmp_path / "served.json").read_text())
    assert_predictions_are_the_served_outputs(kind, from_run, served)
    name, value = served_metric(served)
    scores = json.loads((tmp_path / "run_metrics.json").read_text())
    assert scores == json.loads((tmp_path / "export_metrics.json").read_text())
    assert scores["metric"] == name == results["metric"] and scores[name] == pytest.approx(value, abs=1e-6)
    cli = results["trials"][0]["dev"][name]
    points = 1 if name == "f1" else 100  # accuracy and entity F1 are fractions, SQuAD's F1 a percentage
    assert abs(value - cli) * points <= 0.5, (name, value, cli)
