"""Fixtures: a tiny pre-training run directory, as `electra_tf.pretrain` leaves it."""

import os

import pytest

from helpers import make_run_dir

SHARED = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "data"))
VOCAB = os.path.join(SHARED, "vocab", "bert_uncased_vocab.txt")


@pytest.fixture(scope="session")
def run_dir(tmp_path_factory):
    if not os.path.exists(VOCAB):
        pytest.skip(f"shared vocabulary missing: {VOCAB}")
    return make_run_dir(tmp_path_factory.mktemp("run"), VOCAB)
