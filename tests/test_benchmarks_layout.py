"""benchmarks/ and experiments/ run as modules from the repository root: no sys.path edits, no scripts among results;
one report per benchmark, its latest run, at a commit of this repository; the README's figures are its reports'."""

import os
import pathlib
import re
import subprocess
import sys

import pytest

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


# --- One report per benchmark, current by construction ---------------------------------------------

RESULTS = REPO / "benchmarks" / "results"
# A number as a table cell quotes it: 0.4345, 1.37x, 2,150, 58.1 (of "58.1 %"); not a part of fp32 or int8.
NUMBER = re.compile(r"(?<![\w.,])\d[\d,]*(?:\.\d+)?x?(?![\w.]*\d)")


def benchmark_names():
    """The benchmarks: every script of benchmarks/ that runs as a program (`python -m`, or a `.sh` run by bash)."""
    scripts = [p for p in (REPO / "benchmarks").glob("*.py") if 'if __name__ == "__main__":' in p.read_text("utf-8")]
    return {p.stem for p in scripts} | {p.stem for p in (REPO / "benchmarks").glob("*.sh")}


def table_rows(text, heading):
    """The cells of each row of the first table after `heading` (header and rule left out)."""
    lines = text[text.index(heading):].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows


def linked_report(cell):
    (name,) = re.findall(r"\((?:benchmarks/)?results/([\w.-]+\.md)\)", cell)
    return name


def numbers(text):
    return set(NUMBER.findall(text))


def index():
    """{report file name: its row of benchmarks/README.md's results index, as one string}."""
    rows = table_rows((REPO / "benchmarks" / "README.md").read_text("utf-8"), "## Results index")
    return {linked_report(row[-1]): " | ".join(row) for row in rows}


def test_every_figure_of_the_readme_results_is_the_index_and_the_reports():
    rows = table_rows((REPO / "README.md").read_text("utf-8"), "## Results")
    by_report, problems = index(), []
    assert rows and by_report
    for what, ours, peer, ratio, report in rows:
        name = linked_report(report)
        figures = numbers(" ".join((ours, peer, ratio)))
        assert figures, what  # every row quotes figures
        report_numbers = numbers((RESULTS / name).read_text("utf-8"))
        problems += [f"{what}: {f} is not in {name}" for f in sorted(figures - report_numbers)]
        if name not in by_report:
            problems.append(f"{what}: {name} has no row in benchmarks/README.md's results index")
            continue
        problems += [f"{what}: {f} is not in the index's row of {name}" for f in sorted(figures - numbers(by_report[name]))]
    assert not problems, "\n".join(problems)


def test_the_index_has_one_row_per_report_and_its_figures_are_the_reports():
    by_report = index()
    reports = sorted(p.name for p in RESULTS.glob("*.md"))
    assert sorted(by_report) == reports, "benchmarks/README.md's results index and benchmarks/results/ differ"
    for name, row in by_report.items():
        figure = row.split(" | ")[2]
        missing = numbers(figure) - numbers((RESULTS / name).read_text("utf-8"))
        assert not missing, f"the index's figures {sorted(missing)} are not in {name}"
        assert row.split(" | ")[0].strip("`").rsplit(".", 1)[0] == name[:-3], row  # the row of its own benchmark


def test_every_report_is_named_after_a_benchmark_and_so_is_its_raw_data():
    benchmarks = benchmark_names()
    assert {"train_step", "side_by_side", "serving_peers"} <= benchmarks  # the walk sees them
    strays = [p.name for p in RESULTS.iterdir() if p.name.split(".")[0] not in benchmarks]
    assert not strays, f"files of benchmarks/results/ named after no benchmark (a variant, or a script gone): {strays}"
    assert all(p.suffix == ".md" or (RESULTS / f"{p.name.split('.')[0]}.md").exists() for p in RESULTS.iterdir())


def _shallow():
    result = subprocess.run(["git", "rev-parse", "--is-shallow-repository"], cwd=REPO, capture_output=True, text=True)
    return result.returncode != 0 or result.stdout.strip() != "false"


def test_every_report_names_a_commit_of_this_repository():
    named, problems = {}, []
    for path in sorted(RESULTS.glob("*.md")):
        text = path.read_text("utf-8")
        commits = re.findall(r"\bcommits? ([0-9a-f]{7,40})\b", text, re.IGNORECASE)
        if not commits:
            problems.append(f"{path.name}: names no commit")
        if "uncommitted" in text.lower():
            problems.append(f"{path.name}: measured on uncommitted changes")
        named[path.name] = commits
    assert not problems, "\n".join(problems)
    if _shallow():
        pytest.skip("a shallow clone (or no git): the named commits cannot be looked up")
    for name, commits in named.items():
        for commit in commits:
            found = subprocess.run(["git", "cat-file", "-e", f"{commit}^{{commit}}"], cwd=REPO, capture_output=True)
            if found.returncode:
                problems.append(f"{name}: commit {commit} is not in this repository")
    assert not problems, "\n".join(problems)


def python_lines(*folders):
    return sum(len(p.read_text("utf-8").splitlines()) for folder in folders for p in (REPO / folder).rglob("*.py"))


def test_the_tools_are_at_most_a_fifth_of_the_product():
    tools, product = python_lines("benchmarks", "experiments"), python_lines("electra_tf", "pipelines", "configs")
    assert product > 10_000  # the walk sees the package
    assert tools <= 0.2 * product, f"benchmarks/ + experiments/: {tools} lines, {tools / product:.1%} of the product's {product}"
