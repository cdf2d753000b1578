"""Every registered task kind is described (`KindDescription`), and every per-kind list shows every kind.

The facts of each description are checked against the kind's code (its registry name, whether it
fine-tunes, its model file, the task names `--task_kind auto` gives it; the served signatures in
`test_kind_signatures.py`, slow tier). `finetune --help` and `predict --help` list every kind with
its summary (run as the commands, from the registry); README.md names every kind; the guides hold
a section per kind (`guide`, `serving_guide`) and the per-kind tables of docs/finetuning.md and
docs/serving.md are the ones rendered from the descriptions here. After a description changes,
`python tests/test_kind_descriptions.py` rewrites those tables. The kinds come from the registry
(`electra_tf.tasks`) only.
"""

import os
import pathlib
import re
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[1]
if __name__ == "__main__":  # run as a script (`python tests/test_kind_descriptions.py`): this checkout's sources
    sys.path.insert(0, str(REPO))

from electra_tf import tasks  # noqa: E402

TABLES = ("docs/finetuning.md", "docs/serving.md")
BEGIN = "<!-- kinds: rendered from each kind's description (tests/test_kind_descriptions.py) -->"
END = "<!-- kinds: end -->"


def _code(names):
    return ", ".join(f"`{n}`" for n in names)


def _signature(signature):
    text = f"{_code(signature.inputs)} -> {_code(signature.outputs)}"
    return text + (f" ({signature.when})" if signature.when else "")


def render(page):
    """The per-kind table of `page` (docs/finetuning.md or docs/serving.md), from the descriptions."""
    rows = []
    if page == "docs/finetuning.md":
        rows += ["| `--task_kind` | what it fine-tunes | `--task_kind auto` gives it | files it writes | section |",
                 "|---|---|---|---|---|"]
        for d in tasks.descriptions().values():
            files = _code(f.split(" ")[0] for f in d.files) or "-"
            auto = _code(d.auto_tasks) or "-"
            rows.append(f"| `{d.name}` | {d.summary} | {auto} | {files} | {_section(d.guide, page)} |")
    else:
        rows += ["| kind | export | `serving_default` | section |", "|---|---|---|---|"]
        for d in tasks.descriptions().values():
            rows.append(f"| `{d.name}` | `{d.export}` | {_signature(d.signature('serving_default'))} "
                        f"| {_section(d.serving_guide, page)} |")
    return "\n".join(rows)


def _section(guide, page):
    """A link from `page` to the section `guide` (`docs/x.md#anchor`), its heading as the text."""
    target, name = guide.split("#")
    title = sections(target)[name][1] if name in sections(target) else name
    here = os.path.dirname(page)
    return f"[{title}]({'' if target == page else os.path.relpath(target, here or '.')}#{name})"


def rendered_text(page):
    """`page`'s text with its per-kind table as `render` makes it (the text between BEGIN and END)."""
    text = (REPO / page).read_text(encoding="utf-8")
    assert text.count(BEGIN) == 1 and text.count(END) == 1, f"{page}: one {BEGIN} ... {END} block"
    head, rest = text.split(BEGIN)
    _, tail = rest.split(END)
    return f"{head}{BEGIN}\n{render(page)}\n{END}{tail}"


