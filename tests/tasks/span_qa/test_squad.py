"""Span-QA fine-tuning end to end: run_trials on toy SQuAD files (1.1, and 2.0 through swapped contexts),
the CLI with the simple head under mixed_bfloat16 + XLA, and 2 mirrored logical CPUs like one device."""

import json
import os

import keras
import numpy as np
import pytest

from electra_tf.tasks import FinetuneConfig
from electra_tf.tasks import finetune as run_trials, for_config
from helpers import assert_trained_alike, run_python, train_on_one_and_two_cpus
from toy_tasks import write_toy_squad

pytestmark = pytest.mark.large  # slow tier: together these tests take minutes

VOCAB = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "shared", "data", "vocab",
                     "bert_uncased_vocab.txt")
SETTINGS = dict(epochs=2, batch_size=8, learning_rate=2e-3, seq_length=48, doc_stride=16, max_query_length=12,
                verbose=0, start_n_top=4, end_n_top=4)


def is_span_qa(config):
    return for_config(config).name == "span_qa"


def run_qa(config, strategy=None):
    return run_trials(config, strategy)


def test_task_kind():
    assert is_span_qa(FinetuneConfig(task="squad"))
    assert is_span_qa(FinetuneConfig(task="squad_v2"))
    assert is_span_qa(FinetuneConfig(task="my_qa", task_kind="span_qa"))
    assert not is_span_qa(FinetuneConfig(task="conll2003"))
    with pytest.raises(ValueError, match="qa_head"):
        FinetuneConfig(qa_head="xlnet")
    with pytest.raises(ValueError, match="doc_stride"):
        FinetuneConfig(doc_stride=0)


@pytest.mark.skipif(not os.path.exists(VOCAB), reason="shared vocabulary missing")
def test_run_qa_squad2_path_through_swapped_contexts(run_dir, tmp_path):
    data = write_toy_squad(tmp_path / "data")
    out = tmp_path / "out"
    config = FinetuneConfig(task="toy_squad", task_kind="span_qa", data_dir=data, init=run_dir, output_dir=str(out),
                            swap_contexts=True, **SETTINGS)
    results = run_qa(config)
    assert results["squad_version"] == "2.0" and results["kind"] == "span_qa"
    losses = results["trials"][0]["train_loss"]
    assert np.all(np.isfinite(losses)) and losses[1] < losses[0]
    dev = results["trials"][0]["dev"]
    assert dev["HasAns_total"] == dev["NoAns_total"] == 8 and dev["total"] == 16
    assert dev["f1"] == pytest.approx(dev["best_f1"]) and "null_threshold" in dev
    assert results["features"]["train"]["unmappable"] == 0 and results["num_train_windows"] >= 48
    predictions = json.loads((out / "predictions.json").read_text())
    assert len(predictions) == 16 and all(isinstance(v, str) for v in predictions.values())
    assert set(json.loads((out / "null_odds.json").read_text())) == set(predictions)
    saved = json.loads((out / "finetune_config.json").read_text())
    assert saved["kind"] == "span_qa" and saved["answerable"] is True and saved["doc_stride"] == 16
    model = keras.saving.load_model(out / "question_answerer.keras", compile=False)
    assert model.answerable and model.head == "official"
    assert (out / "vocab.txt").exists()


@pytest.mark.skipif(not os.path.exists(VOCAB), reason="shared vocabulary missing")
def test_cli_simple_head(run_dir, tmp_path):
    data = write_toy_squad(tmp_path / "data", articles=(("train", 2), ("dev", 1)))
    out = tmp_path / "out"
    flags = [f"--{k}={v}" for k, v in dict(SETTINGS, epochs=1).items()]
    result = run_python(["-m", "electra_tf.finetune", "--task=squad", f"--data_dir={data}", f"--init={run_dir}",
                         f"--output_dir={out}", "--qa_head=simple", *flags])
    assert "dev f1: mean" in result.stdout
    results = json.loads((out / "results.json").read_text())
    assert results["squad_version"] == "1.1" and results["hparams"]["qa_head"] == "simple"
    assert len(json.loads((out / "predictions.json").read_text())) == 4


@pytest.fixture
def float32_after():
    yield
    keras.mixed_precision.set_global_policy("float32")


@pytest.mark.large  # XLA compiles on 2 CPU cores take minutes
@pytest.mark.skipif(not os.path.exists(VOCAB), reason="shared vocabulary missing")
def test_mixed_bfloat16_and_xla(run_dir, tmp_path, float32_after):
    data = write_toy_squad(tmp_path / "data", articles=(("train", 3), ("dev", 2)))
    config = FinetuneConfig(task="squad", data_dir=data, init=run_dir, output_dir=str(tmp_path / "out"),
                            precision="mixed_bfloat16", jit_compile=True, swap_contexts=True, **SETTINGS)
    results = run_qa(config)
    losses = results["trials"][0]["train_loss"]
    assert np.all(np.isfinite(losses)) and losses[1] < losses[0]
    assert results["hparams"]["precision"] == "mixed_bfloat16" and results["hparams"]["jit_compile"] is True
    model = keras.saving.load_model(tmp_path / "out" / "question_answerer.keras", compile=False)
    assert model.encoder.transformer_layers[0].compute_dtype == "bfloat16"


MIRRORED_BODY = """
import os
import sys
import keras
sys.path.insert(0, "tests/tasks/span_qa")
from helpers import make_run_dir
from test_squad import SETTINGS, write_toy_squad
from electra_tf.tasks import FinetuneConfig
from electra_tf.tasks import finetune as run_trials

tmp, vocab = sys.argv[1:]
run_dir = make_run_dir(os.path.join(tmp, "run"), vocab, dropout=0.0, num_layers=1, hidden_dim=32,
                       embedding_dim=16, intermediate_dim=64, max_sequence_length=64, seq_length=16)
data = write_toy_squad(os.path.join(tmp, "data"), articles=(("train", 4), ("dev", 2)))

def train(name, strategy):
    config = FinetuneConfig(task="squad", data_dir=data, init=run_dir, output_dir=os.path.join(tmp, name),
                            swap_contexts=True, clip_norm=0.05, **SETTINGS)
    result = run_trials(config, strategy)
    weights = keras.saving.load_model(os.path.join(tmp, name, "question_answerer.keras")).get_weights()
    return {"loss": result["trials"][0]["train_loss"], "weights": weights}
"""


@pytest.mark.large
@pytest.mark.skipif(not os.path.exists(VOCAB), reason="shared vocabulary missing")
def test_mirrored_two_logical_cpus_fine_tune_like_one_device(tmp_path):
    one, two = train_on_one_and_two_cpus(MIRRORED_BODY, tmp_path, VOCAB)
    assert_trained_alike(one["loss"], one["weights"], two["loss"], two["weights"])
