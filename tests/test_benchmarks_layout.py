"""benchmarks/ and experiments/ run as modules from the repository root: no sys.path edits, no scripts among results."""

import os
import pathlib
import subprocess
import sys

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
        if 'if __name__ == "__main__":' not in path.read_text(encoding="utf-8"):
            continue  # a library module of the scripts (common, the experiment's guard, report, ...)
        module = ".".join(path.relative_to(REPO).with_suffix("").parts)
        assert f"python -m {module} " in path.read_text(encoding="utf-8"), module


def test_every_script_with_a_main_runs_behind_the_usage_boundary():
    """`app.run(main)` would print the script's docstring before a usage error's one line."""
    plain = [str(p.relative_to(REPO)) for p in SCRIPTS if "app.run(main)" in p.read_text(encoding="utf-8")]
    assert plain == []


def test_a_scripts_usage_error_is_one_line_and_exit_2(tmp_path):
    # finetune_squad refuses an unknown head before it reads data; TensorFlow's log level is the user's default.
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    result = subprocess.run([sys.executable, "-m", "benchmarks.finetune_squad", "--runs_dir", str(tmp_path / "runs"),
                             "--qa_heads", "official,bogus"], cwd=REPO, capture_output=True, text=True, timeout=300,
                            env=env)
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert lines == ["error: --qa_heads: unknown head(s) ['bogus']; choose from official, simple. (see --help)"], \
        result.stderr
    assert result.stdout == ""
    assert not (tmp_path / "runs").exists()
