"""Fine-tuning under strategies and precisions: 2 mirrored logical CPUs train like one device;
mixed_bfloat16 and XLA run on CPU, for classification, regression and tagging; 2 local
multi_worker processes train like one device (large)."""

import json
import os
import socket
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest

from helpers import REPO, assert_trained_alike, make_run_dir, train_on_one_and_two_cpus

pytestmark = pytest.mark.large  # slow tier: together these tests take minutes

VOCAB = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "data", "vocab",
                                     "bert_uncased_vocab.txt"))
WORDS = ["the", "film", "was", "good", "bad", "john", "went", "to", "paris", "and", "saw", "mary"]


def write_toy_tasks(directory, num_sentences=48, seed=0):
    """A classification TSV and a CoNLL file of the same short sentences, train and dev."""
    rng = np.random.RandomState(seed)
    os.makedirs(directory, exist_ok=True)
    for split in ("train", "dev"):
        rows, blocks = ["sentence\tlabel"], []
        for _ in range(num_sentences):
            words = [WORDS[i] for i in rng.randint(0, len(WORDS), rng.randint(3, 9))]
            rows.append(f"{' '.join(words)}\t{int('good' in words)}")
            tags = ["B-PER" if w in ("john", "mary") else "B-LOC" if w == "paris" else "O" for w in words]
            blocks.append("\n".join(f"{w} X {t}" for w, t in zip(words, tags)))
        with open(os.path.join(directory, f"{split}.tsv"), "w") as f:
            f.write("\n".join(rows) + "\n")
        with open(os.path.join(directory, f"{split}.txt"), "w") as f:
            f.write("\n\n".join(blocks) + "\n")
    return str(directory)


MIRRORED_BODY = """
import os
import keras
from helpers import make_run_dir
from test_finetune_strategies import write_toy_tasks
from electra_tf.tasks import FinetuneConfig
from electra_tf.tasks import finetune as run_trials

tmp, vocab = sys.argv[1:]
run_dir = make_run_dir(os.path.join(tmp, "run"), vocab, dropout=0.0, num_layers=2, hidden_dim=32,
                       embedding_dim=16, intermediate_dim=64, max_sequence_length=32, seq_length=16)
data = write_toy_tasks(os.path.join(tmp, "data"))
settings = dict(epochs=2, batch_size=8, learning_rate=2e-3, dropout=0.0, seq_length=16, verbose=0,
                clip_norm=0.05)  # a clip that binds: it must see the global gradient

def train(name, strategy):
    result = run_trials(FinetuneConfig(task="toy", task_kind="classification", data_dir=data, init=run_dir,
                                       output_dir=os.path.join(tmp, name, "cls"), text_a_column="sentence",
                                       label_column="label", **settings), strategy)
    config = FinetuneConfig(task="toy", task_kind="tagging", data_dir=data, init=run_dir,
                            output_dir=os.path.join(tmp, name, "tag"), **settings)
    tagged = run_trials(config, strategy)
    load = lambda *path: keras.saving.load_model(os.path.join(tmp, name, *path)).get_weights()
    return {"cls_loss": result["trials"][0]["train_loss"], "tag_loss": tagged["trials"][0]["train_loss"],
            "cls_weights": load("cls", "classifier.keras"), "tag_weights": load("tag", "token_classifier.keras")}
"""


@pytest.mark.skipif(not os.path.exists(VOCAB), reason="shared vocabulary missing")
def test_mirrored_two_logical_cpus_fine_tune_like_one_device(tmp_path):
    """Same global batches, dropout off: epoch losses and every final weight agree to float tolerance."""
    one, two = train_on_one_and_two_cpus(MIRRORED_BODY, tmp_path, VOCAB)
    for kind in ("cls", "tag"):
        assert_trained_alike(one[f"{kind}_loss"], one[f"{kind}_weights"], two[f"{kind}_loss"], two[f"{kind}_weights"])


@pytest.fixture
def float32_after():
    yield
    keras.mixed_precision.set_global_policy("float32")


