"""`predict` and `finetune` as a user runs them on input whose lines hold `\\f`, `\\v`, U+2028 and the other
characters `str.splitlines` breaks at: a line ends at `\\n` only, so each line is one record with its own line
number; a CSV field of a million characters is read; an empty input to a multiple-choice model and a SWAG
quote never closed are one `error:` line naming the input and the line the quote opens on.

The reference for the text and JSON Lines records is the same texts given as JSON Lines with every
character escaped (`\\u2028`), which no line splitter can break."""

import json

import keras
import pytest

from helpers import digests, error_line, make_run_dir, run_python
from electra_tf.tasks import get as task_kind  # the registry: a kind by name

pytestmark = pytest.mark.large  # slow tier: together these tests take minutes

LABELS = ["negative", "positive"]
WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "first", "page", "and", "a", "vertical", "tab", "second",
         "line", "paragraph", "next", "third", "file", "group", "record", "word", "small", "good", "bad", "."]
TEXTS = ["first\x0cpage and a\x0bvertical tab", "second\u2028line\u2029paragraph\x85next",
         "third\x1cfile\x1dgroup\x1erecord"]
BIG = "word " * 200_000  # a CSV field of 1,000,000 characters (csv's default limit: 131,072)


def predict(*args, **kwargs):
    return run_python(["-m", "electra_tf.predict", *map(str, args)], check=False, **kwargs)


