r"""Two forms of a LiteRT raw-text export side by side, float and int8, alternated in one process.

    python -m benchmarks.litert_variants --compare encoder --finetuned $WORK/finetuned \
        --texts $WORK/texts.json --output benchmarks/results/litert_encoder.md
    python -m benchmarks.litert_variants --compare padding --finetuned $WORK/finetuned \
        --texts $WORK/texts.json --output benchmarks/results/litert_padding.md
    # smoke size
    python -m benchmarks.litert_variants --finetuned runs/tiny_classifier --rounds 2 --examples 8

`--compare`:
- `encoder`: the encoder in the served graph's fused form (`inference_graph.encoder_forward`, the
  default) against its Keras layers (`ServedModel.keras_layers()`, what the export converted before);
- `padding`: the call computed at its longest request (the default) against the same export rounded
  up to a multiple of 8 (the SavedModel's rounding).

`--finetuned` is a fine-tuning output (`benchmarks.serving_peers` keeps MiniLM's movie_polarity
classifier in `--workdir/finetuned`, and its texts in `--workdir/texts.json`; without `--texts`,
the dev rows of `--task_dir`). The model is exported four times, as `export --format tflite`
does (`export_formats.export_tflite`), float and `--quantize dynamic_int8`, each in both forms.
Each round runs, for every quantization and batch size, both forms over the first
`--examples` short texts (the order alternated from round to round), after one untimed pass:
CPU milliseconds per text (the process's CPU time on all threads: the measure other jobs move
least), medians over rounds, and the median of the rounds' ratios. The labels of both forms
are compared: they compute the same function, so they must agree.
"""
import contextlib
import os
import shutil
import tempfile
import time
from importlib import metadata

import numpy as np
from absl import flags

from benchmarks import common
from electra_tf import cli

flags.DEFINE_enum("compare", "encoder", ["encoder", "padding"], "Which two forms of the export to time.")
flags.DEFINE_string("finetuned", None, "A fine-tuning output (a classifier) to export.", required=True)
flags.DEFINE_string("texts", None, "A serving_peers texts.json (its 'short' texts); default: --task_dir's dev rows.")
flags.DEFINE_string("task_dir", None, "A classification task folder (dev.tsv); default: the shared movie_polarity.")
flags.DEFINE_integer("examples", 128, "Short texts per batch size, per form and round.")
flags.DEFINE_list("batch_sizes", ["1", "32"], "Batch sizes.")
flags.DEFINE_integer("rounds", 15, "Rounds; each runs both forms once per quantization and batch size.")
flags.DEFINE_integer("threads", 2, "LiteRT interpreter threads.")
flags.DEFINE_string("output", None, "Also write the markdown report here.")
FLAGS = flags.FLAGS

# --compare -> (title, {form name: (pad_multiple, the encoder's Keras layers)}), the default form first.
COMPARISONS = {
    "encoder": ("the fused encoder against its Keras layers",
                {"fused encoder (the default)": (1, False), "Keras layers": (1, True)}),
    "padding": ("the call's longest request against a multiple of 8",
                {"own length (1, the default)": (1, False), "multiple of 8": (8, False)}),
}
QUANTIZATIONS = ("none", "dynamic_int8")


def short_texts():
    if FLAGS.texts:
        return common.read_json(FLAGS.texts)["short"]
    task_dir = FLAGS.task_dir or common.shared_data("tasks", "movie_polarity")
    return common.dev_sentences(os.path.join(task_dir, "dev.tsv"))


def export_all(scratch, forms):
    """(quantization, form name) -> a signature runner of that LiteRT export."""
    from electra_tf.export_formats import finetuned_model
    from electra_tf.exporting.tflite import export_tflite
    from electra_tf.exporting.tflite_runtime import load_interpreter

    finetuned, vocab = finetuned_model(FLAGS.finetuned)
    kind = finetuned.kind
    runners = {}
    for quantize in QUANTIZATIONS:
        for n, (name, (multiple, keras_layers)) in enumerate(forms.items()):  # as `export_formats.export_tflite`
            served = kind.tflite_module(finetuned.model, vocab, finetuned.settings, None, False)
            with served.keras_layers() if keras_layers else contextlib.nullcontext():  # traced at the export
                path = export_tflite(served, vocab, os.path.join(scratch, f"{quantize}_{n}"),
                                     finetuned.settings.get("task", ""), kind.name, quantize=quantize,
                                     pad_multiple=multiple)
            runners[quantize, name] = load_interpreter(path, num_threads=FLAGS.threads).get_signature_runner()
    return runners


def cpu_ms_per_text(runner, batches):
    """(CPU ms per text, the labels) of `runner` over `batches`."""
    start = time.process_time()  # all of the process's threads
    labels = [runner(text=np.array(batch))["label_id"] for batch in batches]
    return 1000 * (time.process_time() - start) / sum(map(len, batches)), np.concatenate(labels)


def main(argv):
    del argv
    texts = short_texts()[:FLAGS.examples]
    started = common.machine()
    title, forms = COMPARISONS[FLAGS.compare]
    scratch = tempfile.mkdtemp(prefix="litert_variants_")
    try:
        runners = export_all(scratch, forms)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)  # each interpreter holds its model in memory
    batches = {int(b): [texts[i:i + int(b)] for i in range(0, len(texts), int(b))] for b in FLAGS.batch_sizes}
    sizes = list(batches)
    times, agree = {}, {}
    for quantize in QUANTIZATIONS:
        for size in sizes:
            labels = [cpu_ms_per_text(runners[quantize, name], batches[size])[1] for name in forms]  # untimed
            agree[quantize, size] = float(np.mean(labels[0] == labels[1]))
    for n in range(FLAGS.rounds):
        for quantize in QUANTIZATIONS:
            for size in sizes:
                order = list(forms) if n % 2 == 0 else list(reversed(forms))
                for name in order:
                    times.setdefault((quantize, size, name), []).append(
                        cpu_ms_per_text(runners[quantize, name], batches[size])[0])
        print(f"round {n + 1} of {FLAGS.rounds}", flush=True)
    first, second = forms
    litert_version = metadata.version("ai-edge-litert")
    lines = [f"# LiteRT raw text: {title}", "",
             f"`{common.command_line('benchmarks.litert_variants')}`", "",
             f"Commit {common.commit()}. {len(texts)} short texts per batch size, {FLAGS.rounds} rounds, both forms "
             "in each (order alternated), one process; CPU ms per text = the process's CPU time on all threads over "
             "the texts; medians over rounds, and the median of the rounds' ratios.", "",
             f"Machine: {started} at the start, {os.getloadavg()[0]:.1f} at the end; {FLAGS.threads} LiteRT threads; "
             f"{common.versions_text()}, ai-edge-litert {litert_version}.", "",
             f"| model | batch | CPU ms per text, {first} | CPU ms per text, {second} | {first} / {second} (median "
             "of rounds' ratios) | rounds faster, the default | same labels |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for quantize in QUANTIZATIONS:
        for size in sizes:
            a, b = times[quantize, size, first], times[quantize, size, second]
            ratios = [x / y for x, y in zip(a, b)]
            lines.append(f"| {'int8' if quantize == 'dynamic_int8' else 'float'} | {size} | {common.median(a):.3f} | "
                         f"{common.median(b):.3f} | {common.median(ratios):.3f}x | "
                         f"{sum(r < 1 for r in ratios)} of {len(ratios)} | {100 * agree[quantize, size]:.1f} % |")
    common.write_report("\n".join(lines) + "\n", FLAGS.output)


if __name__ == "__main__":
    cli.run_script(main)
