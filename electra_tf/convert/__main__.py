"""Converts ELECTRA checkpoints between the official, Hugging Face, BERT and Keras formats.

    python -m electra_tf.convert --from official --input electra_small --to hf --output_dir electra_small_hf
    python -m electra_tf.convert --from hf --input disc_dir,gen_dir --to keras --output_dir electra.keras
    python -m electra_tf.convert --from bert --input all-MiniLM-L6-v2 --to keras --output_dir minilm.keras
    python -m electra_tf.convert --from keras --input electra.keras --to official --output_dir ckpt/model.ckpt-0

A generator + discriminator source gives an `ElectraPretrainer`; a single
encoder (BERT, `ElectraModel`, official discriminator only) an `ElectraEncoder`.
`--to hf` writes `OUTPUT_DIR/discriminator` and `OUTPUT_DIR/generator` for a
pretrainer, `OUTPUT_DIR` (`ElectraModel`) for an encoder. `--to keras` writes a
`.keras` file (`keras.saving.load_model` reads it back), `--to official` a
checkpoint prefix: `--output_dir` names that file or prefix. A `vocab.txt`
beside the input is copied next to each output. `--output` is the deprecated
spelling of `--output_dir`. Installed as `electra-convert`.
"""

import os
import shutil

from absl import app, flags

from electra_tf import cli

SOURCES = ("official", "hf", "bert", "keras")
TARGETS = ("hf", "keras", "official")
FLAGS = flags.FLAGS
ALIASES = cli.aliases("output")
REQUIRED = ("from", "input", "to", "output_dir")


def define_flags(flag_values=None):
    """The flags (only when run as a program)."""
    fv = flags.FLAGS if flag_values is None else flag_values
    cli.define("enum", "from", None, "Input format.", fv, enum_values=list(SOURCES))
    cli.define("string", "input", None, "Checkpoint prefix/dir, HF dir(s) (comma-separated) or .keras file.", fv)
    cli.define("enum", "to", None, "Output format.", fv, enum_values=list(TARGETS))
    cli.define_output_dir("Output directory (--to hf), .keras file (--to keras) or checkpoint prefix "
                          "(--to official).", flag_values=fv)
    cli.define("integer", "num_heads", None, "official: discriminator heads (H // 64).", fv)
    cli.define("integer", "generator_num_heads", None, "official: generator heads (Hg // 64).", fv)


def load(source, path, num_heads=None, generator_num_heads=None):
    """The model held by `path` in format `source` (one of `SOURCES`)."""
    from electra_tf import convert

    if source == "official":
        return convert.build_from_official(
            path, num_heads=num_heads, generator_num_heads=generator_num_heads
        )
    if source == "hf":
        return convert.build_from_hugging_face(path)
    if source == "bert":
        return convert.build_from_bert(path)
    import keras

    return keras.saving.load_model(path)


def save(model, target, path):
    """Writes `model` to `path` in format `target` (one of `TARGETS`)."""
    from electra_tf import convert

    if target == "hf":
        from electra_tf.run_files import HUGGING_FACE, refuse_other_artefact

        refuse_other_artefact(path, "output_dir", HUGGING_FACE)
        return convert.export_hugging_face(model, path)
    if target == "official":
        return [convert.export_official(model, path)]
    if not path.endswith(".keras"):
        raise ValueError(f"`--to keras` writes a `.keras` file. Received: `--output_dir={path!r}`")
    model.save(path)
    return [path]


def copy_vocab(source, written):
    """Copies a `vocab.txt` found beside the input next to every output written."""
    first = source.split(",")[0]
    folder = first if os.path.isdir(first) else os.path.dirname(first)
    vocab = os.path.join(folder, "vocab.txt")
    if not os.path.exists(vocab):
        return
    for path in written:
        target = path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))
        if os.path.abspath(target) != os.path.abspath(folder):
            shutil.copy(vocab, os.path.join(target, "vocab.txt"))


def convert(source, input_path, target, output_dir, num_heads=None, generator_num_heads=None):
    """Reads `input_path` in format `source`, writes it to `output_dir` as `target`; returns the paths written."""
    if target == "hf":  # before the (slow) load: nothing to do if the output is refused
        from electra_tf.run_files import HUGGING_FACE, refuse_other_artefact

        refuse_other_artefact(output_dir, "output_dir", HUGGING_FACE)
    model = load(source, input_path, num_heads, generator_num_heads)
    written = save(model, target, output_dir)
    copy_vocab(input_path, written)
    print(f"{type(model).__name__} from {source} {input_path!r} -> {target}: {', '.join(written)}")
    return written


def main(argv):
    from absl import logging

    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    missing = [f"--{name}" for name in REQUIRED if FLAGS[name].value is None]
    if missing:
        names = missing[0] if len(missing) == 1 else f"{', '.join(missing[:-1])} and {missing[-1]}"
        raise app.UsageError(f"{names} {'is' if len(missing) == 1 else 'are'} required.")
    logging.set_verbosity(logging.INFO)
    # Not returned: absl's app.run exits with main's return value, and a list exits 1.
    convert(FLAGS["from"].value, FLAGS.input, FLAGS.to, FLAGS.output_dir, FLAGS.num_heads, FLAGS.generator_num_heads)


def run():
    """The `electra-convert` console script."""
    cli.quiet_console()
    define_flags()
    cli.run(main, aliases=ALIASES)


if __name__ == "__main__":
    run()
