r"""Where a served request's time goes, op by op: the electra_tf SavedModel under TensorFlow's profiler beside
ONNX Runtime fp32 under its own, on the checkpoint and texts of `benchmarks.serving_peers`.

    python -m benchmarks.serving_profile --workdir $WORK --output benchmarks/results/serving_profile.md
    # smoke size (builds the models first, as serving_peers does)
    python -m benchmarks.serving_profile --workdir $WORK --calls 4

`--workdir` is a `benchmarks.serving_peers --workdir` whose models are built (run serving_peers there
first). Each side runs in its own process with serving_peers' settings (`--threads` intra-op threads,
one inter-op thread, the model server's environment): every short text once untimed, then
`--calls` calls of `--batch_size` short texts timed without a profiler (CPU and wall ms per call),
then the same calls traced. The tables give each op type's summed execution time per call (ms; on
several threads an op counts once, for as long as it ran) and how many ops of that type a call ran;
TensorFlow's executor runs the ops its cost model finds cheap inline, without an event each, so
those are one row: the executor's spans beyond the traced ops.
ONNX Runtime's times exclude the HF tokenizer, TensorFlow's include the in-graph one.
"""

import collections
import json
import os
import tempfile
import time

from absl import app, flags

from benchmarks import common, serving_peers
from electra_tf import cli

flags.DEFINE_integer("calls", 64, "Calls timed, then as many traced, per side.")
flags.DEFINE_integer("batch_size", 1, "Short texts per call.")
flags.DEFINE_enum("profile_side", None, ["savedmodel", "ort_fp32"], "Internal: profile one side in this process.")
FLAGS = flags.FLAGS

# Op types that are matrix products, per side (oneDNN's fused kernels on TensorFlow's side).
PRODUCTS = {"_MklNativeFusedMatMul", "_MklFusedMatMul", "_MklMatMul", "_MklBatchMatMulV2", "MatMul", "BatchMatMulV2",
            "_FusedMatMul", "FusedMatMul", "Gemm"}
TOP = 12  # op types listed per side; the rest summed in one row
# TensorFlow's executor runs the ops its cost model finds cheap inline, without a trace event each: their time
# (and the executor's own) is what its spans hold beyond the traced ops.
UNTRACED = "ops run inline (not traced one by one) and the executor's own work"


def batches(work):
    texts = common.read_json(serving_peers.paths(work)["texts"])["short"]
    size = FLAGS.batch_size
    return [texts[i:i + size] for i in range(0, len(texts) - size + 1, size)]


def timed(call, inputs):
    """(CPU ms, wall ms) per call of `call` over `inputs`."""
    cpu, wall = time.process_time(), time.perf_counter()
    for item in inputs:
        call(item)
    return 1000 * (time.process_time() - cpu) / len(inputs), 1000 * (time.perf_counter() - wall) / len(inputs)


def profile_savedmodel(work):
    import tensorflow as tf

    classify, versions = serving_peers.load_side("savedmodel", work)
    calls = batches(work)
    for batch in calls:
        classify(batch)
    chosen = calls[:FLAGS.calls]
    cpu, wall = timed(classify, chosen)
    logdir = tempfile.mkdtemp(prefix="serving_profile_")
    tf.profiler.experimental.start(logdir)
    for batch in chosen:
        classify(batch)
    tf.profiler.experimental.stop()
    ms, count = collections.Counter(), collections.Counter()
    traced = common.traced_ops(logdir, executor=True)
    executor_ms = traced.pop("ExecutorState::Process", (0, 0))[0] / len(chosen)
    for name, (total, executions) in traced.items():
        ms[name.rsplit(":", 1)[1]] += total / len(chosen)
        count[name.rsplit(":", 1)[1]] += executions / len(chosen)
    ms[UNTRACED] = max(0.0, executor_ms - sum(ms.values()))
    return dict(cpu=cpu, wall=wall, ms=ms, count=count, versions=versions)


