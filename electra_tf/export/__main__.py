r"""Exports a trained model: `python -m electra_tf.export --kind encoder|preset|serving|tflite|rtd`.

    # pre-trained discriminator -> SavedModel (tf.saved_model.load alone)
    python -m electra_tf.export --kind encoder --init runs/demo --output_dir /tmp/electra_encoder
    # pre-trained discriminator -> keras-hub preset (ElectraBackbone / ElectraTokenizer.from_preset)
    python -m electra_tf.export --kind preset --init runs/demo --output_dir /tmp/electra_preset
    # fine-tuned classifier -> TF Serving <output_dir>/<model_name>/<version>/
    python -m electra_tf.export --kind serving --init runs/movie_polarity --output_dir /tmp/serving \
        --model_name movie_polarity --version 1
    # fine-tuned classifier -> LiteRT (TFLite) model for phones: raw text in (or --ids), int8 weights
    python -m electra_tf.export --kind tflite --init runs/movie_polarity --output_dir /tmp/movie_tflite \
        --quantize dynamic_int8
    # pre-trained discriminator (and generator) -> TF Serving: each word's probability of being replaced
    python -m electra_tf.export --kind rtd --init runs/demo --output_dir /tmp/serving --model_name rtd

`--init` for encoder/preset: any `--init` form (`electra_tf.sources` lists
them; the discriminator of a pair); for serving: a `finetune --output_dir` (its
task kind's model file + vocab.txt + finetune_config.json), served by that
kind's serving module (`tasks`: a classifier serves text -> label, a
tagger text -> words, tags and entities, a span_qa run question + context ->
answer, and so on); for tflite: a classifier's `finetune --output_dir` (`--ids`:
a tagger's too; `electra_tf.export.tflite`); for rtd: an `--init` form with the
discriminator's replaced-token head (a pre-training run with its checkpoints, `hf:DIR` of an
`ElectraForPreTraining` folder or `hf:DISC,GEN`, `official:DIR`; `sources.load_detector`),
served text -> words, offsets and the probability that each was replaced
(`tasks.replaced_tokens.serving`; with the generator, also its own corruption of the text).
The output must be new or empty (a serving version folder: new); it never
holds or lies in `--init`. `--output` is the deprecated spelling of `--output_dir`. Installed as
`electra-export`.
"""

import sys

from absl import app, flags

from electra_tf import cli

FLAGS = flags.FLAGS
ALIASES = cli.aliases("output")


def define_flags(flag_values=None):
    """The flags (only when run as a program)."""
    fv = flags.FLAGS if flag_values is None else flag_values
    cli.define("enum", "kind", None, "What to export.", fv,
               enum_values=["encoder", "preset", "serving", "tflite", *_pretrained_kinds()])
    cli.define_init("Model to export (see the module docstring).", flag_values=fv)
    cli.define_output_dir("Output folder (serving: the base folder).", flag_values=fv)
    cli.define_vocab_file("Vocabulary; default: the one beside --init.", flag_values=fv)
    cli.define_seq_length(None, "Tokens per text in the exported preprocessing "
                          "(default: 128, or the fine-tuning --seq_length for serving; rtd: per window).",
                          flag_values=fv)
    cli.define("string", "model_name", "electra", "Serving, rtd: TF Serving model name (the model's folder).", fv,
               check=_model_name)
    cli.define("integer", "version", 1, "Serving, rtd: version folder.", fv, range="[1, inf)")
    cli.define("bool", "ids", False, "tflite: token ids in, no custom op (default: raw text in).", fv)
    cli.define("enum", "quantize", "none", "tflite: dynamic_int8 stores the weights as int8.", fv,
               enum_values=["none", "dynamic_int8"])


def _pretrained_kinds():
    """The served-only task kinds (`electra_tf.tasks`): each exports a pre-trained model as `--kind <its name>`."""
    from electra_tf import tasks

    return [name for name, kind in tasks.KINDS.items() if not kind.finetunes]


def _model_name(value):
    from electra_tf.export.assets import check_model_name

    check_model_name(value)


