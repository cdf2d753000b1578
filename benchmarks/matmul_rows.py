r"""What a served request's matrix products cost by its number of rows: TensorFlow (oneDNN) beside ONNX Runtime.

    python -m benchmarks.matmul_rows --output benchmarks/results/matmul_rows.md
    # smoke size
    python -m benchmarks.matmul_rows --rows 8,32 --thread_counts 1 --calls 4 --rounds 1

A batch-1 request of a 26-piece text runs every dense layer of the encoder on 26-32 rows (its pieces). This
runs the products of the served graph (`electra_tf.exporting.inference_graph`: per layer the query/key/value
projection on one concatenated kernel, the attention output, the feed-forward pair; each a `MatMul` and its
bias) on random float32 weights of MiniLM-L6's shapes by default, at each `--rows`, in:

- `tf`: a `tf.function` on `tf.Variable`s, as the SavedModel holds its weights, with the model server's
  environment (`benchmarks.serving_peers.worker_env`);
- `tf_assume_frozen`: the same with `TF_ONEDNN_ASSUME_FROZEN_WEIGHTS=1`, TensorFlow's switch that lets
  oneDNN keep its reordered copy of each weight between calls;
- `ort`: ONNX Runtime on the same products as an ONNX graph whose weights are initializers (constants), as
  in the ONNX export of the fine-tuned model.

Each side runs in its own process per round and thread count, rounds alternated; the figure is the median
over rounds of CPU ms per call (the process's CPU time on all its threads). A line fitted to the rows from 8
up splits each side's time into a fixed cost per call and a cost per row (read as GFLOP/s). One more
TensorFlow process per side, with `ONEDNN_VERBOSE=1`, runs every rows setting once, then names the kernels
oneDNN ran on one more call of 32 rows and the weight layouts they read (a reorder is a weight copied into
another layout during that call).
"""

import json
import os
import statistics
import time

from absl import app, flags

from benchmarks import common, serving_peers
from electra_tf import cli

flags.DEFINE_list("rows", ["1", "8", "16", "24", "32", "48", "64", "128"],
                  "Rows per call (a batch-1 request's pieces).")
flags.DEFINE_list("thread_counts", ["1", "2"], "Intra-op threads, one set of processes each.")
flags.DEFINE_integer("hidden", 384, "Hidden size H (MiniLM-L6: 384).")
flags.DEFINE_integer("intermediate", 1536, "Feed-forward size (MiniLM-L6: 1536).")
flags.DEFINE_integer("layers", 6, "Transformer layers.")
flags.DEFINE_integer("calls", 100, "Timed calls per rows setting (after as many untimed).")
flags.DEFINE_enum("rows_side", None, ["tf", "tf_assume_frozen", "ort"], "Internal: measure one side in this process.")
flags.DEFINE_integer("side_threads", 1, "Internal: the side's intra-op threads.")
flags.DEFINE_bool("probe", False, "Internal: every rows setting once, then one call of 32 rows (the oneDNN verbose "
                  "probe).")
FLAGS = flags.FLAGS
for _name in ("rows", "thread_counts"):
    flags.register_validator(_name, lambda values: bool(values) and all(v.isdigit() and int(v) > 0 for v in values),
                             message=f"--{_name}: positive whole numbers, comma-separated")

PROBE_ROWS = 32  # a batch-1 request of a median short text, its length rounded up to a multiple of 8

SIDES = {"tf": "TensorFlow, weights as variables (the SavedModel)",
         "tf_assume_frozen": "TensorFlow, `TF_ONEDNN_ASSUME_FROZEN_WEIGHTS=1`",
         "ort": "ONNX Runtime, weights as initializers (the ONNX export)"}


def shapes():
    """(in, out) of every product, in the order the served graph runs them."""
    h, i = FLAGS.hidden, FLAGS.intermediate
    return [(h, 3 * h), (h, h), (h, i), (i, h)] * FLAGS.layers


def mflop_per_row():
    return sum(2 * a * b for a, b in shapes()) / 1e6


def weights():
    import numpy as np

    rng = np.random.default_rng(0)
    return [(rng.standard_normal(s, dtype=np.float32) * 0.05, rng.standard_normal(s[1], dtype=np.float32) * 0.05)
            for s in shapes()]


