"""Bad data files through `electra_tf.finetune`: one `error:` line naming file and line
(or question id), exit 1, and nothing that existed changed (checksums of the data, the run and the output dir).

Encoding: a CoNLL, TSV, SQuAD or vocabulary file saved as UTF-16 or Latin-1.
SQuAD: repeated question ids; questions without answers in a file that is not
SQuAD 2.0. Regression labels that are not finite numbers.
"""

import hashlib
import json
import pathlib
import re
import shutil

import pytest

from helpers import make_run_dir, run_python, write_vocab
from electra_tf.data.utf8 import decode_utf8

pytestmark = pytest.mark.large  # slow tier: together these tests take minutes

CONLL = "-DOCSTART- -X- O\n\nJohn NNP B-PER\nlives VBZ O\nin IN O\nParis NNP B-LOC\n\n" \
        "Mary NNP B-PER\nsaw VBD O\nLondon NNP B-LOC\n"


def checksums(*folders):
    out = {}
    for folder in folders:
        folder = pathlib.Path(folder)
        out.update({str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*"))
                    if p.is_file()})
    return out


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("run")
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "john", "lives", "in", "paris", "mary", "saw", "london",
             "where", "does", "live", "?", ".", "good", "bad", "movie"]
    (root / "vocab.txt").write_text("\n".join(vocab) + "\n")
    return make_run_dir(root / "run", str(root / "vocab.txt"), max_sequence_length=64, seq_length=32)


def finetune_fails(run_dir, data_dir, output_dir, *flags, init=None):
    """Runs the CLI on bad data; returns its one `error:` line after checking that nothing changed."""
    before = checksums(data_dir, init or run_dir, output_dir)
    result = run_python(["-m", "electra_tf.finetune", f"--data_dir={data_dir}", f"--init={init or run_dir}",
                         f"--output_dir={output_dir}", "--epochs=1", "--batch_size=2", "--seq_length=32",
                         "--verbose=0", *flags], check=False, timeout=300)
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert result.returncode == 1, result.stderr[-3000:]
    assert len(errors) == 1 and "Traceback" not in result.stderr, result.stderr[-3000:]
    assert result.stderr.strip().splitlines()[-1] == errors[0]
    assert checksums(data_dir, init or run_dir, output_dir) == before
    assert sorted(p.name for p in pathlib.Path(output_dir).iterdir()) == ["existing.txt"]
    return errors[0]


