"""Converts ELECTRA checkpoints between the official, Hugging Face, BERT, keras-hub and Keras formats.

    python -m electra_tf.convert --from official --input electra_small --to hf --output_dir electra_small_hf
    python -m electra_tf.convert --from hf --input disc_dir,gen_dir --to keras --output_dir electra.keras
    python -m electra_tf.convert --from bert --input all-MiniLM-L6-v2 --to keras --output_dir minilm.keras
    python -m electra_tf.convert --from keras --input electra.keras --to official --output_dir ckpt/model.ckpt-0
    python -m electra_tf.convert --from keras --input runs/sst2/classifier.keras --to hf --output_dir sst2_hf

A generator + discriminator source gives an `ElectraPretrainer`; a single
encoder (BERT, `ElectraModel`, official discriminator only) an `ElectraEncoder`.
`--part discriminator|generator|both` (default both) picks what of a pair is
written: `--to hf` writes `OUTPUT_DIR/discriminator` and `OUTPUT_DIR/generator`
for both, `OUTPUT_DIR` itself for one part (`ElectraForPreTraining` /
`ElectraForMaskedLM`) or an encoder (`ElectraModel`); `--to keras` and `--to
official` take the discriminator (the encoder fine-tuning starts from) or both.
A generator-only Hugging Face folder (`ElectraForMaskedLM`) is refused unless
`--part generator` asks for it. The input is read as `--init FROM:INPUT` is
(`electra_tf.sources`: the same checks, weights finite; `--from` is any of its `FORM:`s). A fine-tuned model goes
`--to hf` as the transformers class its task kind gives (`TaskKind.hf_head`:
`ElectraForSequenceClassification` for a classifier, and so on). `--to keras` writes a `.keras` file
(`keras.saving.load_model` reads it back), `--to official` a checkpoint prefix:
`--output_dir` names that file or prefix. Each `--to` is one class of `electra_tf.convert_targets`
(`TARGETS`): where it writes, what its output guard checks and how it saves.

Nothing existing is overwritten: an output that is or overlaps the input,
lies in another artefact, or would replace a file (a non-empty `--to hf`
folder, an existing `.keras` file, checkpoint or `checkpoint` list) is refused
before anything is read; a `--to hf` folder is written into a hidden folder
beside it and renamed once complete, so a failed write (a full disk) leaves
nothing to refuse on the re-run. The vocabulary beside the input (`vocab.txt` and its
tokenizer settings) is copied next to each output, unless the same vocabulary
is already there. Exits 0 on success. `--output` is the deprecated spelling of
`--output_dir`. Installed as `electra-convert`.
"""

import os
import sys

from absl import app, flags

from electra_tf import cli

PARTS = ("both", "discriminator", "generator")
FLAGS = flags.FLAGS
ALIASES = cli.aliases("output")
REQUIRED = ("from", "input", "to", "output_dir")


def define_flags(flag_values=None):
    """The flags (only when run as a program)."""
    from electra_tf import convert_targets, sources

    fv = flags.FLAGS if flag_values is None else flag_values
    cli.define("enum", "from", None, "Input format: a `--init FORM:` (`electra_tf.sources`).", fv,
               enum_values=list(sources.SOURCES))
    cli.define("string", "input", None, "Checkpoint prefix/dir, HF dir(s) (comma-separated) or .keras file.", fv)
    cli.define("enum", "to", None, "Output format (`electra_tf.convert_targets`).", fv,
               enum_values=list(convert_targets.TARGETS))
    cli.define_output_dir("Output directory (--to hf), .keras file (--to keras) or checkpoint prefix "
                          "(--to official); never an existing one.", flag_values=fv)
    cli.define("enum", "part", "both", "What of a generator + discriminator pair to write (--to keras and "
               "--to official: discriminator or both); generator also reads a generator-only HF folder.", fv,
               enum_values=list(PARTS))
    cli.define("integer", "num_heads", None, "official: discriminator heads (H // 64).", fv, range="[1, inf)")
    cli.define("integer", "generator_num_heads", None, "official: generator heads (Hg // 64).", fv,
               range="[1, inf)")


