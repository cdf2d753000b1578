r"""A served version's first requests, with and without replaying its warm-up file as TF Serving does at load.

    python -m benchmarks.serving_warmup --workdir $WORK --output benchmarks/results/serving_warmup.md
    # smoke size
    python -m benchmarks.serving_warmup --workdir $WORK --calls 8 --rounds 1

`--workdir` is a `benchmarks.serving_peers --workdir` whose models are built at this commit (run
serving_peers there first): its SavedModel export, which holds `assets.extra/tf_serving_warmup_requests`
(`electra_tf.exporting.warmup`), and its short texts. Each round runs two processes, in alternating order,
with serving_peers' settings (`--threads` intra-op threads, one inter-op thread, the model server's
environment):

- `cold`: loads the SavedModel, then answers the first `--calls` short texts one request each;
- `replayed`: loads it, sends every request of the warm-up file once (untimed, as the model server does
  before it serves a version), then answers the same requests.

Each timed request is the first of its text; in `cold` many are the first of their padded length too. The
report gives CPU and wall ms per request (median and mean over the requests, medians over rounds), and the
replay's own cost.
"""

import json
import os
import statistics
import time

from absl import app, flags

from benchmarks import common, serving_peers
from electra_tf import cli
from electra_tf.run_files import SERVING_WARMUP_FILE

flags.DEFINE_integer("calls", 128, "Batch-1 requests timed per process: the first short texts, once each.")
flags.DEFINE_enum("warmup_side", None, ["cold", "replayed"], "Internal: measure one side in this process.")
FLAGS = flags.FLAGS

SIDES = {"cold": "loaded, nothing replayed", "replayed": "loaded, the warm-up file replayed"}


def replay(version_folder, signature):
    """Sends every request of the version's warm-up file to `signature` once; returns how many it sent."""
    import tensorflow as tf
    from tensorflow_serving.apis import prediction_log_pb2

    sent = 0
    for record in tf.data.TFRecordDataset(os.path.join(version_folder, SERVING_WARMUP_FILE)):
        request = prediction_log_pb2.PredictionLog.FromString(record.numpy()).predict_log.request
        signature(**{name: tf.constant(tf.make_ndarray(proto)) for name, proto in request.inputs.items()})
        sent += 1
    return sent


def measure(side, work):
    import tensorflow as tf

    p = serving_peers.paths(work)
    tf.config.threading.set_intra_op_parallelism_threads(FLAGS.threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    import tensorflow_text  # noqa: F401  (registers the tokenizer's ops)

    start_cpu, start = time.process_time(), time.perf_counter()
    signature = tf.saved_model.load(p["serving"]).signatures["serving_default"]
    load = dict(cpu=time.process_time() - start_cpu, wall=time.perf_counter() - start)
    replayed = dict(requests=0, cpu=0.0, wall=0.0)
    if side == "replayed":
        cpu, wall = time.process_time(), time.perf_counter()
        replayed["requests"] = replay(p["serving"], signature)
        replayed.update(cpu=time.process_time() - cpu, wall=time.perf_counter() - wall)
    texts = common.read_json(p["texts"])["short"][:FLAGS.calls]
    cpus, walls = [], []
    for text in texts:
        cpu, wall = time.process_time(), time.perf_counter()
        signature(text=tf.constant([text]))["label_id"].numpy()
        cpus.append(1000 * (time.process_time() - cpu))
        walls.append(1000 * (time.perf_counter() - wall))
    return dict(load=load, replayed=replayed, cpus=cpus, walls=walls, tensorflow=tf.__version__)


def spawn(side, work):
    args = ["--warmup_side", side, "--workdir", work, "--threads", str(FLAGS.threads), "--calls", str(FLAGS.calls)]
    return common.run_worker("benchmarks.serving_warmup", args, serving_peers.worker_env(), f"side {side}")[0]


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments {argv[1:]}")
    work = os.path.abspath(os.path.expanduser(FLAGS.workdir))
    if FLAGS.warmup_side:
        print("RESULT " + json.dumps(measure(FLAGS.warmup_side, work)))
        return
    serving = serving_peers.paths(work)["serving"]
    if not os.path.exists(os.path.join(serving, SERVING_WARMUP_FILE)):
        raise app.UsageError(f"--workdir: {serving} has no {SERVING_WARMUP_FILE}; run benchmarks.serving_peers "
                             "there at this commit first (it re-exports when the commit changes)")
    started = common.machine()
    runs = {side: [] for side in SIDES}
    for round_index in range(FLAGS.rounds):
        for side in (list(SIDES) if round_index % 2 == 0 else list(SIDES)[::-1]):
            runs[side].append(spawn(side, work))

    def over_rounds(side, value):
        return statistics.median(value(run) for run in runs[side])

    rows = []
    for side, title in SIDES.items():
        rows.append(f"| {side} ({title}) | " + " | ".join(f"{over_rounds(side, f):.2f}" for f in (
            lambda r: statistics.median(r["cpus"]), lambda r: statistics.fmean(r["cpus"]),
            lambda r: statistics.median(r["walls"]), lambda r: statistics.fmean(r["walls"]),
            lambda r: max(r["cpus"]))) + f" | {over_rounds(side, lambda r: r['load']['cpu']):.2f} | "
            f"{over_rounds(side, lambda r: r['replayed']['cpu']):.2f} |")
    ratio = over_rounds("replayed", lambda r: statistics.fmean(r["cpus"])) / over_rounds(
        "cold", lambda r: statistics.fmean(r["cpus"]))
    requests = runs["replayed"][0]["replayed"]["requests"]
    lines = ["# A served version's first requests, with and without TF Serving's warm-up replay", "",
             f"`{common.command_line('benchmarks.serving_warmup')}`", "",
             f"Commit {common.commit()}. The SavedModel of `benchmarks.serving_peers --workdir $WORK` and its first "
             f"{FLAGS.calls} short texts, one batch-1 request each, right after the model is loaded; {FLAGS.rounds} "
             f"round(s), each side in its own process, the order alternated; {FLAGS.threads} intra-op threads, one "
             f"inter-op thread. `replayed` first sent the {requests} requests of "
             f"`{SERVING_WARMUP_FILE}` once, as the model server does before it serves a version.", "",
             f"Machine: {started} at the start, {os.getloadavg()[0]:.1f} at the end; tensorflow "
             f"{runs['cold'][0]['tensorflow']}.", "",
             "| side | CPU ms per request, median | CPU ms, mean | wall ms, median | wall ms, mean | CPU ms, slowest | "
             "load, CPU s | replay, CPU s |", "|---|---:|---:|---:|---:|---:|---:|---:|", *rows, "",
             f"Replayed / cold, mean CPU ms per request: {ratio:.2f}x.", ""]
    common.write_report("\n".join(lines), FLAGS.output)


if __name__ == "__main__":
    cli.run_script(main)
