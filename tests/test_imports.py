"""The package's import graph: no circle, and every import points down the layer order.

Every module of the package is read as text (`ast`, nothing is imported),
function-level imports included: `electra_tf/`, and the repository folders that
install inside it, `configs/` (`electra_tf.configs`) and `pipelines/`
(`electra_tf.pipelines`).
"""

import ast
import functools
import os

import pytest

pytestmark = pytest.mark.large  # slow tier: together these tests take minutes

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FOLDERS = {"electra_tf": "electra_tf", "configs": "electra_tf.configs", "pipelines": "electra_tf.pipelines"}

# The layer order, lowest first: a module may import its own layer and the layers listed in
# MAY_IMPORT for it. A module belongs to the layer of its longest matching prefix (a prefix matches
# the module itself and its submodules); every module must belong to one.
LAYERS = {
    "core": ("electra_tf.cli", "electra_tf.config", "electra_tf.config_fields", "electra_tf.configs",
             "electra_tf.objectives", "electra_tf.data",  # presets and config, the tokenizer and the record schema
             "electra_tf.atomic",  # the one writer of files and folders
             "electra_tf.run_files",  # the run-directory contract: every file name a command reads or writes
             "electra_tf.backends"),  # the Keras backends, and which paths are TensorFlow's alone
    "pipelines": ("electra_tf.pipelines",),  # data tools: text -> vocabulary -> TFRecords
    "layers": ("electra_tf.layers",),
    "models": ("electra_tf.models",),
    "converting": ("electra_tf.converting",),
    # The `--init` registry and the named checkpoints: what every command reads a model through.
    "sources": ("electra_tf.sources",),
    "training": ("electra_tf.training",),  # pre-training: optimizers, callbacks, strategies, the run lock
    "exporting": ("electra_tf.exporting",),  # SavedModels, presets, LiteRT plumbing, the shared serving parts: no kind
    "finetuning": ("electra_tf.finetuning",),  # the generic loop: trials, recipe, batching, layer-wise LR
    "predicting": ("electra_tf.predicting",),  # a served model's signatures on batches; reading and writing
    # The task kinds, one folder each, and their registry (`electra_tf.tasks`): each uses the generic layers
    # below, and none of those names a kind.
    "tasks": ("electra_tf.tasks",),
    # Every class a saved model names, registered with Keras: `import electra_tf.saved_classes` is the one import
    # `keras.saving.load_model` needs (the package's root imports nothing of it).
    "saved classes": ("electra_tf.saved_classes",),
    "export formats": ("electra_tf.export_formats",),  # what `export --format` writes, by name (over the task kinds)
    "convert targets": ("electra_tf.convert_targets",),  # what `convert --to` writes, by name (over the task kinds)
    "programs": ("electra_tf.pretrain", "electra_tf.finetune", "electra_tf.export", "electra_tf.predict",
                 "electra_tf.convert", "electra_tf.demo_data", "electra_tf.data_scripts"),
}
ROOT_LAYER = "core"  # the package's own `__init__` (exactly `electra_tf`)
ORDER = ["core", "layers", "models", "converting", "sources", "training", "exporting", "finetuning", "predicting", "tasks"]
MAY_IMPORT = {
    **{layer: tuple(ORDER[:i]) for i, layer in enumerate(ORDER)},  # each package over the ones before it
    "pipelines": ("core",),  # the tokenizer and the record schema only
    "programs": ("core", "pipelines", *ORDER[1:], "export formats", "convert targets"),
    "saved classes": ("core", *ORDER[1:]),
    "export formats": ("core", *ORDER[1:]),
    "convert targets": ("core", *ORDER[1:]),
}
# Top-level names the package must never import (tools, tests, and the folders' old generic names).
FORBIDDEN_TOP_LEVEL = ("pipelines", "configs", "benchmarks", "tests", "helpers", "conftest")


