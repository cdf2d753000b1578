"""Fixtures: the real CoNLL-2003 files and the shared BERT vocabulary, skipped when absent."""

import os
import pathlib

import pytest

SHARED = pathlib.Path(__file__).resolve().parents[3] / "shared" / "data"


def benchmarks_dir():
    """Where `shared/data/build/fetch_finetune_benchmarks.sh` writes by default."""
    default = pathlib.Path.home() / ".cache" / "electra_tf" / "benchmarks"
    return pathlib.Path(os.environ.get("ELECTRA_TF_BENCHMARKS", default))


@pytest.fixture(scope="session")
def conll2003_dir():
    path = benchmarks_dir() / "conll2003"
    if not (path / "train.txt").exists() or not (path / "dev.txt").exists():
        pytest.skip(f"CoNLL-2003 not fetched into {path} (shared/data/build/fetch_finetune_benchmarks.sh)")
    return str(path)


@pytest.fixture(scope="session")
def bert_vocab():
    path = SHARED / "vocab" / "bert_uncased_vocab.txt"
    if not path.exists():
        pytest.skip(f"shared vocabulary missing: {path}")
    return str(path)


@pytest.fixture(scope="session")
def run_dir(tmp_path_factory, bert_vocab):
    """A tiny untrained pre-training run directory, as `electra_tf.pretrain` leaves it."""
    from helpers import make_run_dir

    return make_run_dir(tmp_path_factory.mktemp("run"), bert_vocab)
