"""Shared fixtures: a demo corpus built once, small pre-training records, the real CoNLL-2003 files and the shared
BERT vocabulary (skipped when absent), a tiny pre-training run; one JAX compilation cache; the parallel workers."""

import fcntl
import importlib.util
import os
import pathlib

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# TensorFlow's CPU kernels as the commands choose them (`cli.cpu_kernels`: oneDNN unless the variable
# is set), also for the tests that run in this process.
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")


def run_folder(tmp_path_factory):
    """The folder every process of this test run shares: pytest-xdist workers' base temp folders lie in the
    run's folder; without workers, the base temp folder itself."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if "PYTEST_XDIST_WORKER" in os.environ else base


@pytest.fixture(scope="session")
def demo_data(tmp_path_factory):
    """The embedded demo corpus built once per session: dict(data=glob, vocab_file=path, demo_dir=the cache,
    what `--demo_dir` takes)."""
    from electra_tf.pipelines.demo_corpus import build_demo_data

    # One build for all pytest-xdist workers: the first builds under the lock; the others wait and hit
    # build_demo_data's cache.
    shared = run_folder(tmp_path_factory)
    with open(shared / "demo.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return dict(build_demo_data(str(shared / "demo"), seq_length=128), demo_dir=str(shared / "demo"))


@pytest.fixture(scope="session", autouse=True)
def jax_compilation_cache(tmp_path_factory):
    """One JAX compilation cache for the session's commands (JAX's own `JAX_COMPILATION_CACHE_DIR`), unless the
    user set one: the many short JAX processes of the backend tests compile each step once, not once each (a tiny
    pre-training command: about 23 s cold, 11 s from the cache). The cache holds XLA's executables, so a command
    computes what it computes cold."""
    if "JAX_COMPILATION_CACHE_DIR" in os.environ:
        yield os.environ["JAX_COMPILATION_CACHE_DIR"]
        return
    folder = run_folder(tmp_path_factory) / "jax-cache"
    values = {"JAX_COMPILATION_CACHE_DIR": str(folder),
              "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0"}  # also the small programs that build the weights
    if importlib.util.find_spec("filelock") is not None:
        # A size limit turns on JAX's file lock around each read and write: a process never reads an entry that
        # another one is writing (without it, JAX warns and compiles again).
        values["JAX_COMPILATION_CACHE_MAX_SIZE"] = str(4 * 2**30)
    os.environ.update(values)
    yield str(folder)
    for name in values:
        os.environ.pop(name, None)


def pytest_xdist_auto_num_workers(config):
    """`-n auto` (pytest.ini): one worker per core, at most 4 (each holds TensorFlow, about 1-2 GB)."""
    return max(1, min(len(os.sched_getaffinity(0)), 4))


@pytest.fixture
def write_records():
    """Writes random pre-training records in the official format; returns their glob."""
    from helpers import write_records as write

    return write


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
    from helpers import SHARED_DATA

    path = SHARED_DATA / "vocab" / "bert_uncased_vocab.txt"
    if not path.exists():
        pytest.skip(f"shared vocabulary missing: {path}")
    return str(path)


@pytest.fixture(scope="session")
def run_dir(tmp_path_factory, bert_vocab):
    """A tiny untrained pre-training run directory, as `electra_tf.pretrain` leaves it."""
    from helpers import make_run_dir

    return make_run_dir(tmp_path_factory.mktemp("run"), bert_vocab)