def load(form, path, part="both", **options):
    """`(model, vocab_file or None, part)`: what `path` holds read as `--init FORM:path` (`form`, a key of
    `sources.SOURCES`; `options` the form's own, e.g. `num_heads`).

    A generator-only Hugging Face folder is refused unless `part` is "generator"; then it
    is read as `hf_generator:` and written whole (`part` "both").
    """
    from electra_tf import sources

    try:
        model, vocab = sources.load_source(form, path, **{k: v for k, v in options.items() if v is not None})
    except sources.GeneratorFolderError as e:
        if part != "generator":
            raise ValueError(f"`--input={path}`: {e.folder} is an ELECTRA generator (ElectraForMaskedLM in its "
                             "config.json), not a discriminator. Pass the discriminator folder, or both as "
                             "--input DISC,GEN; to convert the generator itself, add --part generator.") from None
        model, vocab = sources.load_source("hf_generator", path)
        part = "both"
    return model, (vocab if vocab and os.path.exists(vocab) else None), part


def finetune_settings(input_path):
    """The `finetune_config.json` beside a `.keras` input (a fine-tuned model's label names), checked; or {}."""
    from electra_tf.tasks import read_finetune_config  # every kind's fields checked

    if not input_path.endswith(".keras"):
        return {}
    return read_finetune_config(os.path.dirname(input_path) or ".") or {}


def vocab_targets(vocab, folders):
    """The `vocab.txt` paths to write in `folders`: none where the same vocabulary is; an error where another is."""
    from electra_tf.data.tokenizer import VOCAB_FILE, vocab_digest

    if vocab is None:
        return []
    targets = []
    for folder in folders:
        target = os.path.join(folder, VOCAB_FILE)
        if os.path.abspath(target) == os.path.abspath(vocab):
            continue
        if os.path.exists(target):
            expected = vocab_digest(vocab)
            try:
                same = vocab_digest(target) == expected
            except ValueError:  # not even a vocabulary ELECTRA can read: certainly not the input's
                same = False
            if not same:
                raise FileExistsError(f"{target} exists and is another vocabulary than the input's {vocab}; "
                                      "nothing is overwritten. Choose another --output_dir.")
            continue
        targets.append(target)
    return targets


def convert(form, input_path, to, output_dir, num_heads=None, generator_num_heads=None, part="both"):
    """Reads `input_path` as `--init FORM:input_path`, writes it to `output_dir` as the target `to`; returns the paths
    written.

    The output is checked before the (slow) load and again once the model is known
    (`run_files.guard_output`): nothing existing is ever replaced. What is written, and
    how, is the target's (`convert_targets.TARGETS[to]`).
    """
    from electra_tf import convert_targets, run_files, sources

    target = convert_targets.TARGETS[to]
    target.check_path(output_dir)
    inputs, writes = sources.SOURCES[form].inputs(input_path), target.writes(output_dir)
    run_files.guard_output(output_dir, "output_dir", target.artefact, inputs=inputs, writes=writes)
    run_files.refuse_inside_artefact(output_dir, "output_dir")
    model, vocab, part = load(form, input_path, part, num_heads=num_heads, generator_num_heads=generator_num_heads)
    model = target.select(model, part)
    vocab_files = vocab_targets(vocab, target.vocab_folders(model, output_dir, part))
    run_files.guard_output(output_dir, "output_dir", target.artefact, inputs=inputs, writes=writes)
    written = target.write(model, output_dir, part, finetune_settings(input_path), vocab, vocab_files)
    print(f"{type(model).__name__} from {form} {input_path!r} -> {to}: {', '.join(written)}")
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
    convert(FLAGS["from"].value, FLAGS.input, FLAGS.to, FLAGS.output_dir, FLAGS.num_heads,
            FLAGS.generator_num_heads, FLAGS.part)  # returns nothing: absl exits with main's value


run = cli.console_script(sys.modules[__name__])  # the `electra-convert` console script

if __name__ == "__main__":
    run()