@pytest.fixture
def output_dir(tmp_path):
    """An output folder holding a file of its own, which must stay as it is."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "existing.txt").write_text("kept\n")
    return out


def conll_dir(tmp_path, train_bytes):
    data = tmp_path / "conll"
    data.mkdir()
    (data / "train.txt").write_bytes(train_bytes)
    (data / "dev.txt").write_text(CONLL)
    return data


@pytest.mark.parametrize("encoding,where", [
    ("utf-16", r"train.txt:1: not UTF-8 \(byte 0xff at column 1, a UTF-16 little-endian byte-order mark\)"),
    ("latin-1", r"train.txt:11: not UTF-8 \(byte 0xe9 at column 3\)"),  # "Zoé", line 11
])
def test_conll_file_not_utf8_names_file_and_line(run_dir, tmp_path, output_dir, encoding, where):
    data = conll_dir(tmp_path, (CONLL + "Zoé NNP B-PER\n").encode(encoding))
    line = finetune_fails(run_dir, data, output_dir, "--task=conll2003")
    assert line.endswith("; save it as UTF-8.") and re.search(where, line), line


def test_tsv_file_not_utf8_names_file_and_line(run_dir, tmp_path, output_dir):
    data = tmp_path / "task"
    data.mkdir()
    rows = "sentence\tlabel\ngood movie\t1\nbad movie\t0\ncafé movie\t1\n"
    (data / "train.tsv").write_bytes(rows.encode("latin-1"))
    (data / "dev.tsv").write_text(rows)
    line = finetune_fails(run_dir, data, output_dir, "--task=toy")
    assert "train.tsv:4: not UTF-8 (byte 0xe9 at column 4); save it as UTF-8." in line


def test_vocabulary_not_utf8_names_file_and_line(run_dir, tmp_path, output_dir):
    init = shutil.copytree(run_dir, tmp_path / "init")
    vocab = pathlib.Path(init) / "vocab.txt"
    vocab.write_bytes(vocab.read_bytes().replace(b"movie", "movié".encode("latin-1")))
    data = tmp_path / "task"
    data.mkdir()
    for split in ("train", "dev"):
        (data / f"{split}.tsv").write_text("sentence\tlabel\ngood movie\t1\nbad movie\t0\n")
    line = finetune_fails(run_dir, data, output_dir, "--task=toy", init=init)
    assert "vocab.txt:20: not UTF-8 (byte 0xe9 at column 5); save it as UTF-8." in line


def test_regression_label_nan_names_file_and_line(run_dir, tmp_path, output_dir):
    data = tmp_path / "task"
    data.mkdir()
    for split in ("train", "dev"):
        (data / f"{split}.tsv").write_text("sentence\tlabel\ngood movie\t1.5\nbad movie\tnan\n")
    line = finetune_fails(run_dir, data, output_dir, "--task=toy", "--regression")
    assert "train.tsv:3: label 'nan' is not a finite number" in line


def squad(qas, version="1.1"):
    context = "John lives in Paris. Mary lives in London."
    return {"version": version, "data": [{"title": "t", "paragraphs": [{"context": context, "qas": qas}]}]}


def question(qid, answer="Paris", **extra):
    answers = [{"text": answer, "answer_start": 14 if answer == "Paris" else 35}] if answer else []
    return {"id": qid, "question": "Where does John live?", "answers": answers, **extra}


def squad_dir(tmp_path, train, dev=None):
    data = tmp_path / "squad"
    data.mkdir()
    (data / "train.json").write_text(json.dumps(train))
    (data / "dev.json").write_text(json.dumps(dev or squad([question("d1")])))
    return data


def test_repeated_question_ids_are_named(run_dir, tmp_path, output_dir):
    data = squad_dir(tmp_path, squad([question("a"), question("b"), question("a", "London"), question("c")]))
    line = finetune_fails(run_dir, data, output_dir, "--task=squad", "--max_query_length=8")
    assert "train.json: 1 question id(s) repeated" in line
    assert "'a' at data[0].paragraphs[0].qas[0], data[0].paragraphs[0].qas[2]" in line


@pytest.mark.parametrize("unanswered", [question("b", answer=None), {"id": "b", "question": "Who?"}])
def test_squad11_question_without_answers_is_refused(run_dir, tmp_path, output_dir, unanswered):
    data = squad_dir(tmp_path, squad([question("a"), unanswered]))
    line = finetune_fails(run_dir, data, output_dir, "--task=squad", "--max_query_length=8")
    assert "train.json: question id 'b' (data[0].paragraphs[0].qas[1]) has no answers, but the file is SQuAD 1.1" \
        in line


def test_squad_file_not_utf8_names_file_and_line(run_dir, tmp_path, output_dir):
    data = squad_dir(tmp_path, squad([question("a")]))
    train = data / "train.json"
    train.write_bytes(json.dumps(squad([question("a", title="Zoé")]), indent=1, ensure_ascii=False)
                      .encode("latin-1"))
    line = finetune_fails(run_dir, data, output_dir, "--task=squad", "--max_query_length=8")
    assert "train.json:" in line and "not UTF-8 (byte 0xe9 at column" in line


def test_decode_utf8_positions_match_an_independent_count():
    raw = "line one\nsecond line\nthird: é here\n".encode("latin-1")
    with pytest.raises(ValueError) as error:
        decode_utf8(raw, "f.txt")
    text = raw.decode("latin-1").splitlines()
    line = next(i for i, t in enumerate(text, 1) if "é" in t)
    column = text[line - 1].index("é") + 1
    assert str(error.value) == f"f.txt:{line}: not UTF-8 (byte 0xe9 at column {column}); save it as UTF-8."
