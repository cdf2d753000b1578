r"""Latency of the exported TF Serving SavedModel next to the Keras model, same run.

    python -m benchmarks.serving_latency --preset small --batch_sizes 1,32 --seq_length 128 \
        --repeats 20 --output benchmarks/results/serving_latency.md

Builds an `ElectraClassifier` on a `--preset` encoder (random weights: latency does not
depend on them) or loads a fine-tuned one (`--init`), exports it with
`export_serving` to a temporary folder, reloads it with `tf.saved_model.load`, and
times, per batch size, the median (and p90) wall time over `--repeats` calls after
`--warmup` calls of:

- `saved_model serving_default`: raw text in (tokenisation in the graph) -> probabilities;
- `saved_model predict_ids`: token ids in -> probabilities;
- `keras tf.function`: `tf.function(classifier)` on the same ids (graph mode, no export);
- `keras eager`: `classifier(ids, training=False)`.

Texts are long enough to fill `--seq_length` (truncation on), so every path sees
full-length sequences.
"""

import os
import platform
import sys
import tempfile

import numpy as np
import tensorflow as tf
from absl import app, flags

from benchmarks import common

flags.DEFINE_string("preset", "small", "Encoder size from configs/ (ignored with --init).")
flags.DEFINE_string("init", None, "A finetune output_dir to benchmark instead of a random preset model.")
flags.DEFINE_string("vocab_file", os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data",
                                               "vocab", "bert_uncased_vocab.txt"), "Vocabulary (preset mode).")
flags.DEFINE_list("batch_sizes", ["1", "32"], "Batch sizes.")
flags.DEFINE_integer("seq_length", 128, "Tokens per example.")
flags.DEFINE_integer("num_labels", 2, "Classifier outputs (preset mode).")
flags.DEFINE_integer("repeats", 20, "Timed calls per measurement.")
flags.DEFINE_integer("warmup", 3, "Untimed calls first.")
flags.DEFINE_string("output", None, "Also write the markdown table here.")
FLAGS = flags.FLAGS

TEXT = ("The film is a gripping, funny and often moving portrait of a family that refuses to give up, "
        "with fine performances from the whole cast and a score that lingers long after the credits. ")


def build_classifier():
    from electra_tf.config import get_config
    from electra_tf.data.tokenizer import load_vocab
    from electra_tf.export.serving import load_finetuned
    from electra_tf.models.classifier import ElectraClassifier
    from electra_tf.models.encoder import ElectraEncoder

    if FLAGS.init:
        classifier, vocab_file, _ = load_finetuned(FLAGS.init)
        return classifier, vocab_file, f"fine-tuned model {FLAGS.init}"
    config = get_config(FLAGS.preset, vocab_size=len(load_vocab(FLAGS.vocab_file)))
    encoder = ElectraEncoder(
        vocab_size=config.vocab_size, num_layers=config.num_layers, num_heads=config.num_heads,
        hidden_dim=config.hidden_dim, embedding_dim=config.embedding_dim,
        intermediate_dim=config.intermediate_dim, max_sequence_length=config.max_sequence_length,
        activation=config.activation,
    )
    classifier = ElectraClassifier(encoder, num_labels=FLAGS.num_labels)
    classifier.build()
    description = (f"preset `{FLAGS.preset}` (L={config.num_layers}, H={config.hidden_dim}, "
                   f"E={config.embedding_dim}, heads={config.num_heads}, FFN={config.intermediate_dim}, "
                   f"vocab={config.vocab_size}), random weights, {FLAGS.num_labels} labels")
    return classifier, FLAGS.vocab_file, description


def time_calls(fn, repeats, warmup):
    """Median and p90 milliseconds of `repeats` calls (each result copied to host) after `warmup` calls."""
    times = common.timings(fn, repeats, warmup)
    return common.median(times) * 1e3, float(np.percentile(times, 90)) * 1e3


def main(argv):
    del argv
    from electra_tf.data.tokenizer import WordPieceTokenizer
    from electra_tf.export.serving import export_serving

    load_before = os.getloadavg()[0]
    classifier, vocab_file, description = build_classifier()
    export_dir = tempfile.mkdtemp(prefix="electra_latency_")
    path = export_serving(classifier, vocab_file, export_dir, "bench", 1, seq_length=FLAGS.seq_length,
                          label_names=[str(i) for i in range(classifier.num_labels)])
    loaded = tf.saved_model.load(path)
    serve_text = loaded.signatures["serving_default"]
    serve_ids = loaded.signatures["predict_ids"]
    tokenizer = WordPieceTokenizer(vocab_file)
    keras_graph = tf.function(lambda inputs: classifier(inputs, training=False))

    rows = []
    for batch_size in map(int, FLAGS.batch_sizes):
        texts = tf.constant([f"{i} {TEXT * 4}" for i in range(batch_size)])
        ids = tokenizer.pack(texts, seq_length=FLAGS.seq_length)
        assert int(tf.reduce_min(tf.reduce_sum(ids["padding_mask"], 1))) == FLAGS.seq_length
        reference = tf.nn.softmax(classifier(ids, training=False)).numpy()
        max_diff = float(np.abs(serve_text(text=texts)["probabilities"].numpy() - reference).max())
        paths = {
            "SavedModel `serving_default` (raw text)": lambda: serve_text(text=texts)["probabilities"],
            "SavedModel `predict_ids` (token ids)": lambda: serve_ids(**ids)["probabilities"],
            "Keras `tf.function(model)` (token ids)": lambda: keras_graph(ids),
            "Keras eager `model(ids)` (token ids)": lambda: classifier(ids, training=False),
        }
        for name, fn in paths.items():
            median, p90 = time_calls(fn, FLAGS.repeats, FLAGS.warmup)
            rows.append((batch_size, name, median, p90, median / batch_size))
            print(f"batch {batch_size:3d}  {name:42s} median {median:9.2f} ms  p90 {p90:9.2f} ms", flush=True)
        print(f"batch {batch_size:3d}  max |SavedModel - Keras| probability = {max_diff:.2e}", flush=True)

    command = "python -m benchmarks.serving_latency " + " ".join(sys.argv[1:])
    lines = [
        "# Serving latency",
        "",
        f"Command: `{command}`",
        "",
        f"Model: {description}; sequence length {FLAGS.seq_length} (all tokens real).",
        f"Machine: {platform.machine()}, {os.cpu_count()} CPU(s) visible, no GPU; TensorFlow "
        f"{tf.__version__}; median and p90 of {FLAGS.repeats} calls after {FLAGS.warmup} warm-up calls; "
        f"1-minute load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after (other jobs share "
        "the CPUs when it exceeds the CPU count: compare rows of one run, not across runs).",
        "",
        "| batch | path | median ms | p90 ms | median ms / example |",
        "|---:|---|---:|---:|---:|",
    ]
    lines += [f"| {b} | {n} | {m:.2f} | {p:.2f} | {e:.2f} |" for b, n, m, p, e in rows]
    text = "\n".join(lines) + "\n"
    common.write_report(text, FLAGS.output)


if __name__ == "__main__":
    app.run(main)
