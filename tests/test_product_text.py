"""What the repository says stays true for a stranger reading it on another machine.

No committed file names a folder of the machine it was written on; product text (the package,
the tests, the README and the guides) names no issue or internal work number; the README's
results stay one short table whose rows link their reports; every committed report names, at
its top, a command of a benchmark or experiment that exists; `docs/architecture.md`'s layout and
README's name every package folder and only folders that exist; and README's command table lists
every command module and every console script of `setup.py`.
"""

import pathlib
import re
import subprocess

REPO = pathlib.Path(__file__).resolve().parents[1]
THIS = pathlib.Path(__file__).resolve()

# An absolute path under a machine's work, root, home or temporary folder.
MACHINE_PATH = re.compile(r"(?<![\w.$~/-])/(?:work|root|home/[\w.-]+|tmp)/[\w.@*$-]+(?:/[\w.@*$-]+)*")
# A flag or a command that creates the path after it: such an example makes its own /tmp folder.
CREATES = re.compile(r"(?:--(?:output_dir|output|model_dir|workdir|export_dir|trace|json)[ =]|mkdir (?:-p )?)"
                     r"['\"]?(/tmp/[\w.-]+)")
# Examples in docstrings of functions that write the path they name (`write_official_checkpoint(path)`).
WRITTEN_BY_THE_EXAMPLE = {("electra_tf/converting/official.py", "/tmp/ckpt")}
WORK_NUMBERS = re.compile(r"\b(?:issues?\s*#?\d+|sessions?\s+\d+|sweeps?\b|PR\s*#\d+)", re.IGNORECASE)


def tracked_files():
    """The repository's files (git's list; every file but `.git` when this is no checkout)."""
    try:
        names = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout
        return [REPO / name for name in names.splitlines() if (REPO / name).is_file()]
    except (OSError, subprocess.CalledProcessError):
        return [p for p in REPO.rglob("*") if p.is_file() and ".git" not in p.parts]


def text_of(path):
    try:
        return path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return None  # a figure or another binary file


def test_no_committed_file_names_a_folder_of_the_machine_it_was_written_on():
    texts = {p: text_of(p) for p in tracked_files() if p != THIS}
    texts = {p: t for p, t in texts.items() if t is not None}
    created = {m.group(1) for t in texts.values() for m in CREATES.finditer(t)}
    found = []
    for path, text in texts.items():
        for n, line in enumerate(text.splitlines(), 1):
            for m in MACHINE_PATH.finditer(line):
                root = "/".join(m.group(0).split("/")[:3])
                example = root in created or (str(path.relative_to(REPO)), root) in WRITTEN_BY_THE_EXAMPLE
                if not (root.startswith("/tmp/") and example):
                    found.append(f"{path.relative_to(REPO)}:{n}: {m.group(0)}")
    assert not found, ("absolute paths of a machine (write them repository-relative, or as $BENCH_DATA, "
                       "$SHARED_DATA, $RUNS, ~):\n" + "\n".join(found))


def test_the_machine_path_check_tells_examples_from_records():
    line = "python -m electra_tf.export --output_dir /tmp/serving; cp x /root/out/a.json; ls ~/x $RUNS/y"
    assert [m.group(0) for m in MACHINE_PATH.finditer(line)] == ["/tmp/serving", "/root/out/a.json"]
    assert {m.group(1) for m in CREATES.finditer(line)} == {"/tmp/serving"}
    assert not MACHINE_PATH.search("benchmarks/results/x.md ../shared/data/tmp/x /usr/bin/time /proc/stat")


def test_product_text_names_no_issue_or_work_number():
    roots = [REPO / "electra_tf", REPO / "tests", REPO / "README.md", REPO / "docs"]
    paths = [p for root in roots for p in ([root] if root.is_file() else root.rglob("*"))
             if p.is_file() and p.suffix in (".py", ".md", ".txt", ".json") and p != THIS]
    found = [f"{p.relative_to(REPO)}:{n}: {m.group(0)}" for p in paths
             for n, line in enumerate((text_of(p) or "").splitlines(), 1) for m in WORK_NUMBERS.finditer(line)]
    assert not found, "say what the code does and why, not which work item it came from:\n" + "\n".join(found)
    assert WORK_NUMBERS.search("as issue 24 names") and WORK_NUMBERS.search("the third sweep")
    assert not WORK_NUMBERS.search("the reissued 24 files; 2 sessions of the loop")