def records(path):
    return [json.loads(line) for line in path.read_text().split("\n") if line]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A tiny classifier and a tiny multiple-choice model as `finetune` leaves them (untrained)."""
    from electra_tf import run_files
    from electra_tf.models.encoder import ElectraEncoder
    ElectraClassifier = task_kind("classification").model_class
    ElectraMultipleChoice = task_kind("multiple_choice").model_class

    root = tmp_path_factory.mktemp("lines")
    for i, (name, build, file_name, config) in enumerate((
            ("ft", lambda e: ElectraClassifier(e, num_labels=2), "classifier.keras",
             {"task": "toy", "kind": "classification", "label_names": LABELS, "regression": False, "pair": False,
              "seq_length": 16}),
            ("mc", ElectraMultipleChoice, "multiple_choice.keras",
             {"task": "pick", "kind": "multiple_choice", "seq_length": 16}))):
        keras.utils.set_random_seed(30 + i)
        model = build(ElectraEncoder(vocab_size=len(WORDS), num_layers=1, num_heads=2, hidden_dim=16,
                                     embedding_dim=16, intermediate_dim=32, max_sequence_length=64))
        model.build()
        (root / name).mkdir()
        model.save(str(root / name / file_name))
        (root / name / run_files.VOCAB_FILE).write_text("\n".join(WORDS) + "\n")
        (root / name / run_files.FINETUNE_CONFIG_FILE).write_text(json.dumps(config))
        (root / name / run_files.RESULTS_FILE).write_text("{}")
    return root


def write_texts(path):
    path.write_bytes("".join(t + "\n" for t in TEXTS).encode("utf-8"))
    return path


def test_predict_gives_one_record_per_newline_ended_line(runs, tmp_path):
    """A 3-line text file holding \\f and \\v (and U+2028...): 3 records, lines 1-3."""
    result = predict("--init", runs / "ft", "--input", write_texts(tmp_path / "texts.txt"))
    assert result.returncode == 0, result.stderr[-3000:]
    got = [json.loads(line) for line in result.stdout.split("\n") if line]
    assert [(r["line"], sorted(r)) for r in got] == [(i, ["label", "line", "probabilities"]) for i in (1, 2, 3)]


@pytest.mark.large
def test_predict_reads_lines_as_escaped_json_gives_them_and_a_csv_field_of_a_million_characters(runs, tmp_path):
    """Text lines and JSON Lines holding raw U+2028: the records of the escaped JSON Lines; a 1,000,000-character
    CSV field: its record."""
    text = write_texts(tmp_path / "texts.txt")
    raw = tmp_path / "raw.jsonl"
    raw.write_text("".join(json.dumps({"text": t}, ensure_ascii=False) + "\n" for t in TEXTS), encoding="utf-8")
    assert "\u2028" in raw.read_text(encoding="utf-8")  # valid JSON, as `ensure_ascii=False` writes it
    escaped = tmp_path / "escaped.jsonl"
    escaped.write_text("".join(json.dumps({"text": t}) + "\n" for t in TEXTS))
    table = tmp_path / "big.csv"
    table.write_text(f'sentence,label\n"{BIG}",positive\n"{TEXTS[0]}",negative\n')
    before = digests(tmp_path)
    for path in (text, raw, escaped, table):
        result = predict("--init", runs / "ft", "--input", path, "--output_file", tmp_path / f"{path.name}.out",
                         timeout=900)
        assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr[-3000:]
    want = records(tmp_path / "escaped.jsonl.out")
    assert [r["line"] for r in want] == [1, 2, 3]
    assert records(tmp_path / "texts.txt.out") == records(tmp_path / "raw.jsonl.out") == want
    assert [(r["line"], sorted(r)) for r in records(tmp_path / "big.csv.out")] == [
        (2, ["label", "line", "probabilities"]), (3, ["label", "line", "probabilities"])]
    assert {k: v for k, v in digests(tmp_path).items() if not k.endswith(".out")} == before


def test_empty_stdin_to_a_multiple_choice_model_says_there_are_no_input_records(runs, tmp_path):
    before = digests(runs)
    line = error_line(predict("--init", runs / "mc", "--output_file", tmp_path / "out.jsonl", input=""))
    assert line == ("error: <stdin>: no input records: stdin is empty or blank; give the examples in a file with "
                    "--input, or pipe them into stdin."), line
    assert digests(runs) == before and not list(tmp_path.iterdir())


def test_a_swag_quote_never_closed_is_named_by_the_line_it_opens_on(runs, tmp_path):
    swag = tmp_path / "val.csv"
    swag.write_text('sent1,sent2,ending0,ending1,label\nfirst,page,a,b,0\n"second,line,a,b,1\nthird,file,a,b,0\n'
                    "good,word,a,b,1\n")
    before = digests(tmp_path)
    line = error_line(predict("--init", runs / "mc", "--input", swag, "--output_file", tmp_path / "out.jsonl"))
    assert line == (f"error: {swag}:3: a quote opened in the record that starts on this line is never closed (the "
                    "file ends inside the quoted field)."), line
    assert digests(tmp_path) == before


@pytest.mark.large
def test_finetune_reads_newline_ended_lines_and_a_csv_field_of_a_million_characters(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(WORDS) + "\n")
    run = make_run_dir(tmp_path / "run", str(vocab), max_sequence_length=64, seq_length=32)
    data = tmp_path / "task"
    data.mkdir()
    rows = [f'"{BIG}",good'] + [f'"{t}",{label}' for t in TEXTS for label in ("good", "bad")] + ['"lone\rreturn",bad']
    (data / "train.csv").write_bytes(("sentence,label\n" + "\n".join(rows) + "\n").encode("utf-8"))
    (data / "dev.csv").write_bytes(("sentence,label\r\n" + "".join(f'"{t}",bad\r\n' for t in TEXTS) +
                                    "small,good\r\n").encode("utf-8"))
    result = run_python(["-m", "electra_tf.finetune", "--task", "toy", "--file_format", "csv", "--data_dir", data,
                         "--init", run, "--output_dir", tmp_path / "out", "--epochs", "1", "--batch_size", "4",
                         "--seq_length", "16", "--verbose", "0"], check=False, timeout=900)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr[-3000:]
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert results["majority_class_accuracy"] == 0.75  # dev: 3 "bad" of 4 rows, one a line each
