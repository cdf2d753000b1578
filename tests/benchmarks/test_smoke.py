"""Every benchmark still produces its report, run as a user runs it at a tiny size; committed reports
regenerate from their committed raw data; the comparisons' link to the package (recipe fields, `--init`).

The quick ones run in CI's slow step (`large`), the ones that fine-tune MiniLM-sized models on both
sides in the release tier. `benchmarks/pipeline_throughput.py` has its own tests.
"""

import json
import os
import pathlib
import shutil

import pytest

from helpers import REPO, run_python, shared_data

BENCH_DATA = pathlib.Path(os.path.expanduser(os.environ.get("BENCH_DATA", "~/.cache/electra_tf/benchmarks")))


def bench_data(*parts):
    """A path under `$BENCH_DATA`, or skip the test when the benchmarks are not fetched."""
    path = BENCH_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} not fetched (bash ../shared/data/build/fetch_finetune_benchmarks.sh)")
    return path


def report(module, tmp_path, *args, timeout=1800):
    """Runs `python -m benchmarks.<module> ... --output REPORT`; returns the report's text, checked at its top."""
    output = tmp_path / f"{module}.md"
    run_python(["-m", f"benchmarks.{module}", *args, "--output", str(output)], timeout=timeout)
    text = output.read_text(encoding="utf-8")
    lines = text.splitlines()
    assert lines[0].startswith("# ") and f"python -m benchmarks.{module} " in "\n".join(lines[:4]), text[:500]
    return text


def table_rows(text):
    return [line for line in text.splitlines() if line.startswith("| ") and not line.startswith("| ---")]


# --- Fast: the link to the package, and a committed report regenerated from its raw data ---

def test_the_hf_recipe_reads_the_fine_tuning_config_by_its_field_names():
    from benchmarks import common
    from electra_tf.tasks import FinetuneConfig

    config = FinetuneConfig(epochs=4, learning_rate=2e-5, layerwise_lr_decay=0.7, clip_norm=0.5, seed=3, keep="last",
                            seq_length=77)
    recipe = common.hf_recipe(config)
    assert recipe["seq_length"] == 77 == common.seq_length(config)
    assert {k: recipe[k] for k in ("epochs", "learning_rate", "layerwise_lr_decay", "clip_norm", "seed", "keep")} == \
        dict(epochs=4, learning_rate=2e-5, layerwise_lr_decay=0.7, clip_norm=0.5, seed=3, keep="last")
    assert common.hf_model_dir("bert:/some/bert") == "/some/bert"


def test_reports_name_the_cpus_vector_instructions(tmp_path):
    from benchmarks import common

    def named(flags, key="flags"):
        (tmp_path / "cpuinfo").write_text(f"processor\t: 0\n{key}\t\t: fpu sse2 {flags}\n\nprocessor\t: 1\n")
        return common.vector_instructions(str(tmp_path / "cpuinfo"))

    assert named("avx avx2 fma") == "AVX2, no AVX-512"  # where TensorFlow leaves oneDNN off unless asked
    assert named("avx2 avx512f avx512bw avx512_vnni avx512_bf16") == "AVX-512 with VNNI, BF16"
    assert named("avx2 avx512f") == "AVX-512"
    assert named("fp asimd sve", key="Features") == "NEON with SVE"
    assert common.vector_instructions(str(tmp_path / "missing")) == "vector instructions unknown"


def test_reports_record_portable_paths():
    from benchmarks import common

    text = f"--data_dir {common.bench_data('conll2003')} --vocab {common.shared_data('vocab', 'v.txt')} " \
           f"--output {common.REPO}/benchmarks/results/x.md --init bert:{common.minilm_dir()}"
    assert common.portable(text) == ("--data_dir $BENCH_DATA/conll2003 --vocab $SHARED_DATA/vocab/v.txt "
                                     "--output benchmarks/results/x.md --init bert:$MINILM")


def test_the_side_by_side_report_regenerates_from_its_committed_runs(tmp_path):
    """`side_by_side.md`'s table, from `side_by_side.jsonl` by the command the report names."""
    committed = (REPO / "benchmarks" / "results" / "side_by_side.md").read_text(encoding="utf-8")
    assert "python -m benchmarks.train_step --side_by_side benchmarks/results/side_by_side.jsonl" in committed
    output = tmp_path / "table.md"
    run_python(["-m", "benchmarks.train_step", "--side_by_side", "benchmarks/results/side_by_side.jsonl",
                "--output", str(output)])
    rows = table_rows(output.read_text(encoding="utf-8"))
    assert len(rows) == 5 and all(row in committed for row in rows), rows



# --- Large: the quick benchmarks at tiny size ---

@pytest.mark.large
def test_train_step_times_the_step_and_summarises_its_runs(tmp_path):
    runs = tmp_path / "runs.jsonl"
    for precision, backend in (("float32", "tensorflow"), ("mixed_bfloat16", "tensorflow"), ("float32", "jax")):
        run_python(["-m", "benchmarks.train_step", "--config", "tiny", "--batch_size", "4", "--seq_length", "32",
                    "--precision", precision, "--backend", backend, "--warmup", "1", "--repeats", "2", "--steps", "2",
                    "--peak", "0", "--json", str(runs)], timeout=600)
    records = [json.loads(line) for line in runs.read_text().splitlines()]
    assert [len(r["steps_per_s"]) for r in records] == [2, 2, 2]
    assert all(x > 0 for r in records for x in r["steps_per_s"])
    assert records[2]["versions"]["tensorflow"] is None and records[2]["versions"]["jax"]  # run without TensorFlow
    run_python(["-m", "benchmarks.train_step", "--summarize", str(runs), "--output", str(tmp_path / "r.md")])
    settings = [r.split(" | ")[0][2:] for r in table_rows((tmp_path / "r.md").read_text()) if " | 4 x 32 | " in r]
    assert [s.split(" onednn=")[0] for s in settings] == ["tiny float32 xla=0 spe=1", "tiny float32 xla=1 spe=1 "
                                                          "backend=jax", "tiny mixed_bfloat16 xla=0 spe=1"]