@pytest.mark.skipif(not os.path.exists(VOCAB), reason="shared vocabulary missing")
@pytest.mark.parametrize("kind", ["classification", "regression", "tagging"])
def test_mixed_bfloat16_and_xla_fine_tune_on_cpu(kind, run_dir, tmp_path, float32_after):
    from electra_tf.tasks import FinetuneConfig
    from electra_tf.tasks import finetune as run_trials

    data = write_toy_tasks(tmp_path / "data", num_sentences=32)
    settings = dict(epochs=2, batch_size=8, learning_rate=2e-3, seq_length=16, verbose=0,
                    precision="mixed_bfloat16", jit_compile=True)
    if kind in ("classification", "regression"):
        config = FinetuneConfig(task="toy", task_kind="classification", data_dir=data, init=run_dir,
                                output_dir=str(tmp_path / "out"), text_a_column="sentence", label_column="label",
                                regression=kind == "regression", **settings)
        results = run_trials(config)
        model = keras.saving.load_model(tmp_path / "out" / "classifier.keras")
    else:
        config = FinetuneConfig(task="toy", task_kind="tagging", data_dir=data, init=run_dir,
                                output_dir=str(tmp_path / "out"), **settings)
        results = run_trials(config)
        model = keras.saving.load_model(tmp_path / "out" / "token_classifier.keras")
    losses = results["trials"][0]["train_loss"]
    assert np.all(np.isfinite(losses)) and losses[1] < losses[0]
    assert results["hparams"]["precision"] == "mixed_bfloat16" and results["hparams"]["jit_compile"] is True
    assert model.encoder.dtype_policy.name == "mixed_bfloat16"
    assert model.encoder.transformer_layers[0].compute_dtype == "bfloat16"
    assert model.encoder.weights[0].dtype == "float32"  # variables stay float32


WORKER_SCRIPT = textwrap.dedent(
    """
    import json, os, sys
    import keras
    from electra_tf.tasks import FinetuneConfig
    from electra_tf.finetuning.recipe import create_strategy
    from electra_tf.tasks import finetune as run_trials

    run_dir, data, out, strategy_name = sys.argv[1:]
    settings = dict(epochs=2, batch_size=8, learning_rate=2e-3, dropout=0.0, seq_length=16, verbose=0,
                    clip_norm=0.05)
    config = FinetuneConfig(task="toy", task_kind="tagging", data_dir=data, init=run_dir,
                            output_dir=os.path.join(out, "tag"), strategy=strategy_name, **settings)
    strategy = create_strategy(config)
    tagged = run_trials(config, strategy)
    result = run_trials(FinetuneConfig(task="toy", task_kind="classification", data_dir=data, init=run_dir,
                                       output_dir=os.path.join(out, "cls"), text_a_column="sentence",
                                       label_column="label", **settings), strategy)
    print(json.dumps({"tag_loss": tagged["trials"][0]["train_loss"], "cls_loss": result["trials"][0]["train_loss"],
                      "replicas": strategy.num_replicas_in_sync}))
    """
)


def free_ports(n):
    sockets = [socket.socket() for _ in range(n)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


@pytest.mark.large
@pytest.mark.skipif(not os.path.exists(VOCAB), reason="shared vocabulary missing")
def test_multi_worker_two_processes_fine_tune_like_one_device(tmp_path):
    """Two local workers (TF_CONFIG) fine-tune classification and tagging on the same global batches as
    one device: equal losses on both workers and the one-device run, the chief's saved weights equal the
    one-device run's, and the non-chief's scratch folders are gone."""
    import electra_tf.saved_classes  # noqa: F401  (registers every kind's saved classes)
    run_dir = make_run_dir(tmp_path / "run", VOCAB, dropout=0.0, num_layers=2, hidden_dim=32, embedding_dim=16,
                           intermediate_dim=64, max_sequence_length=32, seq_length=16)
    data = write_toy_tasks(tmp_path / "data")
    workers = [f"127.0.0.1:{p}" for p in free_ports(2)]
    procs = []
    for index in (0, 1, None):
        env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="2")
        if index is None:
            args = [run_dir, data, str(tmp_path / "one"), "cpu"]
        else:
            env["TF_CONFIG"] = json.dumps({"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}})
            args = [run_dir, data, str(tmp_path / "multi"), "multi_worker"]
        procs.append(subprocess.Popen([sys.executable, "-c", WORKER_SCRIPT, *args], cwd=REPO, env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outputs = [p.communicate(timeout=900) for p in procs]
    for p, (out, err) in zip(procs, outputs):
        assert p.returncode == 0, "\n\n".join(e[-4000:] for _, e in outputs)
    chief, other, one = (json.loads(out.strip().splitlines()[-1]) for out, _ in outputs)
    assert (chief["replicas"], other["replicas"], one["replicas"]) == (2, 2, 1)
    for kind, model_file in (("tag", "token_classifier.keras"), ("cls", "classifier.keras")):
        assert chief[f"{kind}_loss"] == other[f"{kind}_loss"]
        multi_weights = keras.saving.load_model(tmp_path / "multi" / kind / model_file, compile=False).get_weights()
        one_weights = keras.saving.load_model(tmp_path / "one" / kind / model_file, compile=False).get_weights()
        assert_trained_alike(one[f"{kind}_loss"], one_weights, chief[f"{kind}_loss"], multi_weights)
        assert not [p for p in os.listdir(tmp_path / "multi" / kind) if p.startswith(".worker_")]
