"""A task kind is one plug-in: the registry (`tasks.KINDS`) is what fine-tuning, export, predict and
convert consult, and no other module of the package dispatches on task kinds (read as text, nothing imported)."""

import os
import re

import pytest

from electra_tf import tasks as kinds
from electra_tf.tasks import FinetuneConfig

PACKAGE = os.path.join(os.path.dirname(__file__), "..", "..", "electra_tf")
# The modules of the kinds themselves: the only places that may know one kind from another.
KIND_MODULES = {"classification.py", "tagging.py", "qa.py", "multiple_choice.py"}
MODEL_CLASSES = "|".join(kind.model_class.__name__ for kind in kinds.KINDS.values())
NAMES = "|".join(kinds.KINDS)
DISPATCH = [
    re.compile(rf"isinstance\([^)]*\b({MODEL_CLASSES})\b"),  # which model is it?
    re.compile(rf"""\bkind\w*\s*(==|!=)\s*["']({NAMES})["']"""),  # which kind is it?
    re.compile(rf"""["']({NAMES})["']\s*(==|!=)\s*\w*kind"""),
    re.compile(rf"""\bkind\w*\s+(not\s+)?in\s+[(\[{{]\s*["']({NAMES})["']"""),
    re.compile(r"""\bkind\w*\.name\s*(==|!=)"""),
]


def package_files():
    for directory, dirs, files in os.walk(PACKAGE):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in files:
            if name.endswith(".py"):
                yield os.path.join(directory, name)


def test_no_module_outside_the_kinds_dispatches_on_a_task_kind():
    found = []
    for path in package_files():
        relative = os.path.relpath(path, PACKAGE)
        if os.path.dirname(relative) == "finetuning" and os.path.basename(relative) in KIND_MODULES:
            continue
        for number, line in enumerate(open(path, encoding="utf-8"), start=1):
            if any(pattern.search(line) for pattern in DISPATCH):
                found.append(f"electra_tf/{relative}:{number}: {line.strip()}")
    assert not found, "dispatch on task kinds outside their modules:\n" + "\n".join(found)


def test_the_patterns_catch_the_dispatch_they_are_for():
    """The check above is only as good as its patterns: each catches what it is written for."""
    caught = ['if isinstance(model, ElectraTokenClassifier):', 'if kind == "span_qa":',
              'elif self.kind != "classification":', 'if "tagging" == kind:', 'if kind in ("tagging", "span_qa"):',
              'if kind.name == other:']
    for line in caught:
        assert any(p.search(line) for p in DISPATCH), line
    for line in ['kind = kinds.get(settings["kind"])', 'if isinstance(model, kind.model_class):']:
        assert not any(p.search(line) for p in DISPATCH), line


def test_each_kind_declares_what_the_commands_ask_of_it():
    files = [kind.model_file for kind in kinds.KINDS.values()]
    assert len(set(files)) == len(files) and all(f.endswith(".keras") for f in files)
    for name, kind in kinds.KINDS.items():
        assert kind.name == name and kind.predict_formats and kind.model_class is not None
        for member in ("serving_module", "read_examples", "format_prediction", "score", "hf_head",
                       "finetune_config", "evaluate", "build_model", "train_dataset"):
            assert callable(getattr(kind, member)), (name, member)


@pytest.mark.parametrize("task,task_kind,expected", [
    ("conll2003", "auto", "tagging"), ("CoNLL2003_pos", "auto", "tagging"), ("squad", "auto", "span_qa"),
    ("squad_v2", "auto", "span_qa"), ("swag", "auto", "multiple_choice"), ("sst-2", "auto", "classification"),
    ("my_task", "auto", "classification"), ("my_ner", "tagging", "tagging"),
    ("wikihow", "multiple_choice", "multiple_choice"),
])
def test_the_kind_of_a_run_by_task_name_or_task_kind(task, task_kind, expected):
    assert kinds.for_config(FinetuneConfig(task=task, task_kind=task_kind)) is kinds.KINDS[expected]


def test_an_unknown_task_kind_names_the_known_ones():
    with pytest.raises(ValueError, match=r"Unknown task kind 'ranking'. Known kinds: \['classification', "):
        kinds.get("ranking")


# The files a task kind may live in: its modules, its model and serving files (by their names), and the
# registry's one line. Everything else in the package reaches a kind through the registry.
PLUG_IN_FILES = {
    "multiple_choice": ("tasks/multiple_choice/kind.py", "tasks/multiple_choice/data.py",
                        "tasks/multiple_choice/model.py", "tasks/multiple_choice/serving.py"),
}


def code_names(path):
    """Identifiers, attribute names, imported names and string constants of `path`, docstrings and comments
    left out: what the module's code refers to."""
    import ast

    tree = ast.parse(open(path, encoding="utf-8").read())
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            yield node.lineno, node.id
        elif isinstance(node, ast.Attribute):
            yield node.lineno, node.attr
        elif isinstance(node, ast.alias):
            yield node.lineno, node.name
        elif isinstance(node, ast.ImportFrom):
            yield node.lineno, node.module or ""
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            yield node.lineno, node.value


@pytest.mark.parametrize("kind", list(PLUG_IN_FILES))
def test_a_kind_is_named_by_its_own_files_and_one_registry_line(kind):
    """Adding the kind touched its modules, its model and serving files and `kinds.KINDS`: the package's code
    (docstrings aside) names it nowhere else, and the registry in one line and its import."""
    camel = "".join(part.title() for part in kind.split("_"))
    pattern = re.compile(rf"{kind}|{camel}")
    found = {}
    for path in package_files():
        relative = os.path.relpath(path, PACKAGE).replace(os.sep, "/")
        if relative in PLUG_IN_FILES[kind]:
            continue
        lines = sorted({line for line, name in code_names(path) if pattern.search(name)})
        if lines:
            found[relative] = lines
    registry = found.pop("tasks/__init__.py", [])
    assert len(registry) == 2, f"tasks/__init__.py names {kind} on lines {registry}: its import and KINDS line"
    assert not found, f"{kind} is named outside its plug-in files: {found}"