def tf_call(threads):
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    variables = [(tf.Variable(w), tf.Variable(b)) for w, b in weights()]

    @tf.function(input_signature=[tf.TensorSpec([None, FLAGS.hidden], tf.float32)])
    def products(x):
        outputs = []
        for layer in range(FLAGS.layers):
            (qkv, qkv_b), (out, out_b), (up, up_b), (down, down_b) = variables[4 * layer:4 * layer + 4]
            outputs.append(tf.nn.bias_add(tf.matmul(x, qkv), qkv_b))
            attended = tf.nn.bias_add(tf.matmul(x, out), out_b)  # (the attention's context stands in as x)
            x = tf.nn.bias_add(tf.matmul(tf.nn.bias_add(tf.matmul(attended, up), up_b), down), down_b)
        return x, outputs

    return lambda x: [t.numpy() for t in tf.nest.flatten(products(x))], dict(tensorflow=tf.__version__)


def ort_call(threads):
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    nodes, initializers, outputs, x = [], [], [], "x"

    def product(source, index, w, b):
        initializers.extend([numpy_helper.from_array(w, f"w{index}"), numpy_helper.from_array(b, f"b{index}")])
        nodes.extend([helper.make_node("MatMul", [source, f"w{index}"], [f"m{index}"]),
                      helper.make_node("Add", [f"m{index}", f"b{index}"], [f"y{index}"])])
        return f"y{index}"

    pairs = weights()
    for layer in range(FLAGS.layers):
        first = 4 * layer
        qkv = product(x, first, *pairs[first])
        outputs.append(helper.make_tensor_value_info(qkv, TensorProto.FLOAT, ["rows", pairs[first][0].shape[1]]))
        attended = product(x, first + 1, *pairs[first + 1])
        x = product(product(attended, first + 2, *pairs[first + 2]), first + 3, *pairs[first + 3])
    graph = helper.make_graph(nodes, "products", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                                  ["rows", FLAGS.hidden])],
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT, ["rows", FLAGS.hidden]), *outputs],
                              initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    options = ort.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return lambda x: session.run(None, {"x": x}), dict(onnxruntime=ort.__version__)


def measure(side, threads):
    """{rows: CPU ms per call} of `side` in this process."""
    import numpy as np

    call, versions = (ort_call if side == "ort" else tf_call)(threads)
    rng = np.random.default_rng(1)
    rows = [int(r) for r in FLAGS.rows]
    out = {}
    for count in rows:
        x = rng.standard_normal((count, FLAGS.hidden), dtype=np.float32)
        for _ in range(1 if FLAGS.probe else FLAGS.calls):
            call(x)
        if FLAGS.probe:
            continue
        cpu = time.process_time()
        for _ in range(FLAGS.calls):
            call(x)
        out[count] = 1000 * (time.process_time() - cpu) / FLAGS.calls
    if FLAGS.probe:  # every shape has run once, as in the timed process; now one call of PROBE_ROWS rows
        print("PROBE-START", flush=True)
        call(rng.standard_normal((PROBE_ROWS, FLAGS.hidden), dtype=np.float32))
        return dict(ms=out, versions=versions)
    # What the side computes, to compare across sides: the first values of every output on one input.
    values = np.concatenate([np.ravel(o)[:64] for o in call(np.random.default_rng(2).standard_normal(
        (8, FLAGS.hidden), dtype=np.float32))])
    return dict(ms=out, versions=versions, values=values.tolist())


def spawn(side, threads, probe=False):
    args = ["--rows_side", side, "--side_threads", str(threads),
            "--rows", ",".join(FLAGS.rows), "--hidden", str(FLAGS.hidden), "--intermediate", str(FLAGS.intermediate),
            "--layers", str(FLAGS.layers), "--calls", str(FLAGS.calls), *(["--probe"] if probe else [])]
    env = {**serving_peers.worker_env(), "OMP_NUM_THREADS": str(threads)}
    if side == "tf_assume_frozen":
        env["TF_ONEDNN_ASSUME_FROZEN_WEIGHTS"] = "1"
    if probe:
        env["ONEDNN_VERBOSE"] = "1"
    record, stdout = common.run_worker("benchmarks.matmul_rows", args, env, f"side {side}")
    if probe:
        record["kernels"] = common.onednn_kernels(stdout.split("PROBE-START", 1)[-1].splitlines())
    return record