def package_modules():
    """dict module name -> source path of every module of the package."""
    modules = {}
    for folder, package in FOLDERS.items():
        for directory, dirs, files in os.walk(os.path.join(REPO, folder)):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            relative = os.path.relpath(directory, os.path.join(REPO, folder))
            parts = [package] + ([] if relative == "." else relative.split(os.sep))
            for name in sorted(files):
                if name.endswith(".py"):
                    stem = name[:-3]
                    modules[".".join(parts if stem == "__init__" else parts + [stem])] = os.path.join(directory, name)
    return modules


def imports_of(name, path, known):
    """(line, imported name as written, resolved package module or None) of every import in `path`."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    is_package = os.path.basename(path) == "__init__.py"
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.append((node.lineno, alias.name, _resolve(alias.name, known)))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = name.split(".") if is_package else name.split(".")[:-1]
                package = package[: len(package) - (node.level - 1)]
                base = ".".join(package + ([base] if base else []))
            for alias in node.names:
                full = f"{base}.{alias.name}"
                target = full if full in known else _resolve(base, known)
                found.append((node.lineno, base, target))
    return found


def _resolve(dotted, known):
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        if ".".join(parts[:end]) in known:
            return ".".join(parts[:end])
    return None


def layer_of(module):
    if module == "electra_tf":
        return ROOT_LAYER
    best = None
    for layer, prefixes in LAYERS.items():
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and (best is None or len(prefix) > len(best[1])):
                best = (layer, prefix)
    return best and best[0]


def import_graph():
    """(edges: module -> {module: line}, problems: list of str) of the package."""
    modules = package_modules()
    edges, problems = {}, []
    for name, path in modules.items():
        edges[name] = {}
        for line, written, target in imports_of(name, path, modules):
            where = f"{os.path.relpath(path, REPO)}:{line}"
            if written.split(".")[0] in FORBIDDEN_TOP_LEVEL:
                problems.append(f"{where}: {name} imports `{written}` (not part of the package)")
            if target is not None and target != name:
                edges[name].setdefault(target, where)
    return edges, problems


def find_cycles(edges):
    """Every strongly connected set of more than one module (Tarjan), each as a sorted list."""
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in edges.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return cycles


def upward_imports(edges):
    problems = []
    for module, targets in sorted(edges.items()):
        layer = layer_of(module)
        for target, where in sorted(targets.items()):
            target_layer = layer_of(target)
            if target_layer != layer and target_layer not in MAY_IMPORT[layer]:
                problems.append(f"{where}: {module} ({layer}) imports {target} ({target_layer})")
    return problems


def test_every_module_has_a_layer():
    unplaced = [m for m in package_modules() if layer_of(m) is None]
    assert not unplaced, f"Modules in no layer of LAYERS (add them there): {unplaced}"
    assert set(MAY_IMPORT) == set(LAYERS)


def test_the_walk_sees_the_whole_package():
    modules = package_modules()
    assert {"electra_tf", "electra_tf.configs.small", "electra_tf.pipelines.packing",
            "electra_tf.export", "electra_tf.run_files"} <= set(modules)
    edges, _ = import_graph()
    # A function-level import counts (the export program imports its library inside `main`).
    assert "electra_tf.export_formats" in edges["electra_tf.export"]


def test_no_import_of_tools_tests_or_generic_top_level_names():
    _, problems = import_graph()
    assert not problems, "\n".join(problems)


def test_no_import_circle():
    edges, _ = import_graph()
    cycles = find_cycles(edges)
    assert not cycles, "Import circles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_no_upward_import():
    edges, _ = import_graph()
    problems = upward_imports(edges)
    assert not problems, "Upward imports:\n" + "\n".join(problems)


@pytest.mark.parametrize("module, target, expected", [
    ("electra_tf.models.encoder", "electra_tf.training.pretraining", "upward"),
    ("electra_tf.training.pretraining", "electra_tf.pipelines.demo_corpus", "upward"),
    ("electra_tf.pipelines.packing", "electra_tf.models.encoder", "upward"),
    ("electra_tf.layers.masking", "electra_tf.layers.embeddings", "cycle"),
])
def test_a_violation_is_found(module, target, expected):
    """The checks themselves: an added upward import or circle is reported."""
    edges, _ = import_graph()
    edges = {k: dict(v) for k, v in edges.items()}
    edges[module][target] = "injected"
    if expected == "cycle":
        edges[target][module] = "injected"
        assert any(module in c and target in c for c in find_cycles(edges))
    else:
        assert any(f"{module} (" in p and f"imports {target} (" in p for p in upward_imports(edges))


def test_only_configs_and_pipelines_join_the_package():
    """Installed or from the source tree: `electra_tf.configs` and `electra_tf.pipelines`, nothing else."""
    import importlib
    import importlib.util

    import electra_tf

    assert importlib.util.find_spec("electra_tf.configs") is not None
    assert importlib.util.find_spec("electra_tf.pipelines.packing") is not None
    for name in ("electra_tf.tests", "electra_tf.benchmarks", "electra_tf.electra_tf"):
        assert importlib.util.find_spec(name) is None, name
    assert electra_tf.SOURCE_FOLDERS == ("configs", "pipelines")
    for name in electra_tf.SOURCE_FOLDERS:  # in the source tree, a package whose `__path__` is the top-level folder
        package = importlib.import_module(f"electra_tf.{name}")
        assert [os.path.realpath(p) for p in package.__path__] == [os.path.realpath(os.path.join(REPO, name))]


def test_the_source_folders_run_nothing_on_import():
    """`configs/__init__.py` and `pipelines/__init__.py` hold a docstring only: the source tree's packages, which point
    at those folders without running them, import what an installed copy imports."""
    for name in ("configs", "pipelines"):
        with open(os.path.join(REPO, name, "__init__.py"), encoding="utf-8") as f:
            body = ast.parse(f.read()).body
        assert len(body) == 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant), name


# A user's script: the package root installs no import hook and imports neither TensorFlow nor Keras; Keras' look-up
# stays Keras' own, and knows electra_tf's classes once `electra_tf.saved_classes` (the one documented import) ran.
NO_HOOK = """
import sys
finders = list(sys.meta_path)
import electra_tf, electra_tf.configs, electra_tf.pipelines
assert sys.meta_path == finders, sys.meta_path
assert not {"tensorflow", "keras"} & set(sys.modules)
import keras
from keras.src.saving import object_registration
assert object_registration.get_registered_object.__module__ == object_registration.__name__
assert keras.saving.get_registered_object("electra_tf>ElectraClassifier") is None
import electra_tf.saved_classes
from electra_tf.tasks.classification.model import ElectraClassifier
assert keras.saving.get_registered_object("electra_tf>ElectraClassifier") is ElectraClassifier
print("ok")
"""


def test_the_package_root_installs_no_import_hook():
    from helpers import run_python

    result = run_python(["-c", NO_HOOK], check=False)
    assert result.returncode == 0 and result.stdout.split()[-1:] == ["ok"], result.stderr[-3000:]


# --- Between folders ------------------------------------------------------------------------------
#
# The same graph, one node a folder of the package (or a module at its top): every arrow between two
# folders points down this order, lowest first, and no library module imports a command.
FOLDER_ORDER = [
    "electra_tf",  # the package's own `__init__`
    # the core modules: presets and config, the one writer, the tokenizer and the records, the run files, the
    # Keras backends, the CLI
    "configs", "objectives", "config_fields", "config", "atomic", "data", "run_files", "backends", "cli",
    "pipelines",  # data tools: text -> vocabulary -> TFRecords (over the core only)
    "layers", "models", "converting", "sources", "training", "exporting", "finetuning", "predicting",
    "tasks",  # the task kinds, one folder each, over the generic folders
    "saved_classes",  # every class a saved model names
    "export_formats",  # what `export --format` writes
    "convert_targets",  # what `convert --to` writes
    # the commands (`demo_data` is `pretrain --data=demo`'s)
    "demo_data", "pretrain", "finetune", "export", "predict", "convert", "data_scripts",
]
# The command modules: a node of their own each, above every library folder.
COMMANDS = {"electra_tf.pretrain": "pretrain", "electra_tf.finetune": "finetune", "electra_tf.predict": "predict",
            "electra_tf.demo_data": "demo_data", "electra_tf.data_scripts": "data_scripts", "electra_tf.convert": "convert",
            "electra_tf.export": "export"}


@functools.lru_cache(maxsize=1)
def _edges():
    """The import graph's edges, read once for the folder checks (each test copies what it changes)."""
    return import_graph()[0]


