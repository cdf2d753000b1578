"""Every docstring example of `electra_tf`, `configs` and `pipelines` runs.

One test per docstring (id: the qualified name), each in a fresh namespace and
an empty temporary directory; see `doc_examples` for how examples are written
and found. The blocks of README.md and docs/ run in `tests/test_docs.py`.
"""

import os
import shutil

import pytest

import doc_examples

# What a user copies runs without a warning to learn to ignore (Keras warned on the README's `fit`).
pytestmark = [pytest.mark.filterwarnings("error::UserWarning"), pytest.mark.large]  # slow tier: minutes together

EXAMPLES = doc_examples.package_examples()

# Examples that train or export for longer than a few seconds; run with `-m large`.
LARGE = {
    "electra_tf.pipelines.demo_corpus.build_demo_data",  # the demo corpus, its vocabulary and records (Beam)
    "electra_tf.pipelines.build_pretraining_data.build_pretraining_data",  # a Beam pipeline
}


def _params(examples):
    return [
        pytest.param(e, id=e.name, marks=[pytest.mark.large] if e.name in LARGE else [])
        for e in examples
        if e.runnable
    ]


# The `test` extra: examples that need them skip without them, as the tests that do.
OPTIONAL = ("torch", "transformers")


def _run(example):
    try:
        doc_examples.run(example)
    except ModuleNotFoundError as e:
        if (e.name or "").split(".")[0] in OPTIONAL:
            pytest.skip(f"{e.name} is not installed")
        raise


# Examples that build the demo data with the defaults into a folder of the working directory:
# they find there a copy of the session's build (`conftest.demo_data`, the same parameters), so
# they run the cache-hit path; the build itself is tested once, in `pipelines/test_demo_corpus.py`.
DEMO_FOLDERS = {
    "electra_tf.pipelines.demo_corpus.build_demo_data": "electra_demo",
}


@pytest.fixture
def fresh_dir(tmp_path, monkeypatch, request):
    monkeypatch.chdir(tmp_path)
    example = request.node.callspec.params["example"]
    if example.name in DEMO_FOLDERS:
        demo = request.getfixturevalue("demo_data")
        shutil.copytree(demo["demo_dir"], tmp_path / DEMO_FOLDERS[example.name])
    yield tmp_path
    import keras

    keras.backend.clear_session(free_memory=False)  # the collector runs as ever; a full pass per example took 1-2 s


@pytest.mark.parametrize("example", _params(EXAMPLES))
def test_docstring_example(example, fresh_dir):
    _run(example)


def test_examples_are_found():
    names = {e.name for e in EXAMPLES}
    assert len([e for e in EXAMPLES if e.runnable]) >= 60
    assert "electra_tf.models.encoder.ElectraEncoder" in names
    assert LARGE <= names, LARGE - names
    assert set(DEMO_FOLDERS) <= LARGE, set(DEMO_FOLDERS) - LARGE  # a renamed example would rebuild the demo data


def test_every_example_section_holds_code():
    """An `Example:` section shows runnable code, or shell commands in a ```bash fence."""
    empty = [e.name for e in EXAMPLES if e.example_sections and not (e.blocks or e.shell)]
    assert not empty, f"`Example:` sections without a ```python, >>> or ```bash example: {empty}"
