"""Shared fixtures: a demo corpus built once, small pre-training records; the parallel workers."""

import fcntl
import os
import pathlib

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# TensorFlow's CPU kernels as the commands choose them (`cli.cpu_kernels`: oneDNN unless the variable
# is set), also for the tests that run in this process.
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")


@pytest.fixture(scope="session")
def demo_data(tmp_path_factory):
    """The embedded demo corpus built once per session: dict(data=glob, vocab_file=path, demo_dir=the cache,
    what `--demo_dir` takes)."""
    from electra_tf.pipelines.demo_corpus import build_demo_data

    if "PYTEST_XDIST_WORKER" not in os.environ:
        root = str(tmp_path_factory.mktemp("demo"))
        return dict(build_demo_data(root, seq_length=128), demo_dir=root)
    # One build for all pytest-xdist workers: their base temp folders share this run's folder. The
    # first worker builds under the lock; the others wait and hit build_demo_data's cache.
    shared = tmp_path_factory.getbasetemp().parent
    with open(shared / "demo.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return dict(build_demo_data(str(shared / "demo"), seq_length=128), demo_dir=str(shared / "demo"))


def pytest_xdist_auto_num_workers(config):
    """`-n auto` (pytest.ini): one worker per core, at most 4 (each holds TensorFlow, about 1-2 GB)."""
    return max(1, min(len(os.sched_getaffinity(0)), 4))


@pytest.fixture
def write_records():
    """Writes random pre-training records in the official format; returns their glob."""
    from helpers import write_records as write

    return write
