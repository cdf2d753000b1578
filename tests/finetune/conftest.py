"""Fixtures: a tiny pre-training run directory, as `electra_tf.pretrain` leaves it."""

import os
import shutil

import pytest

SHARED = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "data"))
VOCAB = os.path.join(SHARED, "vocab", "bert_uncased_vocab.txt")


def make_run_dir(model_dir, vocab_file=VOCAB, seed=0, **overrides):
    """config.json + vocab.txt + discriminator.keras of an untrained tiny model."""
    import keras

    from electra_tf.config import get_config
    from electra_tf.data.tokenizer import load_vocab
    from electra_tf.models.pretrainer import build_pretrainer

    values = dict(vocab_size=len(load_vocab(vocab_file)), embedding_dim=32, hidden_dim=64, num_layers=2,
                  num_heads=2, intermediate_dim=128, max_sequence_length=128, seq_length=64)
    values.update(overrides)
    config = get_config("tiny", **values)
    os.makedirs(model_dir, exist_ok=True)
    keras.utils.set_random_seed(seed)
    pretrainer = build_pretrainer(config)
    pretrainer.discriminator.build()
    pretrainer.discriminator.save(os.path.join(model_dir, "discriminator.keras"))
    with open(os.path.join(model_dir, "config.json"), "w") as f:
        f.write(config.to_json())
    shutil.copyfile(vocab_file, os.path.join(model_dir, "vocab.txt"))
    return str(model_dir)


@pytest.fixture(scope="session")
def run_dir(tmp_path_factory):
    if not os.path.exists(VOCAB):
        pytest.skip(f"shared vocabulary missing: {VOCAB}")
    return make_run_dir(tmp_path_factory.mktemp("run"))
