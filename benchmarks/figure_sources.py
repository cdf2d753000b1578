"""Every figure of the README and the guides, with the committed file it comes from.

    python -m benchmarks.figure_sources            # every figure and its source
    python -m benchmarks.figure_sources --unsourced  # only those without one (exit 1 if any)

A figure is a number written as a measurement or a setting: a decimal (`0.674`),
a percentage (`73 %`), a ratio (`1.48x`), a power of ten (`1e-4`, `6.0e13`), a
count with thousands separators (`3,000`), a value with `±`, or a number with a
unit (`104 ms`, `3.5 GB`, `49 examples/s`). Versions (`TensorFlow 2.21`, `SQuAD
1.1`), numbers inside `code` or code blocks (flags, commands, paths), in link
targets and in HTML comments are not figures.

The convention: each figure's paragraph, list item or table row links its source,
a file committed in this repository (a report under `benchmarks/results/` or
`experiments/*/results/`, or for a setting the config file that holds it); a
table row may instead rely on the paragraph just above its table (its caption).
A figure without such a link, or a link to a file that does not exist, is
unsourced; `tests/test_figure_sources.py` fails on any.
"""

import argparse
import dataclasses
import pathlib
import re
import sys

REPO = pathlib.Path(__file__).resolve().parents[1]


def pages(repo=REPO):
    """The Markdown files checked: README.md, docs/*.md, benchmarks/README.md, experiments/*/README.md."""
    found = [repo / "README.md", *sorted((repo / "docs").glob("*.md")), repo / "benchmarks" / "README.md"]
    return [p for p in found + sorted((repo / "experiments").glob("*/README.md")) if p.exists()]


_UNIT = (
    r"ms|s|min|h|GB|MB|KB|GiB|MiB|k|M|B|GFLOP/s|steps/s|examples/s|q/s|windows/s|"
    r"CPU-hours?|CPU-minutes?|CPU-seconds?|tokens|FLOPs|points?"
)
_FIGURE = re.compile(
    r"(?<![\w.#/-])(?:"
    r"\d+(?:\.\d+)?(?:e[-+]?\d+)"  # 1e-4, 6.0e13
    r"|\d{1,3}(?:,\d{3})+(?:\.\d+)?"  # 3,000
    r"|\d+(?:\.\d+)?(?:\s?-\s?\d+(?:\.\d+)?)?\s?(?:%|x\b|×)"  # 73 %, 52-59 %, 1.48x
    r"|\d+(?:\.\d+)?\s?±\s?\d+(?:\.\d+)?"  # 75.5 ± 0.5
    r"|\d+(?:\.\d+)?(?:\s?-\s?\d+(?:\.\d+)?)?\s(?:" + _UNIT + r")(?![\w-])"  # 104 ms, 6-9 points
    r"|\d+\.\d+"  # 0.674
    r")(?!\.?\d)"  # not a part of 127.0.0.1
)
# A number right after one of these names is a version or a reference, not a figure.
_VERSIONED = re.compile(
    r"(?:TensorFlow|Python|python|Keras|SQuAD|transformers|torch|tf-models-official|electra_tf|"
    r"TF|v|Table|section|issue|tensorflow-text|keras-hub|CoNLL-|GLUE|numpy|Beam|ELECTRA-?)\s?(?:\d+(?:\.\d+)*\s?/\s?)*$"
)
_LINK = re.compile(r"\]\(([^)\s]+)\)")


@dataclasses.dataclass
class Figure:
    page: str
    line: int
    text: str
    sources: list
    missing: list  # linked files that do not exist

    @property
    def sourced(self):
        return bool(self.sources) and not self.missing


def _strip(text):
    """Code blocks, HTML comments and inline code blanked (same length, lines kept)."""
    blank = lambda m: re.sub(r"[^\n]", " ", m.group(0))  # noqa: E731
    text = re.sub(r"^```.*?^```[ \t]*$", blank, text, flags=re.M | re.S)
    text = re.sub(r"<!--.*?-->", blank, text, flags=re.S)
    return re.sub(r"`[^`\n]*`", blank, text)


def _units(lines):
    """(first line, last line, kind) of each paragraph, list item and table row (0-based, inclusive)."""
    units, start = [], None
    for i, line in enumerate(lines + [""]):
        stripped = line.strip()
        starts_item = bool(re.match(r"^(\s*[-*]|\s*\d+\.)\s", line)) or stripped.startswith("|")
        if start is not None and (not stripped or starts_item or lines[start].strip().startswith("|")):
            units.append((start, i - 1, "row" if lines[start].strip().startswith("|") else "text"))
            start = None
        if stripped and start is None:
            start = i
    return units


def _links(page, raw):
    """Repository files linked in `raw`: (existing, missing) as paths relative to the repository."""
    found, missing = [], []
    for target in _LINK.findall(raw):
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            continue  # web links and anchors are not committed sources
        path = (page.parent / target.split("#")[0]).resolve()
        (found if path.exists() else missing).append(str(path.relative_to(REPO)) if path.is_relative_to(REPO) else target)
    return found, missing


def figures(page):
    """Every `Figure` of a Markdown page."""
    raw_lines = page.read_text(encoding="utf-8").splitlines()
    lines = _strip("\n".join(raw_lines)).splitlines()
    units = _units(lines)
    result = []
    for index, (first, last, kind) in enumerate(units):
        raw = "\n".join(raw_lines[first:last + 1])
        sources, missing = _links(page, raw)
        if kind == "row" and not sources:  # a table row: the caption paragraph above the table
            j = index - 1
            while j >= 0 and units[j][2] == "row":
                j -= 1
            if j >= 0:
                sources, missing = _links(page, "\n".join(raw_lines[units[j][0]:units[j][1] + 1]))
        for number, line in ((m, n) for n in range(first, last + 1) for m in _FIGURE.finditer(lines[n])):
            if _VERSIONED.search(lines[line][: number.start()]):
                continue
            name = str(page.relative_to(REPO)) if page.is_relative_to(REPO) else page.name
            result.append(Figure(name, line + 1, number.group(0), sources, missing))
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--unsourced", action="store_true", help="list only the figures without a source")
    args = parser.parse_args(argv)
    unsourced = 0
    for page in pages():
        for figure in figures(page):
            unsourced += not figure.sourced
            if args.unsourced and figure.sourced:
                continue
            where = ", ".join(figure.sources) or "UNSOURCED"
            if figure.missing:
                where += f" (missing: {', '.join(figure.missing)})"
            print(f"{figure.page}:{figure.line}\t{figure.text}\t{where}")
    print(f"{unsourced} unsourced figure(s)", file=sys.stderr)
    return 1 if unsourced else 0


if __name__ == "__main__":
    sys.exit(main())
