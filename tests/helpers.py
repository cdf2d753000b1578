"""Helpers shared by the test modules (import as `from helpers import ...`)."""

import collections
import hashlib
import json
import os
import pathlib
import re
import shutil
import string
import subprocess
import sys
import textwrap

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


def shared_data(*parts):
    """A path under ../shared/data, or skip the test when it is absent (a user's fresh machine)."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} not available")
    return path


def run_python(args, env=None, timeout=600, check=True, **kwargs):
    """Runs `python args...` from the repo root; returns the CompletedProcess (output captured)."""
    full_env = {**os.environ, "PYTHONPATH": str(REPO), "TF_CPP_MIN_LOG_LEVEL": "2", **(env or {})}
    result = subprocess.run(
        [sys.executable, *args], cwd=REPO, env=full_env, capture_output=True, text=True,
        timeout=timeout, **kwargs,
    )
    if check and result.returncode != 0:
        raise AssertionError(f"{args} failed ({result.returncode}):\n{result.stdout[-3000:]}\n{result.stderr[-5000:]}")
    return result


def without_package(root, name):
    """`run_python`'s `env` for a Python where `import name` fails as for a package that is not installed: a
    package of that name under `root/site`, first on the path, raises `ModuleNotFoundError`."""
    fake = pathlib.Path(root) / "site" / name
    fake.mkdir(parents=True, exist_ok=True)
    (fake / "__init__.py").write_text(f"raise ModuleNotFoundError(\"No module named '{name}'\", name='{name}')\n")
    return {"PYTHONPATH": f"{fake.parent}{os.pathsep}{REPO}"}


class LineReader:
    """Collects a process's text stream (`proc.stderr`) line by line in a thread, so a test waits for a state.

    `wait_for(text)` returns once a line holding `text` has arrived; `guard` seconds are only a
    hang guard, far above any expected wait. `text()` is everything read, once the stream ends.
    """

    def __init__(self, stream):
        import threading

        self.lines, self.ended = [], False
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream):
        for line in stream:
            with self._changed:
                self.lines.append(line)
                self._changed.notify_all()
        with self._changed:
            self.ended = True
            self._changed.notify_all()

    def wait_for(self, text, guard=600):
        def seen():
            return any(text in line for line in self.lines)

        with self._changed:
            self._changed.wait_for(lambda: seen() or self.ended, timeout=guard)
            assert seen(), f"no line with {text!r} ({'the stream ended' if self.ended else 'hang guard'}):\n" + \
                "".join(self.lines)[-3000:]

    def text(self, guard=600):
        self._thread.join(timeout=guard)
        return "".join(self.lines)


def exit_status(process, what, guard=600):
    """`process`'s exit status once it ends; `guard` seconds are only a hang guard, far above any expected wait:
    past them the process is killed and the test fails, saying it did not end after `what`."""
    try:
        return process.wait(timeout=guard)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        raise AssertionError(f"hang guard: the process did not end within {guard} s after {what}.") from None


def checksums(folder):
    """sha256 of every file under `folder`, by relative path (what a refused command must leave as it was)."""
    import hashlib

    folder = pathlib.Path(folder)
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def make_run_dir(model_dir, vocab_file, seed=0, **overrides):
    """A pre-training `model_dir` as `electra_tf.pretrain` leaves it, with an untrained tiny model."""
    import keras

    from electra_tf.config import get_config
    from electra_tf.data.tokenizer import load_vocab
    from electra_tf.models.pretrainer import build_pretrainer
    from electra_tf import run_files

    values = dict(vocab_size=len(load_vocab(vocab_file)), embedding_dim=32, hidden_dim=64, num_layers=2,
                  num_heads=2, intermediate_dim=128, max_sequence_length=128, seq_length=64)
    values.update(overrides)
    config = get_config("tiny", **values)
    os.makedirs(model_dir, exist_ok=True)
    keras.utils.set_random_seed(seed)
    pretrainer = build_pretrainer(config)
    pretrainer.discriminator.save(os.path.join(model_dir, run_files.DISCRIMINATOR_FILE))
    run_files.write_config(config, str(model_dir))
    shutil.copyfile(vocab_file, os.path.join(model_dir, run_files.VOCAB_FILE))
    return str(model_dir)


def finetuned_runs(root, kinds, vocab_file, seed=0, **encoder_sizes):
    """Tiny untrained fine-tuning output dirs, as `finetune` leaves them, and their TF Serving exports.

    Args:
        root: pathlib.Path. Each run goes to `root/<name>`, its export to `root/serving/<name>/1`.
        kinds: dict name -> (build(encoder) -> model, its file name, its `finetune_config.json` dict).
        vocab_file: str. The vocabulary (30522 pieces: the encoder's vocabulary size).
        seed: int. Run i is built under seed `seed + i`.
        **encoder_sizes: `ElectraEncoder` sizes.

    Returns:
        `({name: run dir}, {name: SavedModel version dir})`, str paths.
    """
    import json

    import keras

    from electra_tf import export_formats
    from electra_tf import tasks as task_kinds
    from electra_tf.models.encoder import ElectraEncoder
    from electra_tf import run_files

    dirs, exports = {}, {}
    for i, (name, (build, file_name, config)) in enumerate(kinds.items()):
        keras.utils.set_random_seed(seed + i)
        model = build(ElectraEncoder(vocab_size=30522, max_sequence_length=64, **encoder_sizes))
        model.build()
        run = pathlib.Path(root) / name
        run.mkdir()
        model.save(str(run / file_name))
        shutil.copyfile(vocab_file, run / run_files.VOCAB_FILE)
        (run / run_files.FINETUNE_CONFIG_FILE).write_text(json.dumps(config))
        dirs[name] = str(run)
        finetuned = task_kinds.OUTPUTS.load(str(run))  # what `export --format serving` does
        exports[name] = export_formats.export_serving(finetuned.model, finetuned.vocab_file,
                                                      str(pathlib.Path(root) / "serving"), name, 1, finetuned.settings)
    return dirs, exports


def python_bert_tokenizer(vocab_file, **settings):
    """transformers' Python port of BERT's `tokenization.py` (`BertTokenizerLegacy` from transformers 5 on,
    `BertTokenizer` before), or skip the test without transformers."""
    transformers = pytest.importorskip("transformers")
    try:
        from transformers.models.bert.tokenization_bert_legacy import BertTokenizerLegacy as port
    except ImportError:
        port = transformers.BertTokenizer
    return port(str(vocab_file), **settings)


def write_vocab(path, vocab_size=400):
    """A `vocab.txt` laid out as BERT's ([PAD], [unused0-99], [UNK] [CLS]=101 [SEP]=102 [MASK], pieces)."""
    tokens = ["[PAD]"] + [f"[unused{i}]" for i in range(100)] + ["[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tokens += [f"piece{i}" for i in range(vocab_size - len(tokens))]
    pathlib.Path(path).write_text("".join(t + "\n" for t in tokens[:vocab_size]))
    return str(path)


def write_records(directory, num_files=2, num_examples=64, seq_length=32, vocab_size=400, seed=0,
                  features=("input_ids", "input_mask", "segment_ids")):
    """Writes random pre-training records in the official format, and their `vocab.txt`; returns their glob."""
    import numpy as np
    import tensorflow as tf

    directory = pathlib.Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    write_vocab(directory / "vocab.txt", vocab_size)
    rng = np.random.RandomState(seed)
    for f in range(num_files):
        with tf.io.TFRecordWriter(str(directory / f"records-{f}.tfrecord")) as writer:
            for _ in range(num_examples):
                n = rng.randint(8, seq_length + 1)
                ids = [101] + list(rng.randint(150, vocab_size, n - 2)) + [102] + [0] * (seq_length - n)
                values = {"input_ids": ids, "input_mask": [1] * n + [0] * (seq_length - n),
                          "segment_ids": [0] * seq_length}
                feature = {name: tf.train.Feature(int64_list=tf.train.Int64List(value=values.get(name, values["segment_ids"])))
                           for name in features}
                writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
    return str(directory / "records-*.tfrecord")


_ONE_AND_TWO_CPUS = """
import json, sys
import numpy as np, tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
sys.path[:0] = ["tests", "tests/finetuning"]
{body}
out = {{}}
from electra_tf.training.distribute import HostStrategy  # what `--strategy cpu` builds
for name, strategy in {{"one": HostStrategy("/cpu:0"),
                       "two": tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])}}.items():
    out[name] = {{key: [np.asarray(v).tolist() for v in values] for key, values in train(name, strategy).items()}}
    out[name]["replicas"] = strategy.num_replicas_in_sync
print(json.dumps(out))
"""


def train_on_one_and_two_cpus(body, *args):
    """Runs `body` in a fresh process that has 2 logical CPUs (they must be set before TensorFlow starts).

    `body` is Python source that reads `sys.argv[1:]` (= `args`) and defines `train(name, strategy)`,
    which trains under `strategy` (one device, then 2 mirrored replicas) and returns a dict of lists
    (losses, weights). Returns that dict for one device and for the 2 replicas.
    """
    import json

    script = _ONE_AND_TWO_CPUS.format(body=textwrap.dedent(body))
    result = run_python(["-c", script, *map(str, args)])
    runs = json.loads(result.stdout.strip().splitlines()[-1])
    assert (runs["one"].pop("replicas"), runs["two"].pop("replicas")) == (1, 2)
    return runs["one"], runs["two"]


def assert_trained_alike(one_loss, one_weights, loss, weights):
    """Same global batches on one device and on several replicas: equal epoch losses and final weights,
    and the one-device run trained."""
    import numpy as np

    np.testing.assert_allclose(loss, one_loss, rtol=1e-5, atol=1e-6)
    assert one_loss[-1] < one_loss[0]
    assert len(one_weights) == len(weights) > 10
    for a, b in zip(one_weights, weights):
        np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-4, atol=1e-5)


def digests(folder):
    """path -> sha256 of every file under `folder` (to prove nothing changed)."""
    out = {}
    for root, _, files in os.walk(folder):
        for name in files:
            with open(os.path.join(root, name), "rb") as f:
                out[os.path.join(root, name)] = hashlib.sha256(f.read()).hexdigest()
    return out


def command_cases(cases):
    """`(command, ...)` cases as parameters: each command's first runs in the fast suite, the others are large
    (a process each)."""
    seen = set()
    for i, case in enumerate(cases):
        large = case[0] in seen
        seen.add(case[0])
        yield pytest.param(*case, id=f"{case[0].split('.')[-1]}-{i}", marks=[pytest.mark.large] if large else [])


def refusal(command, arguments, flag, expected):
    """Runs `python -m electra_tf.<command> <arguments>`; asserts one `error:` line naming `--flag=` and matching
    the regular expression `expected`, exit 1; returns the line."""
    line = error_line(run_python(["-m", f"electra_tf.{command}", *arguments.split()], check=False))
    assert f"--{flag}=" in line and re.search(expected, line), line
    return line


def error_line(result, exit_code=1):
    """The one `error: ...` line of a command that exited `exit_code` (1; a bad flag: 2) without a traceback."""
    lines = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert result.returncode == exit_code and len(lines) == 1 and "Traceback" not in result.stderr, \
        result.stderr[-3000:]
    return lines[0]


# --- The official SQuAD v1.1 evaluation script's answer comparison (an independent reference) ---


def official_normalize(s):
    """The official SQuAD v1.1 `normalize_answer`."""
    s = "".join(ch for ch in s.lower() if ch not in set(string.punctuation))
    return " ".join(re.sub(r"\b(a|an|the)\b", " ", s).split())


def official_exact(prediction, gold):
    return float(official_normalize(prediction) == official_normalize(gold))


def official_f1(prediction, gold):
    p, g = official_normalize(prediction).split(), official_normalize(gold).split()
    common = sum((collections.Counter(p) & collections.Counter(g)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(p), common / len(g)
    return 2 * precision * recall / (precision + recall)


def warmup_requests(version_folder):
    """The `PredictRequest`s of a version's warm-up file, parsed by tensorflow-serving-api's own messages."""
    import tensorflow as tf
    from tensorflow_serving.apis import prediction_log_pb2

    path = os.path.join(version_folder, "assets.extra", "tf_serving_warmup_requests")
    logs = [prediction_log_pb2.PredictionLog.FromString(record.numpy()) for record in tf.data.TFRecordDataset(path)]
    assert logs and all(log.WhichOneof("log_type") == "predict_log" for log in logs)
    return [log.predict_log.request for log in logs]


def request_feeds(request):
    """What the model server feeds a signature for a `PredictRequest`: its decoded input tensors, by name."""
    import tensorflow as tf

    return {name: tf.constant(tf.make_ndarray(proto)) for name, proto in request.inputs.items()}


def tensorboard_values(logdir, tag):
    """{step: value} of a scalar Keras' TensorBoard callback wrote under `logdir` (`batch_loss`, `epoch_disc_auc`)."""
    import tensorflow as tf
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(logdir), size_guidance={"tensors": 0}).Reload()
    return {event.step: float(tf.make_ndarray(event.tensor_proto)) for event in events.Tensors(tag)}


LINE_BREAKS = "\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"  # what str.splitlines breaks at, besides \n and \r
# Three texts, each holding some of them: one line each (a reader must give one record per text).
LINE_TEXTS = ["first\x0cpage and a\x0bvertical tab", "second\u2028line\u2029paragraph\x85next",
              "third\x1cfile\x1dgroup\x1erecord"]


def write_lines(path, lines, end="\n"):
    """Writes `lines`, each ended by `end`, as UTF-8; returns the path as a str."""
    path.write_bytes("".join(line + end for line in lines).encode("utf-8"))
    return str(path)


def read_records(path):
    """The records of a JSON Lines file (`predict`'s output)."""
    return [json.loads(line) for line in pathlib.Path(path).read_text().splitlines()]


def assert_same_records(new, old, tolerance=1e-5):
    """The same records (any nest of dicts and lists), their floats within `tolerance`, all else equal."""
    assert type(new) is type(old) or {type(new), type(old)} == {int, float}, (new, old)
    if isinstance(old, dict):
        assert new.keys() == old.keys(), (new, old)
        for key in old:
            assert_same_records(new[key], old[key], tolerance)
    elif isinstance(old, list):
        assert len(new) == len(old), (new, old)
        for a, b in zip(new, old):
            assert_same_records(a, b, tolerance)
    elif isinstance(old, float):
        assert abs(new - old) <= tolerance, (new, old)
    else:
        assert new == old, (new, old)


# Runs `pretrain` (its arguments: this script's) and SIGKILLs it once the optimizer has taken `KILL_AT_STEP` steps
# (after that step's callbacks), wherever that falls between checkpoints.
KILL_AT_STEP = textwrap.dedent("""
    import os, signal, sys
    import keras
    target = int(os.environ["KILL_AT_STEP"])
    original = keras.callbacks.CallbackList.on_train_batch_end
    def on_train_batch_end(self, batch, logs=None):
        original(self, batch, logs)
        if int(self.model.optimizer.iterations.numpy()) >= target:
            os.kill(os.getpid(), signal.SIGKILL)
    keras.callbacks.CallbackList.on_train_batch_end = on_train_batch_end
    from electra_tf.pretrain import run
    sys.argv = ["electra-pretrain", *sys.argv[1:]]
    run()
""")