def folder_of(module):
    """The node of `module` in the folder graph: its command, else its folder (or top-level module) of the package."""
    if module in COMMANDS:
        return COMMANDS[module]
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def folder_graph(edges):
    """{(folder, folder): [module arrows]} of every import between two different nodes of `folder_of`."""
    arrows = {}
    for module, targets in edges.items():
        for target, where in targets.items():
            pair = folder_of(module), folder_of(target)
            if pair[0] != pair[1]:
                arrows.setdefault(pair, []).append(f"{where}: {module} imports {target}")
    return arrows


def upward_folder_imports(edges):
    rank = {folder: i for i, folder in enumerate(FOLDER_ORDER)}
    return [f"{source} -> {target} (up the folder order): " + "; ".join(sorted(arrows)[:3])
            for (source, target), arrows in sorted(folder_graph(edges).items()) if rank[target] > rank[source]]


def library_imports_of_commands(edges):
    commands = set(COMMANDS.values())
    return [arrow for (source, target), arrows in sorted(folder_graph(edges).items())
            if target in commands and source not in commands for arrow in arrows]


def test_every_folder_has_a_place_in_the_folder_order():
    nodes = {folder_of(module) for module in package_modules()}
    assert nodes == set(FOLDER_ORDER), (f"not in FOLDER_ORDER: {sorted(nodes - set(FOLDER_ORDER))}; "
                                        f"in FOLDER_ORDER but gone: {sorted(set(FOLDER_ORDER) - nodes)}")
    assert len(FOLDER_ORDER) == len(set(FOLDER_ORDER))