def section(text, heading):
    """The lines of a Markdown section, its heading included, up to the next heading of its level."""
    lines = text.splitlines()
    start = lines.index(heading)
    level = heading.split(" ")[0] + " "
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith(level)), len(lines))
    while lines[end - 1].strip() == "":
        end -= 1
    return lines[start:end]


def test_readme_results_are_one_table_of_at_most_8_rows_each_linking_its_report():
    """The Results section: one caption paragraph and one table (what, electra_tf, the peer, the ratio, the report)."""
    lines = section((REPO / "README.md").read_text(encoding="utf-8"), "## Results")[1:]
    table = [line for line in lines if line.startswith("|")]
    prose = [line for line in lines if line.strip() and not line.startswith("|")]
    assert len(prose) <= 2, f"README's Results hold prose beside their table: {prose}"
    assert lines.index(table[0]) + len(table) == len(lines), "README's Results: one table, nothing after it"
    header, rule, *rows = table
    assert [c.strip() for c in header.strip("|").split("|")] == ["what", "electra_tf", "peer", "electra_tf / peer",
                                                                   "report"], header
    assert set(rule) <= set("|-: ") and 1 <= len(rows) <= 8, f"{len(rows)} rows (at most 8)"
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert len(cells) == 5 and re.fullmatch(r"\[[\w.-]+\]\((?:benchmarks|experiments)/(?:[\w.-]+/)*results/[\w.-]+\.md\)",
                                                cells[4]), row


def report_paths():
    return sorted([*(REPO / "benchmarks" / "results").glob("*.md"), *(REPO / "experiments").glob("*/results/**/*.md")])


def test_every_report_names_at_its_top_the_command_of_an_existing_benchmark():
    command = re.compile(r"python (?:-m ((?:benchmarks|experiments)\.[\w.]+)|((?:benchmarks|experiments)/[\w/]+)\.py)"
                         r"|bash (benchmarks/[\w/]+\.sh)")
    problems = []
    for path in report_paths():
        top = "\n".join(path.read_text(encoding="utf-8").splitlines()[:15])
        found = command.search(top)
        if not found:
            problems.append(f"{path.relative_to(REPO)}: no command in its first 15 lines")
            continue
        module, script, shell = found.groups()
        target = REPO / (shell or f"{(module or script).replace('.', '/')}.py" if not shell else shell)
        if not target.exists():
            problems.append(f"{path.relative_to(REPO)}: its command names {target.relative_to(REPO)}, which is gone")
    assert report_paths() and not problems, "\n".join(problems)


def layout_folders(text):
    """The folders `docs/architecture.md`'s layout block names: `configs`, `electra_tf/layers`, ..."""
    block = text[text.index("## Layout"):]
    block = block[block.index("```text\n") + 8:]
    block = block[:block.index("```")]
    folders, top = set(), None
    for line in block.splitlines():
        m = re.match(r"^( *)([\w.]+)/(?:,|\s|$)", line)
        if not m:
            continue
        if not m.group(1):
            top = m.group(2)
            folders.add(top)
        elif len(m.group(1)) == 2 and top:
            folders.add(f"{top}/{m.group(2)}")
    return folders


def source_folder_pointer(folder):
    """Whether `folder` is `electra_tf/configs/` or `electra_tf/pipelines/`: in the source tree a package that points at
    the top-level folder of that name (which the layouts name), not a folder of its own."""
    return folder.parent == REPO / "electra_tf" and folder.name in ("configs", "pipelines")


