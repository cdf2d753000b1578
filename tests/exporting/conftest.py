"""Session fixtures: one tiny pre-training run, a classifier on it, and its three exports.

The encoder uses `activation="gelu_approximate"` so the keras-hub backbone
(which hard-codes that GELU) can match it to float32 round-off.
"""

import json
import os
import shutil
import types

import pytest

from helpers import make_run_dir
from electra_tf.tasks import get as task_kind  # the registry: a kind by name

SHARED = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "data"))
SHARED_VOCAB = os.path.join(SHARED, "vocab", "bert_uncased_vocab.txt")
TINY_WORDS = ["the", "a", "film", "movie", "good", "bad", "great", "boring", "is", "was", "not", "very",
              "fine", "plot", "actors", "hello", "world", "!", ",", ".", "'", "s", "##s", "##ing", "##ed"]


def write_tiny_vocab(path):
    """A 5 special + 26 letters + a few words vocabulary (used when ../shared is absent)."""
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)]
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + letters + ["##" + c for c in letters] + TINY_WORDS
    tokens = list(dict.fromkeys(tokens))
    with open(path, "w") as f:
        f.write("".join(t + "\n" for t in tokens))
    return str(path)


@pytest.fixture(scope="session")
def artifacts(tmp_path_factory):
    """Everything the export tests read, built once."""
    import keras

    from electra_tf.exporting.encoder_saved_model import export_encoder
    from electra_tf.exporting.keras_hub_preset import export_preset
    from electra_tf.export_formats import export_serving
    from electra_tf.sources import load_discriminator
    ElectraClassifier = task_kind("classification").model_class

    root = tmp_path_factory.mktemp("export")
    vocab = SHARED_VOCAB if os.path.exists(SHARED_VOCAB) else write_tiny_vocab(root / "vocab.txt")
    run_dir = make_run_dir(root / "run", vocab, activation="gelu_approximate")
    encoder, _ = load_discriminator(run_dir)

    keras.utils.set_random_seed(1)
    finetuned = root / "finetuned"
    finetuned.mkdir()
    classifier = ElectraClassifier(encoder, num_labels=3)
    classifier.build()
    classifier.save(finetuned / "classifier.keras")
    shutil.copyfile(vocab, finetuned / "vocab.txt")
    label_names = ["negative", "neutral", "positive"]
    with open(finetuned / "finetune_config.json", "w") as f:
        json.dump({"task": "toy", "label_names": label_names, "regression": False, "pair": False,
                   "seq_length": 32}, f)

    serving_base = root / "serving"
    serving_path = export_serving(classifier, vocab, str(serving_base), "toy", 1, {"label_names": label_names},
                                  seq_length=32)
    encoder_path = export_encoder(encoder, vocab, str(root / "encoder"), seq_length=32)
    preset_path = export_preset(encoder, vocab, str(root / "preset"))
    return types.SimpleNamespace(
        root=root, vocab=vocab, run_dir=run_dir, encoder=encoder, classifier=classifier,
        finetuned=str(finetuned), label_names=label_names, serving_base=str(serving_base),
        serving_path=serving_path, encoder_path=encoder_path, preset_path=preset_path, seq_length=32,
    )


@pytest.fixture(scope="session")
def texts():
    return list(TEXTS)


TEXTS = [
    "A very good film!",
    "",
    "boring " * 200,  # longer than seq_length: truncated
    "Café déjà vu, naïve résumé",
    'He said "not bad" \t twice',
]