def test_no_import_points_up_between_folders():
    problems = upward_folder_imports(_edges())
    assert not problems, "Imports up the folder order:\n" + "\n".join(problems)


def test_no_library_module_imports_a_command():
    problems = library_imports_of_commands(_edges())
    assert not problems, "Library modules importing a command:\n" + "\n".join(problems)


@pytest.mark.parametrize("module, target, check", [
    ("electra_tf.sources.runs", "electra_tf.training.pretraining", upward_folder_imports),
    ("electra_tf.atomic", "electra_tf.run_files", upward_folder_imports),
    ("electra_tf.training.pretraining", "electra_tf.demo_data", library_imports_of_commands),
    ("electra_tf.predicting.predictor", "electra_tf.predict", library_imports_of_commands),
])
def test_a_folder_violation_is_found(module, target, check):
    """The checks themselves: an injected import up the folder order, or of a command, is reported."""
    assert not check(_edges())
    edges = {k: dict(v) for k, v in _edges().items()}
    edges[module][target] = "injected"
    assert any(module in problem and target in problem for problem in check(edges))


def test_the_task_registry_is_the_registry_only():
    """`electra_tf/tasks/__init__.py` declares the kinds and answers questions about them, at most 160 lines; the
    usage text of the commands is rendered in `tasks/usage.py`, and `convert` branches on no format name (its
    targets are `convert_targets.TARGETS`, its sources `sources.SOURCES`)."""
    import re

    with open(os.path.join(REPO, "electra_tf", "tasks", "__init__.py"), encoding="utf-8") as f:
        registry = f.read()
    assert registry.count("\n") <= 160
    defined = {node.name for node in ast.parse(registry).body if isinstance(node, ast.FunctionDef)}
    assert not defined & {"task_kind_help", "kinds_usage"}, defined
    with open(os.path.join(REPO, "electra_tf", "convert.py"), encoding="utf-8") as f:
        assert not re.findall(r"target (==|!=)|source (==|!=)", f.read())
