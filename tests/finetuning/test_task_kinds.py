"""A task kind is one plug-in: the registry (`tasks.KINDS`) is what fine-tuning, export, predict and
convert consult, and no other module of the package dispatches on task kinds (read as text, nothing imported)."""

import os
import re

import pytest

from electra_tf import tasks as kinds
from electra_tf.tasks import FinetuneConfig
from electra_tf.tasks.base import NoSettings

PACKAGE = os.path.join(os.path.dirname(__file__), "..", "..", "electra_tf")
MODEL_CLASSES = "|".join(kind.model_class.__name__ for kind in kinds.FINETUNED.values())
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
        if relative.startswith("tasks/") and relative.count("/") == 2:  # a kind's own folder
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
    files = [kind.model_file for kind in kinds.FINETUNED.values()]
    assert len(set(files)) == len(files) and all(f.endswith(".keras") for f in files)
    for name, kind in kinds.FINETUNED.items():
        assert kind.name == name and kind.predict_formats and kind.model_class is not None
        # its settings are its folder's `config.py` ones, which `FinetuneConfig` collects without importing the kind
        assert kind.Config is (kinds._settings_of(folder_of(kind), "Config") or NoSettings), name
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


TASKS = os.path.join(PACKAGE, "tasks")


def folder_of(kind):
    """The folder of `kind` under `electra_tf/tasks/` (its module's package)."""
    return kind.__module__.split(".")[2]


def code_names(path):
    """(line, what) of the identifiers, attribute names, imported modules and names and string constants of `path`,
    docstrings and comments left out: what the module's code refers to."""
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


def defined_classes(paths):
    import ast

    return {node.name for path in paths for node in ast.walk(ast.parse(open(path, encoding="utf-8").read()))
            if isinstance(node, ast.ClassDef)}


def kind_names(name):
    """What names the kind `name`: its registry name and folder, its model file, the input formats only it reads, the
    classes only its folder defines, and (a prefix) its modules."""
    kind = kinds.KINDS[name]
    folder = folder_of(kind)
    own = [p for p in package_files() if os.path.dirname(p) == os.path.join(TASKS, folder)]
    others = [p for p in package_files() if p not in own]
    from electra_tf.predicting.inputs import FORMATS  # every reader's

    formats = set(kind.predict_formats) - set(FORMATS) - {f for other in kinds.KINDS.values() if other is not kind
                                                          for f in other.predict_formats}
    exact = {name, folder, *([kind.model_file] if kind.model_file else []), *formats,
             *(defined_classes(own) - defined_classes(others))}
    return exact, f"electra_tf.tasks.{folder}"


# The same word for another concept: "rtd" is also pre-training's replaced-token-detection loss term (its objective
# weights, FLOPs and metrics), which is not the served kind "rtd" of a pre-trained model's scores.
OTHER_MEANINGS = {"rtd": ("objectives.py", "training/", "models/pretrainer.py")}


def names_outside(name, where):
    """{relative path: sorted lines} of the package modules in `where` (a predicate of the relative path) that name
    the kind `name`."""
    exact, prefix = kind_names(name)
    found = {}
    for path in package_files():
        relative = os.path.relpath(path, PACKAGE).replace(os.sep, "/")
        if not where(relative) or relative.startswith(OTHER_MEANINGS.get(name, ())):
            continue
        lines = sorted({line for line, word in code_names(path) if word in exact or word == prefix
                        or word.startswith(prefix + ".")})
        if lines:
            found[relative] = lines
    return found


@pytest.mark.parametrize("name", list(kinds.KINDS))
def test_a_kind_is_named_by_its_own_folder_and_one_registry_line(name):
    """Adding a kind is its folder `electra_tf/tasks/<kind>/` and one line of `tasks.DECLARED`: the
    package's code (docstrings aside) names it, its classes or its modules nowhere else."""
    folder = folder_of(kinds.KINDS[name])
    found = names_outside(name, lambda relative: not relative.startswith(f"tasks/{folder}/"))
    registry = found.pop("tasks/__init__.py", [])
    assert len(registry) == 1, f"tasks/__init__.py names {name} on lines {registry}: its line of DECLARED"
    assert not found, f"{name} is named outside its folder: {found}"


def test_no_module_outside_the_tasks_folder_names_a_task_kind():
    """The generic layers (fine-tuning loop, export formats, predict's reading and writing, the commands) reach every
    kind through the registry, by the name a run or an export wrote."""
    found = {name: names_outside(name, lambda relative: not relative.startswith("tasks/")) for name in kinds.KINDS}
    assert not any(found.values()), f"task kinds named outside electra_tf/tasks/: {found}"


def test_the_footprint_check_finds_a_kind_named_elsewhere(tmp_path, monkeypatch):
    """The check above is only as good as what it reads: a generic module that imports a kind's model, or compares
    with its name, is found."""
    path = tmp_path / "generic.py"
    path.write_text('"""span_qa in a docstring is prose."""\nfrom electra_tf.tasks.tagging.model import X\n'
                    'if settings["kind"] == "span_qa":\n    pass\n')
    words = {word for _, word in code_names(str(path))}
    assert "electra_tf.tasks.tagging.model" in words and "span_qa" in words
    assert not any("docstring" in word for word in words)