def guard(kind, init, output_dir, model_name="electra", version=1):
    """Refuses the output before anything is loaded or written (`run_files.guard_output`); returns the folder.

    A LiteRT model folder and a TF Serving version are claimed now (`atomic.claim_folder`): a second export
    into the same folder at once is refused before its work, naming `--output_dir`.
    """
    import os

    from electra_tf import atomic, run_files, sources

    served = kind == "serving" or kind in _pretrained_kinds()
    if served:  # the base folder holds versions; the new version folder must not exist
        path, own = os.path.join(output_dir, model_name, str(version)), run_files.SAVED_MODEL
    else:
        path = output_dir
        own = {"encoder": run_files.SAVED_MODEL, "tflite": run_files.TFLITE_MODEL}.get(kind, run_files.KERAS_HUB_PRESET)
    run_files.guard_output(path, "output_dir", own, inputs=sources.init_inputs(init))
    run_files.refuse_inside_artefact(path, "output_dir")
    if served or kind == "tflite":  # written whole under the claimed temporary folder
        atomic.claim_folder(path, "output_dir")
    return path


def _finetuned(init, vocab_file=None):
    """The fine-tuned model `init` holds and the vocabulary to export with it (`--vocab_file` or its own), checked
    to fit the model's token table (`sources.check_vocabulary`)."""
    from electra_tf import sources
    from electra_tf import tasks

    finetuned = tasks.load_finetuned(init)
    vocab = vocab_file or finetuned.vocab_file
    sources.check_vocabulary(vocab, finetuned.model.encoder.vocab_size, init, given=bool(vocab_file))
    return finetuned, vocab


def main(argv):
    from absl import logging

    del argv
    for name in ("kind", "init", "output_dir"):
        if not FLAGS[name].value:
            raise app.UsageError(f"--{name} is required.")
    if FLAGS.kind != "tflite" and (FLAGS["ids"].present or FLAGS["quantize"].present):
        raise app.UsageError("--ids and --quantize are for --kind tflite.")
    claimed = guard(FLAGS.kind, FLAGS.init, FLAGS.output_dir, FLAGS.model_name, FLAGS.version)
    try:
        path = _export()
    finally:
        from electra_tf import atomic

        atomic.release_claim(claimed)  # a failed export: its claim goes (a finished one used it)
    logging.info("Exported %s to %s", FLAGS.kind, path)
    print(path)


def _export():
    """Loads `--init` and writes the `--kind` export; returns its path."""
    if FLAGS.kind == "tflite":
        from electra_tf import tasks

        finetuned, vocab_file = _finetuned(FLAGS.init, FLAGS.vocab_file)
        path = tasks.export_tflite(finetuned.model, vocab_file, FLAGS.output_dir,
                                   finetuned.settings, FLAGS.seq_length, ids_only=FLAGS.ids, quantize=FLAGS.quantize)
    elif FLAGS.kind == "serving":
        from electra_tf import tasks

        finetuned, vocab_file = _finetuned(FLAGS.init, FLAGS.vocab_file)
        path = tasks.export_serving(finetuned.model, vocab_file, FLAGS.output_dir,
                                    FLAGS.model_name, FLAGS.version, finetuned.settings, FLAGS.seq_length)
    elif FLAGS.kind in _pretrained_kinds():  # a served-only kind: a pre-trained model's serving version
        import os

        from electra_tf import tasks

        finetuned = tasks.for_output_dir(FLAGS.init) if os.path.isdir(FLAGS.init) else None
        path = tasks.get(FLAGS.kind).export_pretrained(FLAGS.init, FLAGS.output_dir, FLAGS.model_name, FLAGS.version,
                                                       FLAGS.vocab_file, FLAGS.seq_length, finetuned)
    else:
        from electra_tf.sources import load_init

        encoder, vocab_file = load_init(FLAGS.init, FLAGS.vocab_file)
        if FLAGS.kind == "encoder":
            from electra_tf.export.encoder_saved_model import export_encoder

            path = export_encoder(encoder, vocab_file, FLAGS.output_dir, FLAGS.seq_length or 128)
        else:
            from electra_tf.export.keras_hub_preset import export_preset

            path = export_preset(encoder, vocab_file, FLAGS.output_dir)
    return path


run = cli.console_script(sys.modules[__name__])  # the `electra-export` console script

if __name__ == "__main__":
    run()
