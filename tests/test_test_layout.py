"""The tests follow the code's layout: a task kind is one folder in tests as it is in the package.

Each kind the registry declares (`electra_tf.tasks.DECLARED`: `electra_tf/tasks/<kind>/`) has its tests in
`tests/tasks/<kind>/`, and only they import the kind's modules. A test elsewhere that needs a kind reads it
through the registry (`tasks.get(name)`, `tasks.KINDS`, its `model_class`, `serving_module`, ...). Imports are
read as text (`ast`, function-level ones included), in every form: `import electra_tf.tasks.tagging.conll`,
`from electra_tf.tasks.tagging import conll`, `from electra_tf.tasks import tagging`.
"""

import ast
import pathlib

from electra_tf import tasks

TESTS = pathlib.Path(__file__).resolve().parent
KINDS_DIR = TESTS / "tasks"
FOLDERS = [module.split(".")[2] for module, _ in tasks.DECLARED]  # each kind's folder under electra_tf/tasks/
# Files outside the kinds' folders that import kinds' modules, and why they must.
EXEMPT = {
    "models/backend_outputs.py": "runs under every Keras backend with TensorFlow absent: the kinds' models import "
                                 "with Keras alone, the registry's kind classes import TensorFlow",
}


def kinds_imported(source, folders=FOLDERS):
    """The kind folders whose modules `source` imports, in any import form (sorted)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        for module in modules:
            parts = module.split(".")
            if parts[:2] == ["electra_tf", "tasks"] and len(parts) > 2 and parts[2] in folders:
                found.add(parts[2])
    return sorted(found)


def own_kind(path):
    """The kind folder a test file sits in (`tests/tasks/<kind>/...`), or None."""
    parts = path.relative_to(TESTS).parts
    return parts[1] if len(parts) > 2 and parts[0] == "tasks" else None


def test_kinds_imported_reads_every_import_form():
    source = ("import electra_tf.tasks.tagging.conll\n"
              "from electra_tf.tasks.span_qa import squad\n"
              "from electra_tf.tasks import embedding, get\n"
              "def f():\n    from electra_tf.tasks.classification.model import ElectraClassifier\n"
              "from electra_tf.tasks import FinetuneConfig\nimport electra_tf.tasks\nfrom electra_tf import tasks\n")
    assert kinds_imported(source) == ["classification", "embedding", "span_qa", "tagging"]


def test_only_a_kinds_own_tests_import_its_modules():
    wrong = {}
    for path in sorted(TESTS.rglob("*.py")):
        if str(path.relative_to(TESTS)) in EXEMPT:
            continue
        others = [k for k in kinds_imported(path.read_text(encoding="utf-8")) if k != own_kind(path)]
        if others:
            wrong[str(path.relative_to(TESTS))] = others
    assert not wrong, ("test files that import a kind's modules outside tests/tasks/<kind>/ (move the test there, "
                       f"or read the kind through the registry, `electra_tf.tasks.get`): {wrong}")


def test_the_exempt_files_exist_and_import_kinds():
    for name in EXEMPT:
        assert kinds_imported((TESTS / name).read_text(encoding="utf-8")), name


def test_every_registered_kind_has_its_test_folder_and_no_other_folder_is_there():
    for folder in FOLDERS:
        assert sorted((KINDS_DIR / folder).glob("test_*.py")), f"no test file in tests/tasks/{folder}/"
    assert sorted(p.name for p in KINDS_DIR.iterdir() if p.is_dir() and p.name != "__pycache__") == sorted(FOLDERS)