def anchor(heading):
    """GitHub's anchor of a Markdown heading's text."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def sections(page):
    """anchor -> (level, heading, the section's text up to the next heading of its level or above) of `page`."""
    lines = (REPO / page).read_text(encoding="utf-8").split("\n")
    in_code, headings = False, []
    for i, line in enumerate(lines):
        in_code ^= line.startswith("```")
        match = re.match(r"(#+) (.*)", line)
        if match and not in_code:
            headings.append((i, len(match.group(1)), match.group(2).strip()))
    out = {}
    for n, (i, level, title) in enumerate(headings):
        end = next((j for j, other, _ in headings[n + 1:] if other <= level), len(lines))
        out[anchor(title)] = (level, title, "\n".join(lines[i:end]))
    return out


def help_text(module):
    """`python -m module --help`'s output (absl exits 1 after it), started now."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "TF_CPP_MIN_LOG_LEVEL": "2"}
    return subprocess.Popen([sys.executable, "-m", module, "--help"], cwd=REPO, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def flat(text):
    """`text` with its line breaks undone (absl wraps a flag's help at spaces and after hyphens)."""
    return re.sub(r"- ", "-", " ".join(text.split()))


# --- the descriptions against the code -----------------------------------------------------------


def test_every_registered_kind_carries_its_description():
    described = tasks.descriptions()
    assert list(described) == list(tasks.KINDS)
    for name, kind in tasks.KINDS.items():
        d = described[name]
        assert kind.description is d, name
        assert (d.name, d.finetunes) == (kind.name, kind.finetunes)
        assert d.summary and "\n" not in d.summary and d.predict_input and d.record, name
        assert d.files[:1] == ((kind.model_file,) if kind.finetunes else ()), name
        assert bool(d.data) == kind.finetunes, name
        assert d.signature("serving_default").inputs, name
        assert d.export in ("export --format serving", f"export --format {name}"), name


def test_the_task_names_described_are_the_ones_auto_gives_the_kind():
    for name, d in tasks.descriptions().items():
        for task in d.auto_tasks:
            for example in ([task[:-1], task[:-1] + "_v2"] if task.endswith("*") else [task]):
                assert tasks.for_config(tasks.FinetuneConfig(task=example)).name == name, (name, example)
    unclaimed = tasks.for_config(tasks.FinetuneConfig(task="my_own_task")).name
    assert unclaimed == tasks.DEFAULT == next(iter(tasks.descriptions()))


# --- where the kinds are listed ------------------------------------------------------------------


def test_finetune_and_predict_help_list_every_kind_with_its_summary():
    finetune, predict = help_text("electra_tf.finetune"), help_text("electra_tf.predict")  # both at once
    outputs = {}
    for name, process in (("finetune", finetune), ("predict", predict)):
        out, err = process.communicate(timeout=600)
        assert "Try --helpfull" in out, err[-3000:]
        outputs[name] = out
    task_kind = flat(outputs["finetune"].split("--task_kind:")[1].split("\n  --")[0])
    for name, d in tasks.descriptions().items():
        assert (f"    {name}: {d.summary}\n" in outputs["finetune"]) == d.finetunes, name  # the usage
        assert (f"{name}: {flat(d.summary)}" in task_kind) == d.finetunes, name  # the flag's help
        usage = outputs["predict"].split(f"\n    {name}: {d.summary}\n")
        assert len(usage) == 2, name
        assert flat(d.record) in flat(re.split(r"\n    (?=\S)", usage[1])[0]), name  # up to the next kind
    assert "guide: docs/finetuning.md#embeddings-semantic-search" in outputs["finetune"]


def test_readme_names_every_kind_and_its_task_kind_row_lists_the_fine_tuning_kinds():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    for name in tasks.descriptions():
        assert re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text), f"README.md names no kind {name}"
    row = next(line for line in text.splitlines() if line.startswith("| `--task`, `--task_kind`"))
    listed = re.search(r"--task_kind ([\w\\|]+)`", row).group(1).split("\\|")
    assert listed == list(tasks.FINETUNED), row


def test_the_guides_hold_a_section_per_kind():
    for name, d in tasks.descriptions().items():
        missing = [guide for guide in (d.guide, d.serving_guide)
                   if guide.split("#")[1] not in sections(guide.split("#")[0])]
        assert not missing, f"{name}: no section {missing}"
        if d.finetunes:
            assert d.guide.startswith("docs/finetuning.md#"), name
        else:
            assert name in (REPO / "docs/finetuning.md").read_text(encoding="utf-8"), name
        assert d.serving_guide.startswith("docs/serving.md#"), name


def test_each_kinds_serving_section_names_its_signatures_inputs_and_outputs():
    served = sections("docs/serving.md")
    for name, d in tasks.descriptions().items():
        assert d.serving_guide.split("#")[1] in set(served), f"{name}: no section {d.serving_guide}"
        _, _, text = served[d.serving_guide.split("#")[1]]
        named = set(re.findall(r"`([\w@]+)`", text))
        for signature in d.signatures:
            missing = {signature.name, *signature.inputs, *signature.outputs, *signature.optional} - named
            assert not missing, f"docs/serving.md#{d.serving_guide.split('#')[1]} does not name {sorted(missing)}"


def test_the_per_kind_tables_of_the_guides_are_rendered_from_the_descriptions():
    for page in TABLES:
        assert (REPO / page).read_text(encoding="utf-8") == rendered_text(page), (
            f"{page}'s per-kind table is not the descriptions': run `python tests/test_kind_descriptions.py`")


if __name__ == "__main__":  # rewrites the per-kind tables of the guides from the descriptions
    for page in TABLES:
        (REPO / page).write_text(rendered_text(page), encoding="utf-8")
        print(f"wrote {page}")
