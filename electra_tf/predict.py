r"""Predicts with a fine-tuned model: `python -m electra_tf.predict --init MODEL --input FILE`.

    # classification: a TSV with the task's columns (scored when it has labels)
    python -m electra_tf.predict --init runs/movie_polarity --input data/movie_polarity/dev.tsv \
        --output_file predictions.jsonl
    # tagging: CoNLL columns (scored against the tags), or raw text lines
    python -m electra_tf.predict --init runs/conll2003 --input conll2003/dev.txt
    echo "Peter Blackburn lives in Brussels." | python -m electra_tf.predict --init runs/conll2003
    # question answering: SQuAD JSON (scored: EM / F1), or JSON Lines {"question": ..., "context": ...}
    python -m electra_tf.predict --init /tmp/serving/squad --input squad/dev.json
    # multiple choice: JSON Lines {"question": ..., "choices": [...], "answer": 0} or a SWAG CSV (scored)
    python -m electra_tf.predict --init runs/wikihow --input wikihow/dev.jsonl
    # embeddings: one vector per text line, or each query's best passages
    python -m electra_tf.predict --init runs/faq --input queries.txt --passages passages.txt --top_k 2
    # replaced-token scores of a pre-trained discriminator: each word's probability of being replaced
    python -m electra_tf.predict --init runs/demo --input texts.txt
    python -m electra_tf.predict --init runs/demo --input texts.txt --corrupt --seed 1  # scored on the
                                                           # generator's own corruption (AUC)

`--init` is a fine-tuning output dir (`python -m electra_tf.finetune
--output_dir`), a TF Serving export (`python -m electra_tf.export --format
serving` or `--format rtd`): a version folder, or the model folder above it (its highest
complete version), or a pre-trained ELECTRA for replaced-token scores: any `--init` form
with the discriminator's head (a pre-training run with its checkpoints, `hf:DIR` of an
`ElectraForPreTraining` folder, `hf:DISC,GEN`, `official:DIR`;
`tasks.replaced_tokens.kind`). Either way the predictions are the served SavedModel's:
a fine-tuning dir or a pre-trained model is served in this process by the module the
export would save (`export_formats.serving_module`, `tasks.replaced_tokens.serving`), an export is
loaded with `tf.saved_model.load`, and both run its signature on the raw text. The model's
served kind (`electra_tf.tasks.KINDS`: a task kind, or replaced-token scores) reads the
input, formats each prediction and scores them.

Input (`--input`, `-` or none with piped stdin for stdin; `--input_format`
auto picks by extension, else by content): each kind reads some of the formats. Output
(`--output_file` or stdout): JSON Lines, one object per example, in input order. What each
kind reads and one of its records are listed under "Task kinds" below, from the kind's
description (`electra_tf.tasks.descriptions`); a blank line gives
`{"line": 4, "skipped": "blank line"}`.

Every record names its input: `line`, the 1-based line the example starts on
(TSV/CSV, CoNLL: its first word, JSON Lines, text), or for SQuAD JSON, which has
no line per question, the question `id`. Where one line is one example (text,
JSON Lines, TSV/CSV rows), a blank line gives a `skipped` record, so the output
has one record per input line (less a header). Offsets are characters of the
text (tagging: of the words joined by single spaces), end exclusive; a QA
answer is whole words (`tasks.span_qa.features.word_offsets`). When the input
has gold labels (a label column, CoNLL tags, SQuAD answers, a choice's index) the
predictions are scored with the metrics fine-tuning reports, the task's own
first (accuracy, or CoLA's MCC; entity F1; SQuAD EM / F1): one summary line on
stderr and `--metrics_file` JSON (refused for an embedding model, whose texts carry no
labels). Replaced-token scores with `--corrupt` are scored
against the generator's own replacements (`disc_auc`, as pre-training reports it). A gold label or tag the model does not have is an error
naming the line. CoNLL tags are read in the file's own scheme (`--tag_scheme
auto`: an `I-X` starting a span is IOB1, S-/E- tags BIOES, else IOB2; logged).
A progress line goes to stderr on long inputs when it is a terminal (or with
`--progress`); stdout holds only the JSON Lines.

`--output_file` and `--metrics_file` never replace `--input`, `--init` or a file
inside it, a file a kind's own flag reads (`--passages`), each other, or a file
of a pre-training run, fine-tuning output, export or Hugging Face model
(`writing.check_outputs`; the same file by any path: a link, a hard link);
they are written whole under a temporary name and renamed. SIGTERM stops the
command at once, exit 143, the files being written removed. With stdout closed
(`>&-`) the records need `--output_file` (else one error line, exit 1); with
stderr closed the command runs as ever, its messages unseen
(`cli.standard_streams`). `--backend jax|torch` runs a fine-tuned model on that Keras backend
between the serving module's TensorFlow tokenisation and formatting (the same records, within
1e-5); an export is TensorFlow's whatever the backend. Installed as `electra-predict`.
"""

import os
import sys

from absl import app, flags

from electra_tf import atomic, backends, cli

FLAGS = flags.FLAGS
ALIASES = {}
BACKEND_FLAG = True  # `--backend`, read before Keras is imported


