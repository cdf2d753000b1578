"""Converts ELECTRA checkpoints between the official, Hugging Face, BERT and Keras formats.

    python -m electra_tf.convert --from official --input electra_small --to hf --output electra_small_hf
    python -m electra_tf.convert --from hf --input disc_dir,gen_dir --to keras --output electra.keras
    python -m electra_tf.convert --from bert --input all-MiniLM-L6-v2 --to keras --output minilm.keras
    python -m electra_tf.convert --from keras --input electra.keras --to official --output ckpt/model.ckpt-0

A generator + discriminator source gives an `ElectraPretrainer`; a single
encoder (BERT, `ElectraModel`, official discriminator only) an `ElectraEncoder`.
`--to hf` writes `OUTPUT/discriminator` and `OUTPUT/generator` for a
pretrainer, `OUTPUT` (`ElectraModel`) for an encoder. `--to keras` writes a
`.keras` file (`keras.saving.load_model` reads it back). A `vocab.txt` beside
the input is copied next to each output.
"""

import argparse
import os
import shutil
import sys

from absl import logging

SOURCES = ("official", "hf", "bert", "keras")
TARGETS = ("hf", "keras", "official")


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line and a hint, not the usage block
        from electra_tf import cli

        cli.fail(message, cli.USAGE_EXIT, f" (see `{self.prog} --help`)")


def parse_args(argv):
    parser = _Parser(
        prog="python -m electra_tf.convert", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--from", dest="source", required=True, choices=SOURCES, help="Input format."
    )
    parser.add_argument(
        "--input",
        required=True,
        help="Checkpoint prefix/dir, HF dir(s) (comma-separated) or .keras file.",
    )
    parser.add_argument(
        "--to", dest="target", required=True, choices=TARGETS, help="Output format."
    )
    parser.add_argument(
        "--output", required=True, help="Output directory, .keras file or checkpoint prefix."
    )
    parser.add_argument(
        "--num_heads", type=int, default=None, help="official: discriminator heads (H // 64)."
    )
    parser.add_argument(
        "--generator_num_heads",
        type=int,
        default=None,
        help="official: generator heads (Hg // 64).",
    )
    parser.add_argument(
        "--debug", action="store_true", help="Print the traceback of an error, not only its message."
    )
    return parser.parse_args(argv)


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

        refuse_other_artefact(path, "output", HUGGING_FACE)
        return convert.export_hugging_face(model, path)
    if target == "official":
        return [convert.export_official(model, path)]
    if not path.endswith(".keras"):
        raise ValueError(f"`--to keras` writes a `.keras` file. Received: `--output={path!r}`")
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


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    logging.set_verbosity(logging.INFO)
    if args.target == "hf":  # before the (slow) load: nothing to do if the output is refused
        from electra_tf.run_files import HUGGING_FACE, refuse_other_artefact

        refuse_other_artefact(args.output, "output", HUGGING_FACE)
    model = load(args.source, args.input, args.num_heads, args.generator_num_heads)
    written = save(model, args.target, args.output)
    copy_vocab(args.input, written)
    print(
        f"{type(model).__name__} from {args.source} {args.input!r} -> {args.target}: {', '.join(written)}"
    )
    return written


if __name__ == "__main__":
    from electra_tf import cli

    cli.guard(main, debug=lambda: "--debug" in sys.argv)()
