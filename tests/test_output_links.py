"""Every command that writes compares files, not spellings: a symbolic link, a hard link or a linked folder that
leads to its input, its model or another artefact's file is refused as that file (one `error:` line naming the
flag, exit 1); a device node is never replaced by a regular file (a folder output refuses it; `predict` writes
into it); nothing that existed changes: every entry under the test's folder keeps its type, its inode, its link
target and its bytes (`state`).

The commands that write: `pretrain`, `finetune`, `export`, `convert`, `predict`, `pipelines.build_vocab`,
`pipelines.build_pretraining_data`. The refusals happen before any model loads; `predict`'s device, stream and
link cases run it through. Each case is a process: each command's first case runs in the fast suite, the
others are large.
"""

import ast
import hashlib
import json
import os
import re
import resource
import stat
import subprocess
import sys
import time

import pytest

from helpers import REPO, command_cases, error_line, refusal, run_python, write_vocab
from electra_tf.tasks import get as task_kind  # the registry: a kind by name

pytestmark = pytest.mark.large  # slow tier: together these tests take minutes

DEVICE = os.makedev(1, 7)  # a replica of the system's full device: every write fails with ENOSPC


def state(root):
    """path -> (file type, inode, link target or sha256 of the bytes) of every entry under `root`, links unfollowed."""
    out = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(folder, name)
            info = os.lstat(path)
            kind = stat.S_IFMT(info.st_mode)
            if stat.S_ISLNK(info.st_mode):
                what = os.readlink(path)
            elif stat.S_ISREG(info.st_mode):
                with open(path, "rb") as f:
                    what = hashlib.sha256(f.read()).hexdigest()
            else:
                what = None
            out[os.path.relpath(path, root)] = (kind, info.st_ino, what)
    return out


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A tiny fine-tuned classifier, a pre-training run, a task, a corpus, records, and links and devices to them."""
    import keras

    from electra_tf.models.encoder import ElectraEncoder
    ElectraClassifier = task_kind("classification").model_class

    root = tmp_path_factory.mktemp("links")
    files = {
        "in/dev.tsv": "sentence\tlabel\ngood film\t1\nbad film\t0\n",
        "pre/config.json": "{}", "pre/discriminator.keras": "model", "pre/vocab.txt": None,
        "ft/vocab.txt": None, "ft/results.json": "{}",
        "ft/finetune_config.json": json.dumps({"task": "toy", "kind": "classification", "label_names": ["no", "yes"],
                                               "regression": False, "pair": False, "seq_length": 16}),
        "task/train.tsv": "sentence\tlabel\ngood\t1\n", "task/dev.tsv": "sentence\tlabel\nbad\t0\n",
        "corpus/text.txt": "The cat sat on the mat.\nIt purred.\n",
        "records/pretrain_data.tfrecord-00000-of-00001": "records", "records/vocab.txt": None,
        "work/real.jsonl": "an earlier file\n",
    }
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if text is None:
            write_vocab(path, 120)
        else:
            path.write_text(text)
    keras.utils.set_random_seed(3)
    model = ElectraClassifier(ElectraEncoder(vocab_size=120, num_layers=1, num_heads=1, hidden_dim=8, embedding_dim=8,
                                             intermediate_dim=8, max_sequence_length=16), num_labels=2)
    model.build()
    model.save(str(root / "ft" / "classifier.keras"))
    links = root / "links"
    links.mkdir()
    for name, target in {"in_file.tsv": "../in/dev.tsv", "in_dir": "../in", "model.jsonl": "../ft/classifier.keras",
                         "pre_config.json": "../pre/config.json", "pre_dir": "../pre", "ft_dir": "../ft",
                         "task_dir": "../task", "records_dir": "../records", "text.txt": "../corpus/text.txt",
                         "classifier.keras": "../ft/classifier.keras", "out.jsonl": "../work/real.jsonl",
                         "stdout": "/proc/self/fd/1"}.items():
        os.symlink(target, links / name)
    for name, target in {"hard_dev.tsv": "in/dev.tsv", "hard_config.json": "pre/config.json",
                         "hard_text.txt": "corpus/text.txt", "hard_classifier.keras": "ft/classifier.keras"}.items():
        os.link(root / target, links / name)
    if os.geteuid() == 0:
        (root / "devs").mkdir()
        for name in ("full", "full.keras"):
            os.mknod(root / "devs" / name, stat.S_IFCHR | 0o666, DEVICE)
    return root


def needs_devices(world):
    if not (world / "devs").exists():
        pytest.skip("making a device node needs root")


# (command, arguments with {r}, the flag named, what the line says)
CASES = [
    ("predict", "--init {r}/ft --input {r}/links/in_file.tsv --output_file {r}/in/dev.tsv", "output_file",
     "is `--input="),
    ("predict", "--init {r}/ft --input {r}/in/dev.tsv --output_file {r}/links/in_dir/dev.tsv", "output_file",
     "is `--input="),
    ("predict", "--init {r}/ft --input {r}/in/dev.tsv --output_file {r}/links/hard_dev.tsv", "output_file",
     "is `--input="),
    ("predict", "--init {r}/ft --input {r}/in/dev.tsv --output_file {r}/links/model.jsonl", "output_file",
     "lies inside `--init="),
    ("predict", "--init {r}/ft --input {r}/in/dev.tsv --metrics_file {r}/links/pre_config.json", "metrics_file",
     "lies inside a pre-training run"),
    ("predict", "--init {r}/ft --input {r}/in/dev.tsv --output_file {r}/links/hard_config.json", "output_file",
     "hard links of a file"),
    ("predict", "--init {r}/ft --input {r}/in/dev.tsv --output_file {r}/links/pre_dir/predictions.jsonl",
     "output_file", "lies inside a pre-training run"),
    ("pretrain", "--config tiny --model_dir {r}/links/pre_dir --init {r}/pre --data demo", "model_dir",
     "is or overlaps the input"),
    ("pretrain", "--config tiny --model_dir {r}/links/ft_dir/more --data demo", "model_dir",
     "lies inside .*fine-tuning"),
    ("pretrain", "--config tiny --model_dir {r}/links/records_dir --data {r}/records/pretrain_data.tfrecord-*",
     "model_dir", "the folder of the `--data` records"),
    ("pretrain", "--config tiny --model_dir {r}/devs/full --data demo", "model_dir", "is a file, not a folder"),
    ("finetune", "--task toy --data_dir {r}/task --init {r}/pre --output_dir {r}/links/pre_dir", "output_dir",
     "is `--init`"),
    ("finetune", "--task toy --data_dir {r}/task --init {r}/pre --output_dir {r}/links/task_dir", "output_dir",
     "is `--data_dir`"),
    ("finetune", "--task toy --data_dir {r}/task --init {r}/pre --output_dir {r}/devs/full", "output_dir",
     "is a file, not a folder"),
    ("export", "--format encoder --init {r}/pre --output_dir {r}/links/pre_dir/export", "output_dir",
     "is or overlaps the input"),
    ("export", "--format serving --init {r}/links/ft_dir --output_dir {r}/ft", "output_dir",
     "is or overlaps the input"),
    ("export", "--format tflite --init {r}/ft --output_dir {r}/devs/full", "output_dir", "is a file, not a folder"),
    ("convert", "--from keras --input {r}/links/classifier.keras --to keras --output_dir {r}/ft/classifier.keras",
     "output_dir", "is or overlaps the input"),
    ("convert", "--from keras --input {r}/ft/classifier.keras --to keras "
     "--output_dir {r}/links/hard_classifier.keras", "output_dir", "is or overlaps the input"),
    ("convert", "--from keras --input {r}/ft/classifier.keras --to hf --output_dir {r}/links/pre_dir/hf",
     "output_dir", "lies inside .*pre-training run"),
    ("convert", "--from keras --input {r}/ft/classifier.keras --to keras --output_dir {r}/devs/full.keras",
     "output_dir", "would overwrite"),
    ("pipelines.build_vocab", "--input {r}/corpus/text.txt --vocab_size 200 --vocab_file {r}/links/text.txt "
     "--overwrite", "vocab_file", "is an --input file"),
    ("pipelines.build_vocab", "--input {r}/corpus/text.txt --vocab_size 200 --vocab_file {r}/links/hard_text.txt "
     "--overwrite", "vocab_file", "is an --input file"),
    ("pipelines.build_vocab", "--input {r}/corpus/text.txt --vocab_size 200 --vocab_file {r}/devs/full --overwrite",
     "vocab_file", "is a device or a stream"),
    ("pipelines.build_pretraining_data", "--input {r}/corpus/text.txt --vocab_file {r}/records/vocab.txt "
     "--output_dir {r}/links/text.txt", "output_dir", "would replace the input"),
    ("pipelines.build_pretraining_data", "--input {r}/links/hard_text.txt --vocab_file {r}/records/vocab.txt "
     "--output_dir {r}/corpus/text.txt", "output_dir", "would replace the input"),
    ("pipelines.build_pretraining_data", "--input {r}/corpus/text.txt --vocab_file {r}/records/vocab.txt "
     "--output_dir {r}/devs/full", "output_dir", "is a file, not a folder"),
]


@pytest.mark.parametrize("command,arguments,flag,expected", command_cases(CASES))
def test_links_hard_links_linked_folders_and_devices_are_refused_as_the_files_they_are(world, command, arguments,
                                                                                       flag, expected):
    if "/devs/" in arguments:
        needs_devices(world)
    before = state(world)
    refusal(command, arguments.format(r=world), flag, expected)
    assert state(world) == before


def predict(world, *args, **kwargs):
    return run_python(["-m", "electra_tf.predict", "--init", str(world / "ft"), "--input", str(world / "in/dev.tsv"),
                       *map(str, args)], check=False, **kwargs)


def records(text):
    return [json.loads(line) for line in text.splitlines()]


def test_predict_writes_into_a_device_and_never_replaces_it(world):
    """A full device: one line naming the flag and the file (no space left), the node stays a device."""
    needs_devices(world)
    before = state(world)
    line = error_line(predict(world, "--output_file", world / "devs" / "full"))
    assert line.startswith(f"error: Cannot write `--output_file={world / 'devs' / 'full'}`: No space left on device")
    assert state(world) == before


@pytest.mark.large
def test_predict_writes_through_a_link_to_its_stdout_and_to_a_file(world):
    """A link to the process's own stdout (under /proc) gets the records on stdout; a link to an ordinary file
    gets them in that file; both links stay links."""
    before = state(world)
    result = predict(world, "--output_file", world / "links" / "stdout")
    assert result.returncode == 0, result.stderr[-2000:]
    assert [r["line"] for r in records(result.stdout)] == [2, 3]
    assert state(world) == before
    result = predict(world, "--output_file", world / "links" / "out.jsonl")
    assert result.returncode == 0, result.stderr[-2000:]
    after = state(world)
    assert after["links/out.jsonl"] == before["links/out.jsonl"]  # still the link, to the same file
    assert [r["line"] for r in records((world / "work" / "real.jsonl").read_text())] == [2, 3]
    (world / "work" / "real.jsonl").write_text("an earlier file\n")


def test_predict_over_a_file_size_limit_names_the_flag_and_leaves_no_temporary_file(world, tmp_path):
    """`ulimit -f` (the limit a full disk also gives): one line naming `--output_file` and the file, nothing left."""
    source = tmp_path / "many.tsv"
    source.write_text("sentence\tlabel\n" + "good film\t1\n" * 200)
    out = tmp_path / "out" / "predictions.jsonl"
    out.parent.mkdir()

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    result = run_python(["-m", "electra_tf.predict", "--init", str(world / "ft"), "--input", str(source),
                         "--output_file", str(out)], check=False, preexec_fn=limit)
    assert error_line(result).startswith(f"error: Cannot write `--output_file={out}`: File too large")
    assert os.listdir(out.parent) == []


@pytest.mark.parametrize("value,expected", [
    ("", "error: `--output_file` is empty: give a file name (or leave --output_file out to write to stdout)."),
    ("{t}/x.jsonl/", "error: Cannot write `--output_file={t}/x.jsonl/`: it names a folder, not a file. "
                     "Give a file name."),
])
def test_predict_refuses_an_empty_output_and_a_folder_spelling_before_any_work(world, tmp_path, value, expected):
    result = predict(world, f"--output_file={value.format(t=tmp_path)}")
    assert error_line(result) == expected.format(t=tmp_path)
    assert os.listdir(tmp_path) == []


@pytest.mark.large  # two LiteRT exports of a tiny model: ~1 min
def test_a_second_litert_export_into_the_same_folder_at_once_is_refused_before_its_work(world, tmp_path):
    """The first claims the folder before its work; the second, started while it works, is refused naming
    `--output_dir`; the first finishes; nothing temporary is left."""
    out = tmp_path / "lite"
    command = [sys.executable, "-m", "electra_tf.export", "--format", "tflite", "--init", str(world / "ft"),
               "--output_dir", str(out)]
    env = {**os.environ, "PYTHONPATH": str(REPO), "TF_CPP_MIN_LOG_LEVEL": "2"}
    first = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        while not [n for n in os.listdir(tmp_path) if n.startswith(".partial-")] and first.poll() is None:
            time.sleep(0.05)  # waits for a state: the first export's claim
        assert first.poll() is None, first.communicate()[1][-3000:]
        line = error_line(run_python(command[1:], check=False))
        assert line.startswith(f"error: `--output_dir={out}` is being written by another command"), line
    finally:
        _, stderr = first.communicate(timeout=600)
    assert first.returncode == 0, stderr[-3000:]
    assert sorted(os.listdir(tmp_path)) == ["lite"]
    assert "model.tflite" in os.listdir(out)


# What only `electra_tf/atomic.py` does: make a temporary name, rename a file, write a JSON file.
_TEMPFILE = {"mkdtemp", "mkstemp", "mktemp", "NamedTemporaryFile", "TemporaryFile", "TemporaryDirectory",
             "SpooledTemporaryFile"}
_TEMPORARY_NAME = re.compile(r"\.(?:tmp|temp|partial)\b|^(?:tmp|temp)[-_]")  # `.tmp-x`, `x.partial`, `tmp_x`
# file -> what it may do besides, and why.
_ALLOWED = {
    os.path.join("electra_tf", "training", "run_lock.py"): {"os.rename", "json.dump"},  # a lock protocol, no write
    # older builds' temporary names, removed by a new build, never written
    os.path.join("pipelines", "build_pretraining_data.py"): {"'.tmp-'", "'.stats.partial-'"},
}


def temporary_writes(source):
    """(line, what) of every temporary name, rename and JSON file write in Python `source` (docstrings aside)."""
    tree = ast.parse(source)
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    found = []
    for node in ast.walk(tree):
        what = None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = node.func.value.id if isinstance(node.func.value, ast.Name) else "..."
            name = node.func.attr
            if owner == "tempfile" or name in _TEMPFILE:
                what = f"tempfile.{name}"
            elif (owner, name) in (("json", "dump"), ("os", "replace"), ("shutil", "move")) or name == "rename":
                what = f"{owner}.{name}"
        elif isinstance(node, ast.Import) and "tempfile" in [alias.name for alias in node.names]:
            what = "import tempfile"
        elif isinstance(node, ast.ImportFrom) and node.module == "tempfile":
            what = "from tempfile import"
        elif (isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
              and _TEMPORARY_NAME.search(node.value)):
            what = repr(node.value)
        if what:
            found.append((node.lineno, what))
    return found


def test_temporary_names_renames_and_json_files_only_through_the_atomic_writer():
    """One writer (`electra_tf.atomic`): the one temporary-name convention (`.partial-` beside an output,
    `electra_tf-` scratch in the temporary folder), the one rename of a write, the one JSON writer (`write_json`)."""
    found = []
    for top in ("electra_tf", "pipelines"):
        for folder, _, names in os.walk(REPO / top):
            for name in sorted(names):
                path = os.path.join(folder, name)
                relative = os.path.relpath(path, REPO)
                if not name.endswith(".py") or relative == os.path.join("electra_tf", "atomic.py"):
                    continue
                with open(path, encoding="utf-8") as f:
                    found += [f"{relative}:{line}: {what}" for line, what in temporary_writes(f.read())
                              if what not in _ALLOWED.get(relative, ())]
    assert found == []


def test_the_writer_check_finds_each_kind_of_stray_write():
    """The check itself: each stray write it looks for is found in code, none in a docstring's example."""
    source = '''"""Example: tempfile.mkdtemp(), json.dump(v, f), os.replace(a, b), ".x.partial"."""
import json, os, tempfile
from tempfile import mkdtemp

def write(value, path):
    folder = tempfile.mkdtemp(prefix="x")
    json.dump(value, open(path, "w"))
    os.replace(path + ".tmp", path)
    os.rename(path, "tmp_" + path)
'''
    assert sorted(temporary_writes(source)) == [
        (2, "import tempfile"), (3, "from tempfile import"), (6, "tempfile.mkdtemp"), (7, "json.dump"),
        (8, "'.tmp'"), (8, "os.replace"), (9, "'tmp_'"), (9, "os.rename")]


def test_a_url_is_written_whole_through_tf_io_gfile():
    """`gs://` and other `tf.io.gfile` URLs keep working (here TensorFlow's in-memory `ram://` file system): the
    file replaced whole, the JSON writer too, no temporary file left."""
    import tensorflow as tf

    from electra_tf import atomic, run_files

    tf.io.gfile.makedirs("ram://atomic_links")
    atomic.write_text("ram://atomic_links/notes.txt", "one\n")
    atomic.write_text("ram://atomic_links/notes.txt", "two\n")
    atomic.write_json("ram://atomic_links/results.json", {"accuracy": 0.5})
    with tf.io.gfile.GFile("ram://atomic_links/notes.txt") as f:
        assert f.read() == "two\n"
    assert run_files.read_json("ram://atomic_links/results.json") == {"accuracy": 0.5}
    assert sorted(tf.io.gfile.listdir("ram://atomic_links")) == ["notes.txt", "results.json"]