def main(argv):
    import numpy as np

    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments {argv[1:]}")
    if FLAGS.rows_side:
        print("RESULT " + json.dumps(measure(FLAGS.rows_side, FLAGS.side_threads)))
        return
    started = common.machine()
    threads = [int(t) for t in FLAGS.thread_counts]
    sides = list(SIDES)
    runs = {(side, t): [] for side in sides for t in threads}
    versions, runs_values = {}, {}
    for round_index in range(FLAGS.rounds):
        order = sides[round_index % len(sides):] + sides[:round_index % len(sides)]
        for t in threads:
            for side in order:
                record = spawn(side, t)
                runs[side, t].append(record["ms"])
                runs_values[side] = record["values"]
                versions.update(record["versions"])
    values = {side: np.array(runs_values[side]) for side in sides}
    scale = float(np.abs(values["ort"]).max())
    agreement = max(float(np.abs(values[side] - values["ort"]).max()) for side in sides) / scale
    probes = {side: spawn(side, max(threads), probe=True)["kernels"] for side in ("tf", "tf_assume_frozen")}
    median = {key: {r: statistics.median(run[r] for run in value) for r in value[0]} for key, value in runs.items()}
    per_row = mflop_per_row()
    rows = [str(int(r)) for r in FLAGS.rows]
    lines = ["# A served request's matrix products by rows: TensorFlow (oneDNN) beside ONNX Runtime", "",
             f"`{common.command_line('benchmarks.matmul_rows')}`", "",
             f"Commit {common.commit()}. The served graph's products at H={FLAGS.hidden}, feed-forward "
             f"{FLAGS.intermediate}, {FLAGS.layers} layers ({4 * FLAGS.layers} `MatMul`s with their biases, "
             f"{per_row:.1f} MFLOP per row), random float32 weights; {FLAGS.calls} timed calls per setting after as "
             f"many untimed, {FLAGS.rounds} round(s), each side in its own process per round and thread count, the "
             "order rotated from round to round; CPU ms per call (all the process's threads), median over rounds. "
             f"The sides compute the same products: their outputs on one 8-row input differ by at most "
             f"{agreement:.1e} of the largest.", "",
             f"Machine: {started} at the start, {os.getloadavg()[0]:.1f} at the end; "
             + ", ".join(f"{k} {v}" for k, v in sorted(versions.items())) + ".", ""]
    for t in threads:
        lines += [f"## {t} thread(s): CPU ms per call", "",
                  "| side | " + " | ".join(f"{r} rows" for r in rows)
                  + " | fixed ms per call | GFLOP/s per row added |",
                  "|---|" + "---:|" * (len(rows) + 2)]
        for side in sides:
            ms = median[side, t]
            fixed, slope = common.fit_line({int(r): v for r, v in ms.items() if int(r) >= 8})
            lines.append(f"| {SIDES[side]} | " + " | ".join(f"{ms[r]:.2f}" for r in rows) + " | "
                         + (f"{fixed:.2f} | {per_row / slope:.0f}" if slope else "| ") + " |")
        for side in ("tf", "tf_assume_frozen"):
            lines.append(f"| {side} / ort | " + " | ".join(f"{median[side, t][r] / median['ort', t][r]:.2f}x"
                                                           for r in rows) + " | | |")
        lines.append("")
    lines += [f"## The kernels oneDNN ran ({PROBE_ROWS} rows, after every rows setting once, {max(threads)} "
              "thread(s), executions in that call)", ""]
    for side, found in probes.items():
        lines.append(f"- {SIDES[side]}: " + ("; ".join(f"{k}: {v:g}" for k, v in sorted(found.items()))
                                               or "no oneDNN primitives reported") + ".")
    common.write_report("\n".join(lines) + "\n", FLAGS.output)


if __name__ == "__main__":
    cli.run_script(main)
