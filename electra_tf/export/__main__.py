r"""Exports a trained model: `python -m electra_tf.export --kind encoder|preset|serving`.

    # pre-trained discriminator -> SavedModel (tf.saved_model.load alone)
    python -m electra_tf.export --kind encoder --init electra_runs/small --output /tmp/electra_encoder
    # pre-trained discriminator -> keras-hub preset (ElectraBackbone / ElectraTokenizer.from_preset)
    python -m electra_tf.export --kind preset --init electra_runs/small --output /tmp/electra_preset
    # fine-tuned classifier -> TF Serving <output>/<model_name>/<version>/
    python -m electra_tf.export --kind serving --init runs/movie_polarity --output /tmp/serving \
        --model_name movie_polarity --version 1

`--init` for encoder/preset: a pre-training `model_dir`, an `ElectraEncoder`
`.keras` file or an exported encoder (as `electra_tf.finetune --init`); for
serving: a `finetune --output_dir` (classifier.keras + vocab.txt +
finetune_config.json).
"""

from absl import app, flags, logging

from electra_tf import cli

flags.DEFINE_enum("kind", None, ["encoder", "preset", "serving"], "What to export.")
flags.DEFINE_string("init", None, "Model to export (see the module docstring).")
flags.DEFINE_string("output", None, "Output folder (serving: the base folder).")
flags.DEFINE_string("vocab_file", None, "Vocabulary; default: the one beside --init.")
flags.DEFINE_integer("seq_length", None, "Tokens per text in the exported preprocessing "
                     "(default: 128, or the fine-tuning max_seq_length for serving).")
flags.DEFINE_string("model_name", "electra", "Serving: TF Serving model name.")
flags.DEFINE_integer("version", 1, "Serving: version folder.")
FLAGS = flags.FLAGS


def main(argv):
    del argv
    for name in ("kind", "init", "output"):
        if not FLAGS[name].value:
            raise app.UsageError(f"--{name} is required.")
    if FLAGS.kind == "serving":
        from electra_tf.export.serving import export_serving, load_finetuned

        classifier, vocab_file, config = load_finetuned(FLAGS.init)
        path = export_serving(
            classifier, FLAGS.vocab_file or vocab_file, FLAGS.output, FLAGS.model_name, FLAGS.version,
            label_names=config.get("label_names") or None,
            seq_length=FLAGS.seq_length or config.get("max_seq_length", 128),
            pair=config.get("pair", False), task=config.get("task", ""),
        )
    else:
        from electra_tf.run_files import load_init

        encoder, vocab_file = load_init(FLAGS.init, FLAGS.vocab_file)
        if FLAGS.kind == "encoder":
            from electra_tf.export.encoder_saved_model import export_encoder

            path = export_encoder(encoder, vocab_file, FLAGS.output, FLAGS.seq_length or 128)
        else:
            from electra_tf.export.keras_hub_preset import export_preset

            path = export_preset(encoder, vocab_file, FLAGS.output)
    logging.info("Exported %s to %s", FLAGS.kind, path)
    print(path)


if __name__ == "__main__":
    cli.run(main)
