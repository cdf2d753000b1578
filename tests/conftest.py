"""Shared fixtures: a demo corpus built once, small pre-training records."""

import os
import pathlib

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


@pytest.fixture(scope="session")
def demo_data(tmp_path_factory):
    """The embedded demo corpus built once per session: dict(data=glob, vocab_file=path)."""
    from electra_tf.pipelines.demo_corpus import build_demo_data

    return build_demo_data(str(tmp_path_factory.mktemp("demo")), seq_length=128)


@pytest.fixture
def write_records():
    """Writes random pre-training records in the official format; returns their glob."""
    from helpers import write_records as write

    return write
