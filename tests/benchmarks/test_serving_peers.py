"""`benchmarks.serving_peers` at smoke size: a tiny run fine-tuned, exported and served by every side."""

import json
import statistics

import pytest

from helpers import make_run_dir, run_python

POSITIVE = ["a gripping and funny film", "the cast is fine and the plot is moving", "one of the best of the year",
            "warm , funny and true"]
NEGATIVE = ["a dull and tired film", "the plot is a mess and the cast is lost", "the worst of the year",
            "flat , long and empty"]


def write_vocab(path):
    """A WordPiece vocabulary of the task's words (and [UNK] for the rest)."""
    words = sorted({w for text in POSITIVE + NEGATIVE for w in text.split()} | set("0123456789"))
    path.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]) + "\n")
    return str(path)


def write_task(folder):
    folder.mkdir()
    rows = [(f"{text} {i}", label) for i in range(4) for label, texts in enumerate((NEGATIVE, POSITIVE))
            for text in texts]
    for split, part in (("train", rows), ("dev", rows[:24]), ("test", rows[:8])):
        (folder / f"{split}.tsv").write_text("sentence\tlabel\n" + "".join(f"{t}\t{y}\n" for t, y in part))
    (folder / "labels.txt").write_text("negative\npositive\n")
    return folder


def table(text, heading):
    """The rows (label -> cells) of the table under `## heading`."""
    section = text.split(f"## {heading}")[1].split("\n## ")[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| ---")]
    return {row.split("|")[1].strip(): [c.strip() for c in row.split("|")[2:-1]] for row in rows[1:]}


@pytest.mark.large
@pytest.mark.release  # about 8 minutes on 2 cores: fine-tunes a tiny model, writes the SavedModel, two LiteRT models, HF and ONNX; 6 processes
def test_serving_peers_measures_every_side_and_reuses_its_models(tmp_path):
    run_dir = make_run_dir(tmp_path / "run", write_vocab(tmp_path / "vocab.txt"), num_layers=1, hidden_dim=16,
                           embedding_dim=16, intermediate_dim=32)
    task = write_task(tmp_path / "movie_polarity")
    work, output = tmp_path / "work", tmp_path / "report.md"
    args = ["-m", "benchmarks.serving_peers", "--init", run_dir, "--task_dir", str(task), "--train_limit", "32",
            "--seq_length", "32", "--workdir", str(work), "--quick", "--batch_sizes", "1,4"]
    run_python([*args, "--output", str(output)], timeout=1500)
    text = output.read_text(encoding="utf-8")
    assert text.startswith("# ") and "python -m benchmarks.serving_peers " in text.splitlines()[2]
    assert "python -m electra_tf.export --format serving" in text and "--quantize dynamic_int8" in text
    assert "python -m electra_tf.convert --from keras" in text and "--to hf" in text

    # The per-CPU-second table against the raw round, recomputed here: texts / CPU seconds of the calls.
    (record,) = [json.loads(line) for line in (work / "rounds.jsonl").read_text().splitlines()]
    per_cpu = table(text, "Examples per CPU-second")
    assert len(per_cpu) == 6
    for label, cells in per_cpu.items():
        side = next(s for s, r in record["records"].items() if label.startswith(LABEL_STARTS[s]))
        settings = record["records"][side]["settings"]
        assert list(settings) == ["short/1", "short/4", "long/1", "long/4"]
        expected = [s["examples"] / sum(s["cpus"]) for s in settings.values()]
        assert [float(c.replace(",", "")) for c in cells] == pytest.approx(expected, rel=0.01, abs=0.06), label
    latency = table(text, "Batch-1 latency")
    walls = record["records"]["ort_fp32"]["settings"]["short/1"]["walls"]
    assert float(latency["ONNX Runtime fp32"][0]) == pytest.approx(1e3 * statistics.median(walls), abs=0.006)
    assert "TensorFlow's Python package was not imported by: electra_tf LiteRT float, electra_tf LiteRT int8 " \
           "(`--quantize dynamic_int8`), HF transformers + torch, ONNX Runtime fp32" in text
    # A label per text on every side (an untrained model's near-even scores may tip either way across runtimes).
    labels = {s: r["settings"]["short/4"]["labels"] for s, r in record["records"].items()}
    assert all(len(v) == 16 and set(v) <= {0, 1} for v in labels.values()), labels
    assert "Same label as the SavedModel on the 16 short texts timed at short batch 4: " in text

    # Again, one side: every model is reused, none rebuilt.
    built = {p: p.stat().st_mtime_ns for p in work.rglob("*") if p.is_file() and p.name != "rounds.jsonl"}
    run_python([*args, "--sides", "ort_int8"], timeout=600)
    assert {p: p.stat().st_mtime_ns for p in built} == built
    assert len((work / "rounds.jsonl").read_text().splitlines()) == 2

    # Other build settings in the same folder: one line, exit 2, nothing changed.
    refused = run_python([*args[:6], "--train_limit", "16", "--seq_length", "32", "--workdir", str(work)],
                         check=False)
    assert refused.returncode == 2, refused.stderr
    assert [line for line in refused.stderr.splitlines() if line.startswith("error:")] == [
        line for line in refused.stderr.splitlines() if line.strip()]
    assert "--workdir" in refused.stderr and {p: p.stat().st_mtime_ns for p in built} == built


LABEL_STARTS = {"savedmodel": "electra_tf SavedModel", "litert_float": "electra_tf LiteRT float",
                "litert_int8": "electra_tf LiteRT int8", "torch": "HF transformers", "ort_fp32": "ONNX Runtime fp32",
                "ort_int8": "ONNX Runtime int8"}