def test_architecture_layout_names_every_package_folder_and_only_real_ones():
    named = layout_folders((REPO / "docs" / "architecture.md").read_text(encoding="utf-8"))
    missing = sorted(f for f in named if not (REPO / f).is_dir())
    packages = sorted(str(p.parent.relative_to(REPO)) for root in ("electra_tf", "pipelines")
                      for p in (REPO / root).glob("*/__init__.py") if not source_folder_pointer(p.parent))
    unnamed = [p for p in packages if p not in named]
    assert not missing and not unnamed, (
        "docs/architecture.md's Layout block is out of date: "
        + (f"it names folders that do not exist: {missing}; " if missing else "")
        + (f"it does not name the package folders {unnamed} (add a line '  <folder>/  what it holds' under "
           "'electra_tf/' or 'pipelines/')" if unnamed else ""))
    assert {"electra_tf/layers", "electra_tf/finetuning", "configs", "pipelines"} <= named  # the parser reads it


def readme_layout(text):
    """(folders, modules) README's layout block names under `electra_tf/`: `{"layers", ...}`, `{"pretrain.py", ...}`.

    A line under `electra_tf/` starts, two spaces in, with its names (`tasks/`, or `pretrain.py, finetune.py`),
    then two or more spaces and what they hold.
    """
    block = text[text.index("## Layout"):]
    block = block[block.index("```text\n") + 8:]
    block = block[:block.index("```")]
    folders, modules, inside = set(), set(), False
    for line in block.splitlines():
        if not line.startswith(" "):
            inside = line.startswith("electra_tf/")
            continue
        if inside and line.startswith("  ") and not line.startswith("   "):
            for name in re.split(r",\s*", re.split(r"\s{2,}", line.strip())[0]):
                (folders if name.endswith("/") else modules).add(name.rstrip("/"))
    return folders, modules


def test_readme_layout_names_every_package_folder_and_only_real_ones():
    folders, modules = readme_layout((REPO / "README.md").read_text(encoding="utf-8"))
    packages = {p.parent.name for p in (REPO / "electra_tf").glob("*/__init__.py") if not source_folder_pointer(p.parent)}
    assert folders == packages, (f"README.md's Layout block misses the folders {sorted(packages - folders)} of "
                                 f"electra_tf/, and names {sorted(folders - packages)} that are no folder of it")
    missing = sorted(m for m in modules if not (REPO / "electra_tf" / m).is_file())
    assert not missing, f"README.md's Layout block names modules of electra_tf/ that do not exist: {missing}"
    assert {"layers", "models"} <= folders and "pretrain.py" in modules  # the parser reads the block


def command_modules():
    """`python -m` name of every module of the package that runs as a program (`if __name__ == "__main__"`)."""
    found = set()
    for root, package in (("electra_tf", "electra_tf"), ("pipelines", "electra_tf.pipelines")):
        for path in (REPO / root).rglob("*.py"):
            if 'if __name__ == "__main__"' in path.read_text(encoding="utf-8"):
                parts = path.relative_to(REPO / root).with_suffix("").parts
                found.add(".".join((package, *(parts[:-1] if parts[-1] == "__main__" else parts))))
    return found


def test_readme_command_table_lists_every_command_and_console_script():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Commands"):]
    section = section[:section.index("\n## ", 1)]
    rows = [line.split("|")[1:3] for line in section.splitlines() if line.startswith("| ") and "python -m" in line]
    scripts = {name.strip().strip("`") for name, _ in rows if name.strip()}
    modules = {re.search(r"python -m ([\w.]+)", module).group(1) for _, module in rows}
    setup = set(re.findall(r'"([\w-]+)=[\w.]+:\w+"', (REPO / "setup.py").read_text(encoding="utf-8")))
    assert scripts == setup, f"console scripts of setup.py missing from README's table: {sorted(setup - scripts)}; " \
                             f"in the table but not in setup.py: {sorted(scripts - setup)}"
    expected = command_modules()
    assert modules == expected, f"command modules missing from README's table: {sorted(expected - modules)}; " \
                                f"in the table but no command: {sorted(modules - expected)}"
    assert {"electra_tf.pretrain", "electra_tf.pipelines.build_vocab"} <= expected  # the walk sees them