@pytest.mark.large
def test_qa_features_scaling_times_each_context(tmp_path):
    dev = bench_data("squad_v1.1", "dev.json")
    vocab = shared_data("vocab", "bert_uncased_vocab.txt")  # the script's default vocabulary
    text = report("qa_features_scaling", tmp_path, "--squad", str(dev), "--vocab", str(vocab), "--pieces", "2000,4000",
                  "--megabytes", "0.02", "--repeats", "1")
    assert [r.split("|")[1].strip() for r in table_rows(text)[1:]] == ["2,000 pieces", "4,000 pieces", "0.02 MB"]


@pytest.mark.large
def test_the_converged_squad_report_regenerates_from_its_committed_runs(tmp_path):
    """The report's own command, over a copy of its committed runs: every run read back, the same figures."""
    bench_data("squad_v1.1", "train.json")
    bench_data("squad_shifts", "new_wiki.json")
    committed = (REPO / "benchmarks" / "results" / "finetune_squad.md").read_text(encoding="utf-8")
    shutil.copytree(REPO / "benchmarks" / "results" / "finetune_squad", tmp_path / "runs")
    text = report("finetune_squad", tmp_path, "--runs_dir", str(tmp_path / "runs"), "--seeds", "0,1",
                  "--qa_heads", "official,simple", "--seq_length", "256", "--epochs", "2", timeout=900)
    assert "running in" not in text
    for label in ("electra_tf, official head", "electra_tf, simple head", "hf BertForQuestionAnswering, simple head"):
        row = next(r for r in table_rows(text) if r.startswith(f"| {label} |"))
        dev_em, dev_f1, wiki_em, wiki_f1 = [c.strip() for c in row.split("|")[2:6]]
        assert f"| {dev_em} | {dev_f1} | {wiki_em} | {wiki_f1} |" in committed, row


# --- Release: the comparisons that fine-tune on both sides ---

@pytest.mark.release
def test_finetune_end_to_end_runs_both_commands_and_times_their_phases(tmp_path):
    args = ["--data_dir", str(shared_data("tasks", "movie_polarity")), "--train_limit", "32", "--dev_limit", "16",
            "--seq_length", "32", "--batch_size", "8", "--repeats", "1", "--record", str(tmp_path / "runs.jsonl")]
    text = report("finetune_end_to_end", tmp_path, *args)
    first_table = text.split("\n\n")[3]  # title, command, caption, the timing table
    rows = {r.split("|")[1].strip(): r for r in table_rows(first_table)[1:]}
    assert set(rows) == {"electra_tf", "hf"}
    assert all(0 <= float(r.split("|")[4]) <= 1 for r in rows.values())  # dev accuracy
    assert "- hf: start-up (interpreter, imports)" in text and "train" in text
    assert "Accuracy over the seeds" in text  # movie_polarity has a labelled test split
    # Rerun with the record: both runs are read back, none is run again, and the tables are the same.
    records = (tmp_path / "runs.jsonl").read_text(encoding="utf-8").splitlines()
    assert sorted(json.loads(line)["side"] for line in records) == ["electra_tf", "hf"]
    again = report("finetune_end_to_end", tmp_path, *args)
    assert (tmp_path / "runs.jsonl").read_text(encoding="utf-8").splitlines() == records
    assert table_rows(again) == table_rows(text)


@pytest.mark.release
def test_finetune_squad_runs_both_sides_and_resumes_from_its_runs(tmp_path):
    bench_data("squad_v1.1")
    args = ["--runs_dir", str(tmp_path / "runs"), "--train_limit", "16", "--dev_limit", "8", "--shifts_limit", "8",
            "--epochs", "1", "--seq_length", "64", "--doc_stride", "32", "--max_query_length", "16", "--batch_size",
            "8", "--qa_heads", "simple"]
    text = report("finetune_squad", tmp_path, *args)
    labels = [r.split("|")[1].strip() for r in table_rows(text)[1:]]
    assert labels == ["electra_tf, simple head", "hf BertForQuestionAnswering, simple head"]
    results = sorted(p.parent.name for p in (tmp_path / "runs").glob("*/result.json"))
    assert results == ["electra_tf_simple_seed0", "hf_simple_seed0"]
    again = run_python(["-m", "benchmarks.finetune_squad", *args])
    assert "running in" not in again.stdout  # every run read back
    refused = run_python(["-m", "benchmarks.finetune_squad", *args[:-2], "--epochs", "2"], check=False)
    assert refused.returncode == 2 and "holds runs of another recipe" in refused.stderr


@pytest.mark.release
def test_finetune_speed_alternates_the_two_steps(tmp_path):
    text = report("finetune_speed", tmp_path, "--num_layers", "1", "--hidden_dim", "32", "--num_heads", "2",
                  "--intermediate_dim", "64", "--steps", "2", "--rounds", "1", "--batch_size", "4")
    rows = table_rows(text)[1:]
    assert [r.split("|")[1].strip() for r in rows] == ["classification", "tagging"]
    assert all(float(r.split("|")[5]) > 0 for r in rows)  # electra_tf / HF
