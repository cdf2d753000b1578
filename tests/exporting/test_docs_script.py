"""The plain-Keras fine-tuning script in docs/finetuning.md runs as written (paths and sizes shrunk).

A fast check beside `tests/test_docs.py` (large), which runs it in the guide's journey."""

import os
import re

DOC = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "finetuning.md")
PATHS_LINE = 'model_dir, data_dir, epochs = "runs/demo", "../shared/data/tasks/movie_polarity", 3'


def docs_script():
    text = open(DOC, encoding="utf-8").read()
    match = re.search(r"^## Fine-tune with plain Keras\n.*?^```python\n(.*?)^```", text, re.S | re.M)
    assert match, "the plain-Keras script is missing from docs/finetuning.md"
    return match.group(1)


def test_docs_finetuning_script_runs(artifacts, tmp_path):
    script = docs_script()
    assert len([line for line in script.splitlines() if line.strip()]) <= 16
    assert PATHS_LINE in script
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    rows = ["sentence\tlabel"] + [f'{w} "film" number {i}\t{int(w == "good")}' for i, w in enumerate(["good", "bad"] * 32)]
    (data_dir / "train.tsv").write_text("\n".join(rows) + "\n")
    script = script.replace(PATHS_LINE, f"model_dir, data_dir, epochs = {artifacts.run_dir!r}, {str(data_dir)!r}, 1")
    script = script.replace("seq_length=128", "seq_length=16")
    namespace = {}
    exec(compile(script, "docs/finetuning.md", "exec"), namespace)
    history = namespace["classifier"].history.history
    assert len(history["loss"]) == 1 and 0.0 <= history["accuracy"][0] <= 1.0
    assert namespace["classifier"].optimizer.multipliers()  # layer-wise multipliers were in use