def profile_ort(work):
    import numpy as np
    import onnxruntime as ort

    p = serving_peers.paths(work)
    tokenizer = serving_peers.hf_tokenizer(p["hf"])
    options = ort.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = FLAGS.threads, 1
    plain = ort.InferenceSession(p["ort_fp32"], options, providers=["CPUExecutionProvider"])
    options.enable_profiling = True
    options.profile_file_prefix = os.path.join(tempfile.mkdtemp(prefix="serving_profile_"), "ort")
    profiled = ort.InferenceSession(p["ort_fp32"], options, providers=["CPUExecutionProvider"])
    names = [i.name for i in plain.get_inputs()]
    calls = [{n: enc[n].astype(np.int64) for n in names} for enc in
             (tokenizer(b, return_tensors="np", padding=True, truncation=True, max_length=FLAGS.seq_length)
              for b in batches(work))]
    for session in (plain, profiled):
        for feed in calls:
            session.run(None, feed)
    chosen = calls[:FLAGS.calls]
    cpu, wall = timed(lambda feed: plain.run(None, feed), chosen)
    for feed in chosen:
        profiled.run(None, feed)
    with open(profiled.end_profiling(), encoding="utf-8") as f:
        events = json.load(f)
    runs = sorted(e["ts"] for e in events if e.get("name") == "model_run")
    start = runs[-len(chosen)]  # the traced calls: the last ones run
    ms, count = collections.Counter(), collections.Counter()
    for event in events:
        if event.get("cat") == "Node" and event["name"].endswith("_kernel_time") and event["ts"] >= start:
            ms[event["args"]["op_name"]] += event["dur"] / 1000 / len(chosen)
            count[event["args"]["op_name"]] += 1 / len(chosen)
    return dict(cpu=cpu, wall=wall, ms=ms, count=count, versions={"onnxruntime": ort.__version__})


def spawn(side, work):
    args = ["--profile_side", side, "--workdir", work, "--threads", str(FLAGS.threads), "--seq_length",
            str(FLAGS.seq_length), "--calls", str(FLAGS.calls), "--batch_size", str(FLAGS.batch_size)]
    return common.run_worker("benchmarks.serving_profile", args, serving_peers.worker_env(), f"side {side}")[0]


def table(record):
    ms, count = record["ms"], record["count"]
    total = sum(ms.values())
    products = sum(v for k, v in ms.items() if k in PRODUCTS)
    ordered = sorted(ms, key=ms.get, reverse=True)
    rows = [f"| {k} | {ms[k]:.3f} | {f'{count[k]:.0f}' if k in count else ''} | {100 * ms[k] / total:.1f} % |"
            for k in ordered[:TOP]]  # (the untraced row has no op count)
    rest = ordered[TOP:]
    if rest:
        rows.append(f"| {len(rest)} other op types | {sum(ms[k] for k in rest):.3f} | "
                    f"{sum(count.get(k, 0) for k in rest):.0f} | {100 * sum(ms[k] for k in rest) / total:.1f} % |")
    rows.append(f"| **all ops** (matrix products: {products:.3f} ms, {100 * products / total:.0f} %) | "
                f"**{total:.3f}** | **{sum(count.values()):.0f}** | 100 % |")
    return ["| op type | ms per call | ops per call | share |", "|---|---:|---:|---:|", *rows]


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments {argv[1:]}")
    work = os.path.abspath(os.path.expanduser(FLAGS.workdir))
    if FLAGS.profile_side:
        record = profile_savedmodel(work) if FLAGS.profile_side == "savedmodel" else profile_ort(work)
        print("RESULT " + json.dumps(record))
        return
    if not os.path.exists(serving_peers.paths(work)["texts"]):
        raise app.UsageError(f"--workdir: no built models in {work}; run benchmarks.serving_peers there first")
    started = common.machine()
    records = {side: spawn(side, work) for side in ("savedmodel", "ort_fp32")}
    ours, peer = records["savedmodel"], records["ort_fp32"]
    versions = {**ours["versions"], **peer["versions"]}
    lines = ["# Where a served request's time goes: the SavedModel beside ONNX Runtime fp32, op by op", "",
             f"`{common.command_line('benchmarks.serving_profile')}`", "",
             f"Commit {common.commit()}. The checkpoint, exports and texts of `benchmarks.serving_peers --workdir "
             f"$WORK`; {FLAGS.calls} calls of {FLAGS.batch_size} short text(s) per side, each side in its own process "
             f"with {FLAGS.threads} intra-op threads and one inter-op thread. Unprofiled, per call: the SavedModel "
             f"{ours['cpu']:.2f} CPU ms ({ours['wall']:.2f} ms wall, raw text in), ONNX Runtime fp32 "
             f"{peer['cpu']:.2f} CPU ms ({peer['wall']:.2f} ms wall, HF tokenizer included).", "",
             f"Machine: {started} at the start, {os.getloadavg()[0]:.1f} at the end; "
             + ", ".join(f"{k} {v}" for k, v in sorted(versions.items())) + ".", "",
             "## electra_tf SavedModel (TensorFlow's profiler)", "", *table(ours), "",
             "## ONNX Runtime fp32 (its profiler; the tokenizer runs before it)", "", *table(peer), ""]
    common.write_report("\n".join(lines), FLAGS.output)


if __name__ == "__main__":
    cli.run_script(main)
