"""`import electra_tf.saved_classes, keras; keras.saving.load_model(path)` restores every model file electra_tf writes.

Each file is written by the command that writes it (`finetune` for each task kind; the pre-training run's
`discriminator.keras` as `pretrain` saves it). A fresh interpreter that imports only `electra_tf.saved_classes`
and `keras` loads it with Keras' defaults (compile=True: the optimizer, `LayerwiseAdamW`, and its learning-rate
schedule restored too); its weights are those the test reads with the classes imported and compile=False.
"""

import json
import os
import sys

import numpy as np
import pytest

from helpers import make_run_dir, run_python, shared_data

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "finetuning"))
from test_finetune_strategies import write_toy_tasks  # noqa: E402
from test_journeys import write_toy_choices  # noqa: E402
from toy_tasks import write_conll, write_toy_pairs, write_toy_squad  # noqa: E402

from electra_tf import tasks  # noqa: E402

pytestmark = pytest.mark.large  # slow tier: together these tests take minutes

# A user's script: nothing of electra_tf named but the one documented import.
LOAD = """
import json, sys
import electra_tf.saved_classes, keras
model = keras.saving.load_model(sys.argv[1])
optimizer = getattr(model, "optimizer", None)  # a model saved uncompiled has none
print(json.dumps({"model": type(model).__name__,
                  "optimizer": type(optimizer).__name__ if optimizer is not None else None,
                  "schedule": type(getattr(optimizer, "_learning_rate", None)).__name__,
                  "built": bool(optimizer is not None and optimizer.built),
                  "weights": [float(abs(w).sum()) for w in model.get_weights()]}))
"""

# kind -> (toy data writer, its own finetune flags): every kind that fine-tunes (the registry); a kind it adds
# needs its toy task here.
TOY = {
    "classification": (write_toy_tasks, []),
    "tagging": (lambda d: write_conll(d, (("train", 16), ("dev", 8))), []),
    "span_qa": (lambda d: write_toy_squad(d, (("train", 2), ("dev", 1))), ["--doc_stride=16", "--max_query_length=12"]),
    "multiple_choice": (lambda d: write_toy_choices(d, (("train", 16), ("dev", 8))), []),
    "embedding": (write_toy_pairs, []),
}
KINDS = sorted(tasks.FINETUNED)


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory):
    vocab = str(shared_data("vocab", "bert_uncased_vocab.txt"))
    return make_run_dir(tmp_path_factory.mktemp("pre"), vocab, num_layers=1, hidden_dim=32, embedding_dim=16,
                        intermediate_dim=64, max_sequence_length=48, seq_length=32)


def load_in_a_fresh_process(path):
    result = run_python(["-c", LOAD, str(path)], check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def reference_weights(path):
    import keras

    import electra_tf.saved_classes  # noqa: F401  (the classes, imported by name)

    return [float(np.abs(w).sum()) for w in keras.saving.load_model(str(path), compile=False).get_weights()]


def finetuned(kind, pretrained, tmp_path):
    assert kind in TOY, f"no toy task for the {kind} kind: add one to TOY"
    write, flags = TOY[kind]
    run = tmp_path / "run"
    result = run_python(["-m", "electra_tf.finetune", "--task=toy", f"--task_kind={kind}", *flags,
                         f"--data_dir={write(str(tmp_path / 'data'))}",
                         f"--init={pretrained}", f"--output_dir={run}", "--epochs=1", "--batch_size=8",
                         "--seq_length=32", "--verbose=0"], check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    return run / tasks.get(kind).model_file


def test_the_pretraining_discriminator_loads_after_the_one_import(pretrained):
    path = os.path.join(pretrained, "discriminator.keras")
    loaded = load_in_a_fresh_process(path)
    assert (loaded["model"], loaded["optimizer"]) == ("ElectraEncoder", None)  # as pretrain saves it
    np.testing.assert_allclose(loaded["weights"], reference_weights(path), rtol=1e-6)


@pytest.mark.parametrize("kind", KINDS)
def test_a_finetuned_model_loads_with_its_optimizer_after_the_one_import(kind, pretrained, tmp_path):
    path = finetuned(kind, pretrained, tmp_path)
    loaded = load_in_a_fresh_process(path)
    assert loaded["model"] == tasks.get(kind).model_class.__name__
    assert (loaded["optimizer"], loaded["schedule"], loaded["built"]) == ("LayerwiseAdamW", "WarmupLinearDecay", True)
    np.testing.assert_allclose(loaded["weights"], reference_weights(path), rtol=1e-6)