def define_flags(flag_values=None):
    """The flags (only when run as a program)."""
    from electra_tf import tasks
    from electra_tf.config_fields import define_flags as define_field_flags
    from electra_tf.tasks import usage

    fv = flags.FLAGS if flag_values is None else flag_values
    cli.define_init("A fine-tuning output dir, a TF Serving export (version or model folder), or a pre-trained "
                    "ELECTRA for replaced-token scores (a pre-training run, hf:DIR[,DIR], official:DIR).",
                    flag_values=fv)
    cli.define("string", "input", None, "Examples to predict; `-` or none (piped): stdin.", fv)
    cli.define("enum", "input_format", "auto", "Input format (auto: by extension, else by content; each task "
               "kind reads some).", fv, enum_values=["auto", *tasks.input_formats()])
    cli.define("string", "output_file", None, "JSON Lines predictions (default: stdout).", fv)
    cli.define("string", "metrics_file", None, "Scores against the input's gold labels, as JSON.", fv)
    cli.define("integer", "batch_size", 32, "Examples per call of the serving signature.", fv)
    cli.define("bool", "progress", False, "Progress on stderr even when it is not a terminal.", fv)
    define_field_flags(tasks.ReadOptions, fv)  # the column flags and each task kind's own (`--corrupt`, ...)
    cli.define_backend(fv)
    formats = {name: kind.predict_formats for name, kind in tasks.KINDS.items()}
    cli.add_usage(sys.modules[__name__], "Task kinds (the kind of the --init model): what each reads from --input "
                  "and one record it writes:\n\n" + usage.kinds_usage(tasks.descriptions(), formats))


def main(argv):
    import time

    from electra_tf import tasks
    from electra_tf.config_fields import fields
    from electra_tf.predicting import inputs, scoring, writing
    from electra_tf.tasks import served

    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    cli.check_backend(FLAGS, "Predicting", available=backends.BACKENDS)
    if not FLAGS.init:
        raise app.UsageError("--init is required.")
    if FLAGS.batch_size < 1:
        raise app.UsageError(f"--batch_size must be positive. Received: {FLAGS.batch_size}")
    try:
        options = tasks.ReadOptions(**{name: FLAGS[name].value for name in fields(tasks.ReadOptions)})
    except ValueError as e:  # flags that go together (a task kind's own checks)
        raise app.UsageError(str(e)) from None
    given = [name for kind in tasks.KINDS.values() for name in kind.predict_options if FLAGS[name].value]
    path = FLAGS.input
    if path is None:
        if sys.stdin.isatty():
            raise app.UsageError("--input is required (or pipe the examples into stdin).")
        path = "-"
    if FLAGS.output_file is None:
        cli.require_stdout("--output_file")  # `predict >&-`: the records would be lost
    started = time.perf_counter()
    read = {"input": path, "init": FLAGS.init, **{name: FLAGS[name].value for name in tasks.predict_input_files()}}
    both = [name for name, value in read.items() if value == "-" and name != "input"]
    if both and path == "-":  # stdin is read once, whole: the second reader would find it empty
        raise ValueError(f"`--{both[0]}=-` and the input both read stdin, which is read once: give --input or "
                         f"--{both[0]} a file.")
    writing.check_outputs({"output_file": FLAGS.output_file, "metrics_file": FLAGS.metrics_file}, read)
    text = inputs.read_text(path)  # a missing or not-UTF-8 file fails before the model loads
    with writing.stop_on_sigterm("predict: stopped by SIGTERM; no output file written"
                                 + ("" if FLAGS.output_file else " (stdout holds the records written so far)")):
        model = served.open_model(FLAGS.init, given)
        if FLAGS.metrics_file and not model.kind.scores_predictions:
            raise ValueError(f"`--metrics_file={FLAGS.metrics_file}` scores inputs against their gold labels, but "
                             f"--init {FLAGS.init} is {'an' if model.kind.name[0] in 'aeiou' else 'a'} "
                             f"{model.kind.name} model, whose inputs carry none: nothing would be written. Leave "
                             "out --metrics_file.")
        model.settings = model.kind.predict_settings(model, options)  # a kind's own flags may add (--passages)
        examples = inputs.read_examples(path, FLAGS.input_format, model.kind, model.settings, options, text=text,
                                        extensions=tasks.format_extensions())
        try:
            with writing.JsonLines(FLAGS.output_file) as out:
                predictions = model.predict(examples, FLAGS.batch_size, out.write,
                                            progress=FLAGS.progress or sys.stderr.isatty())
        except BrokenPipeError:  # `predict ... | head`: the reader has what it wanted
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return
        scores = scoring.score(model.kind, model.settings, examples, predictions)
        if FLAGS.metrics_file and scores is not None:
            atomic.write_json(FLAGS.metrics_file, scores, flag="metrics_file")
    seconds = time.perf_counter() - started
    if scores is not None:
        predicted = sum(not e.skipped for e in examples)
        sys.stderr.write(scoring.summary(scores) + f" ({predicted} examples, {seconds:.1f} s)\n")


run = cli.console_script(sys.modules[__name__])  # the `electra-predict` console script

if __name__ == "__main__":
    run()
