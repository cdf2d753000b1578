"""Converts ELECTRA checkpoints between the official, Hugging Face, BERT and Keras formats.

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
A fine-tuned classifier, tagger or simple-head QA model goes `--to hf` as
`ElectraForSequenceClassification` / `ElectraForTokenClassification` /
`ElectraForQuestionAnswering`. `--to keras` writes a `.keras` file
(`keras.saving.load_model` reads it back), `--to official` a checkpoint prefix:
`--output_dir` names that file or prefix.

Nothing existing is overwritten: an output that is or overlaps the input,
lies in another artefact, or would replace a file (a non-empty `--to hf`
folder, an existing `.keras` file, checkpoint or `checkpoint` list) is refused
before anything is read. The vocabulary beside the input (`vocab.txt` and its
tokenizer settings) is copied next to each output, unless the same vocabulary
is already there. Exits 0 on success. `--output` is the deprecated spelling of
`--output_dir`. Installed as `electra-convert`.
"""

import os

from absl import app, flags

from electra_tf import cli

SOURCES = ("official", "hf", "bert", "keras")
TARGETS = ("hf", "keras", "official")
PARTS = ("both", "discriminator", "generator")
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
                          "(--to official); never an existing one.", flag_values=fv)
    cli.define("enum", "part", "both", "What of a generator + discriminator pair to write (--to keras and "
               "--to official: discriminator or both).", fv, enum_values=list(PARTS))
    cli.define("integer", "num_heads", None, "official: discriminator heads (H // 64).", fv, range="[1, inf)")
    cli.define("integer", "generator_num_heads", None, "official: generator heads (Hg // 64).", fv,
               range="[1, inf)")


def input_paths(source, path):
    """The paths `--input` reads (a Hugging Face pair is comma-separated)."""
    return [p for p in path.split(",") if p] if source == "hf" else [path]


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
    from electra_tf.run_files import load_keras_model

    return load_keras_model(path, "input")


def select_part(model, target, part):
    """The model to write for `--part` (a pair's discriminator, or everything)."""
    from electra_tf.models.pretrainer import ElectraPretrainer

    if part == "both":
        return model
    if not isinstance(model, ElectraPretrainer):
        if part == "discriminator":
            return model
        raise ValueError(f"`--part=generator`: the input holds a {type(model).__name__}, no generator.")
    if target == "hf":
        return model  # `export_hugging_face(part=...)` writes that part with its head
    if part == "generator":
        raise ValueError(f"`--part=generator --to {target}` would drop the generator's LM head: use --to hf "
                         "(ElectraForMaskedLM) or --part both.")
    return model.discriminator


def planned_outputs(model, target, path, part):
    """`(folders the vocabulary goes into, files written or None for a folder output)`."""
    from electra_tf.models.pretrainer import ElectraPretrainer

    if target == "hf":
        if isinstance(model, ElectraPretrainer) and part == "both":
            return [os.path.join(path, "discriminator"), os.path.join(path, "generator")], None
        return [path], None
    folder = os.path.dirname(os.path.abspath(path))
    if target == "keras":
        if not path.endswith(".keras"):
            raise ValueError(f"`--to keras` writes a `.keras` file. Received: `--output_dir={path!r}`")
        return [folder], [os.path.abspath(path)]
    from electra_tf.convert.official import written_files

    return [folder], written_files(path)


def save(model, target, path, part="both", label_names=None):
    """Writes `model` to `path` in format `target` (one of `TARGETS`); returns the paths written."""
    from electra_tf import convert

    if target == "hf":
        from electra_tf.convert import hf_heads

        if hf_heads.is_task_model(model):
            return hf_heads.export_task_model(model, path, label_names=label_names)
        return convert.export_hugging_face(model, path, part=part)
    if target == "official":
        return [convert.export_official(model, path)]
    model.save(path)
    return [path]


def label_names(source, input_path):
    """The label names of a fine-tuned `.keras` input (its run's `finetune_config.json`), or None."""
    import json

    from electra_tf.run_files import FINETUNE_CONFIG_FILE

    if source != "keras":
        return None
    path = os.path.join(os.path.dirname(input_path), FINETUNE_CONFIG_FILE)
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        return json.load(f).get("label_names") or None


def vocabulary_beside(source, input_path):
    """The `vocab.txt` beside the (first) input, or None."""
    from electra_tf.data.tokenizer import VOCAB_FILE

    first = input_paths(source, input_path)[0]
    folder = first if os.path.isdir(first) else os.path.dirname(first)
    vocab = os.path.join(folder, VOCAB_FILE)
    return vocab if os.path.exists(vocab) else None


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
            if vocab_digest(target) != vocab_digest(vocab):
                raise FileExistsError(f"{target} exists and is another vocabulary than the input's {vocab}; "
                                      "nothing is overwritten. Choose another --output_dir.")
            continue
        targets.append(target)
    return targets


def convert(source, input_path, target, output_dir, num_heads=None, generator_num_heads=None, part="both"):
    """Reads `input_path` in format `source`, writes it to `output_dir` as `target`; returns the paths written.

    The output is checked before the (slow) load and again once the model is
    known (`run_files.guard_output`): nothing existing is ever replaced.
    """
    from electra_tf import run_files
    from electra_tf.data.tokenizer import DEFAULT_SETTINGS, copy_vocab, read_settings, write_hugging_face_settings

    inputs = input_paths(source, input_path)
    own_kind = run_files.HUGGING_FACE if target == "hf" else None
    if target == "keras" and not output_dir.endswith(".keras"):
        raise ValueError(f"`--to keras` writes a `.keras` file. Received: `--output_dir={output_dir!r}`")
    early = None
    if target == "keras":
        early = [os.path.abspath(output_dir)]
    elif target == "official":
        from electra_tf.convert.official import written_files

        early = written_files(output_dir)
    run_files.guard_output(output_dir, "output_dir", own_kind, inputs=inputs, writes=early)
    model = select_part(load(source, input_path, num_heads, generator_num_heads), target, part)
    folders, writes = planned_outputs(model, target, output_dir, part)
    vocab = vocabulary_beside(source, input_path)
    vocab_files = vocab_targets(vocab, folders)
    run_files.guard_output(output_dir, "output_dir", own_kind, inputs=inputs, writes=writes)
    written = save(model, target, output_dir, part, label_names(source, input_path))
    for destination in vocab_files:
        copy_vocab(vocab, destination)
        if target == "hf":  # transformers' AutoTokenizer reads the casing from its own file
            write_hugging_face_settings(os.path.dirname(destination), read_settings(vocab) or DEFAULT_SETTINGS)
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
    convert(FLAGS["from"].value, FLAGS.input, FLAGS.to, FLAGS.output_dir, FLAGS.num_heads,
            FLAGS.generator_num_heads, FLAGS.part)  # returns nothing: absl exits with main's value


def run():
    """The `electra-convert` console script."""
    cli.prepare_tensorflow()
    define_flags()
    cli.run(main, aliases=ALIASES)


if __name__ == "__main__":
    run()
