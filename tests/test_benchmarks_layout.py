"""benchmarks/ and experiments/ run as modules from the repository root: no sys.path edits, no scripts among results."""

import pathlib

REPO = pathlib.Path(__file__).resolve().parents[1]
SCRIPTS = sorted(p for folder in ("benchmarks", "experiments") for p in (REPO / folder).rglob("*.py"))


def test_no_script_edits_sys_path():
    assert SCRIPTS
    edits = [str(p.relative_to(REPO)) for p in SCRIPTS if "sys.path." in p.read_text(encoding="utf-8")]
    assert edits == []


def test_results_folders_hold_no_scripts():
    folders = [REPO / "benchmarks" / "results", *(REPO / "experiments").glob("*/results")]
    scripts = [str(p.relative_to(REPO)) for folder in folders for p in folder.rglob("*") if p.suffix in (".py", ".sh")]
    assert scripts == []


def test_every_script_documents_its_module_command():
    for path in SCRIPTS:
        if path.name in ("__init__.py", "common.py"):
            continue
        module = ".".join(path.relative_to(REPO).with_suffix("").parts)
        assert f"python -m {module} " in path.read_text(encoding="utf-8"), module
