"""Finds the code examples of docstrings, and runs them (see `test_docstring_examples`).

Docstrings are read from the source with `ast`, not by importing: collecting
costs no TensorFlow import, and modules that define absl flags at import time
are never imported together. An example is written one of two ways:

- a fenced block, ```` ```python ```` ... ```` ``` ````: run as a script;
  a shown value is a comment (`x.shape  # (2, 8)`) or an `assert`;
- doctest lines, `>>> ` / `... `, followed by the expected output, which is
  checked (`ELLIPSIS` and `NORMALIZE_WHITESPACE` on).

Fences labelled `bash`, `sh`, `shell` or `console` are shell commands and are
not run. Every example runs in a fresh namespace (it imports what it uses, as
a reader's own script would) in an empty temporary working directory.
"""

import ast
import dataclasses
import doctest
import pathlib
import re
import textwrap

REPO = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = ("electra_tf", "configs", "pipelines")
SHELL = ("bash", "sh", "shell", "console")

_FENCE = re.compile(r"^([ \t]*)```[ \t]*([\w+-]*)[ \t]*\n(.*?)^[ \t]*```[ \t]*$", re.M | re.S)
_HEADER = re.compile(r"^[ \t]*Examples?:[ \t]*$", re.M)


@dataclasses.dataclass
class DocExample:
    """The code of one docstring (or one Markdown block).

    `blocks` holds `(kind, code, lineno)` in order: kind "python" (a script)
    or "doctest" (a `doctest.DocTest` source, checked), `lineno` the 1-based
    line of the source file where the block's code starts.
    """

    name: str
    path: pathlib.Path
    blocks: list
    shell: int = 0
    example_sections: int = 0

    @property
    def runnable(self):
        return bool(self.blocks)


def _lineno(text, offset, start):
    return start + text.count("\n", 0, offset)


def parse_text(name, path, text, start_line=1):
    """A `DocExample` of `text`: its python fences and its doctest lines (outside fences)."""
    blocks, shell, spans = [], 0, []
    for match in _FENCE.finditer(text):
        spans.append(match.span())
        label = match.group(2).lower()
        line = _lineno(text, match.start(3), start_line)
        if label in ("python", "py", "python3"):
            blocks.append(("python", textwrap.dedent(match.group(3)), line))
        elif label in SHELL:
            shell += 1
        elif label not in ("text", "output", "json"):
            blocks.append(("unlabelled", match.group(3), line))
    rest = list(text)
    for begin, end in spans:  # doctest lines outside the fences
        rest[begin:end] = [c if c == "\n" else " " for c in text[begin:end]]
    rest = "".join(rest)
    if re.search(r"^\s*>>>", rest, re.M):
        blocks.append(("doctest", rest, start_line))
    blocks.sort(key=lambda b: b[2])
    return DocExample(name, path, blocks, shell, len(_HEADER.findall(text)))


def _module_name(path):
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    if parts[0] in ("configs", "pipelines"):  # installed inside the package (setup.py package_dir)
        parts.insert(0, "electra_tf")
    return ".".join(parts)


def docstrings(path):
    """`(qualified name, docstring, line of the docstring)` of a module, its classes and functions.

    An assignment `Name.__doc__ = "..."` at module level counts as the docstring of `Name`.
    """
    tree = ast.parse(path.read_text(encoding="utf-8"))
    module = _module_name(path)
    found = []

    def add(name, node):
        body = getattr(node, "body", None)
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            if isinstance(body[0].value.value, str):
                found.append((name, body[0].value.value, body[0].value.lineno))

    def walk(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                add(f"{prefix}.{child.name}", child)
                walk(child, f"{prefix}.{child.name}")
            elif (
                isinstance(child, ast.Assign)
                and isinstance(child.value, ast.Constant)
                and isinstance(child.value.value, str)
                and isinstance(child.targets[0], ast.Attribute)
                and child.targets[0].attr == "__doc__"
                and isinstance(child.targets[0].value, ast.Name)
            ):
                found.append((f"{module}.{child.targets[0].value.id}", child.value.value, child.value.lineno))

    add(module, tree)
    walk(tree, module)
    return found


def package_examples(packages=PACKAGES):
    """Every docstring with an example or an `Example:` section, as `DocExample`s, by name."""
    examples = []
    for package in packages:
        for path in sorted((REPO / package).rglob("*.py")):
            for name, text, line in docstrings(path):
                example = parse_text(name, path, text, line)
                if example.blocks or example.shell or example.example_sections:
                    examples.append(example)
    return examples


def run(example, namespace=None):
    """Runs the blocks of `example` in one fresh namespace; raises AssertionError on a failed doctest."""
    namespace = {"__name__": "__main__"} if namespace is None else namespace
    for kind, code, line in example.blocks:
        if kind == "unlabelled":
            raise AssertionError(
                f"{example.name} ({example.path}:{line}): label the fence ```python (run) or ```bash (not run)."
            )
        if kind == "python":
            exec(compile("\n" * (line - 1) + code, str(example.path), "exec"), namespace)
            continue
        test = doctest.DocTestParser().get_doctest(code, namespace, example.name, str(example.path), line - 1)
        report = []
        runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
        result = runner.run(test, out=report.append, clear_globs=False)
        if result.failed:
            raise AssertionError("".join(report))
    return namespace
