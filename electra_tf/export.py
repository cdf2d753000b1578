r"""Exports a trained model: `python -m electra_tf.export --format encoder|preset|serving|tflite|rtd`.

    # pre-trained discriminator -> SavedModel (tf.saved_model.load alone)
    python -m electra_tf.export --format encoder --init runs/demo --output_dir /tmp/electra_encoder
    # pre-trained discriminator -> keras-hub preset (ElectraBackbone / ElectraTokenizer.from_preset)
    python -m electra_tf.export --format preset --init runs/demo --output_dir /tmp/electra_preset
    # fine-tuned classifier -> TF Serving <output_dir>/<model_name>/<version>/
    python -m electra_tf.export --format serving --init runs/movie_polarity --output_dir /tmp/serving \
        --model_name movie_polarity --version 1
    # fine-tuned classifier -> LiteRT (TFLite) model for phones: raw text in (or --ids), int8 weights
    python -m electra_tf.export --format tflite --init runs/movie_polarity --output_dir /tmp/movie_tflite \
        --quantize dynamic_int8
    # pre-trained discriminator (and generator) -> TF Serving: each word's probability of being replaced
    python -m electra_tf.export --format rtd --init runs/demo --output_dir /tmp/serving --model_name rtd

`--init` for encoder/preset: any `--init` form (`electra_tf.sources` lists
them; the discriminator of a pair); for serving: a `finetune --output_dir` (its
task kind's model file + vocab.txt + finetune_config.json), served by that
kind's serving module (`tasks`: a classifier serves text -> label, a
tagger text -> words, tags and entities, a span_qa run question + context ->
answer, and so on); for tflite: a classifier's `finetune --output_dir` (`--ids`:
a tagger's too; `electra_tf.exporting.tflite`); for rtd: an `--init` form with the
discriminator's replaced-token head (a pre-training run with its checkpoints, `hf:DIR` of an
`ElectraForPreTraining` folder or `hf:DISC,GEN`, `official:DIR`; `sources.load_detector`),
served text -> words, offsets and the probability that each was replaced
(`tasks.replaced_tokens.serving`; with the generator, also its own corruption of the text).
The output must be new or empty (a serving version folder: new); it never
holds or lies in `--init`. `--output` is the deprecated spelling of `--output_dir`, `--kind` of
`--format`. Installed as
`electra-export`.
"""

import sys

from absl import app, flags

from electra_tf import cli

FLAGS = flags.FLAGS
ALIASES = cli.aliases("output", kind="format")  # --kind: the flag's name before --format


def define_flags(flag_values=None):
    """The flags (only when run as a program)."""
    from electra_tf import export_formats

    fv = flags.FLAGS if flag_values is None else flag_values
    cli.define("enum", "format", None, "What to export (`electra_tf.export_formats`).", fv,
               enum_values=export_formats.names())
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


def _model_name(value):
    from electra_tf.exporting.assets import check_model_name

    check_model_name(value)


def guard(export_format, options):
    """Refuses the output before anything is loaded or written (`run_files.guard_output`); returns the folder.

    A LiteRT model folder and a TF Serving version are claimed now (`atomic.claim_folder`): a second export
    into the same folder at once is refused before its work, naming `--output_dir`.
    """
    from electra_tf import atomic, run_files, sources

    path = export_format.path(options)
    run_files.guard_output(path, "output_dir", export_format.artefact, inputs=sources.init_inputs(options.init))
    run_files.refuse_inside_artefact(path, "output_dir")
    if export_format.claimed:  # written whole under the claimed temporary folder
        atomic.claim_folder(path, "output_dir")
    return path


def main(argv):
    from absl import logging

    from electra_tf import atomic, export_formats

    del argv
    for name in ("format", "init", "output_dir"):
        if not FLAGS[name].value:
            raise app.UsageError(f"--{name} is required.")
    export_format = export_formats.get(FLAGS.format)
    for name in ("ids", "quantize"):
        if FLAGS[name].present and name not in export_format.own_flags:
            raise app.UsageError("--ids and --quantize are for --format tflite.")
    claimed = guard(export_format, FLAGS)
    try:
        path = export_format.export(FLAGS)
    finally:
        atomic.release_claim(claimed)  # a failed export: its claim goes (a finished one used it)
    logging.info("Exported %s to %s", FLAGS.format, path)
    print(path)


run = cli.console_script(sys.modules[__name__])  # the `electra-export` console script

if __name__ == "__main__":
    run()
