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
A generator-only Hugging Face folder (`ElectraForMaskedLM`) is refused unless
`--part generator` asks for it. The input is read as `--init FROM:INPUT` is
(`electra_tf.sources`: the same checks, weights finite). A fine-tuned model goes
`--to hf` as the transformers class its task kind gives (`TaskKind.hf_head`:
`ElectraForSequenceClassification` for a classifier, and so on). `--to keras` writes a `.keras` file
(`keras.saving.load_model` reads it back), `--to official` a checkpoint prefix:
`--output_dir` names that file or prefix.

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

import contextlib
import os
import sys

from absl import app, flags

from electra_tf import cli

INPUT_FORMATS = ("official", "hf", "bert", "keras")  # `--from F --input X` reads `--init F:X` (`electra_tf.sources`)
TARGETS = ("hf", "keras", "official")
PARTS = ("both", "discriminator", "generator")
FLAGS = flags.FLAGS
ALIASES = cli.aliases("output")
REQUIRED = ("from", "input", "to", "output_dir")


def define_flags(flag_values=None):
    """The flags (only when run as a program)."""
    fv = flags.FLAGS if flag_values is None else flag_values
    cli.define("enum", "from", None, "Input format.", fv, enum_values=list(INPUT_FORMATS))
    cli.define("string", "input", None, "Checkpoint prefix/dir, HF dir(s) (comma-separated) or .keras file.", fv)
    cli.define("enum", "to", None, "Output format.", fv, enum_values=list(TARGETS))
    cli.define_output_dir("Output directory (--to hf), .keras file (--to keras) or checkpoint prefix "
                          "(--to official); never an existing one.", flag_values=fv)
    cli.define("enum", "part", "both", "What of a generator + discriminator pair to write (--to keras and "
               "--to official: discriminator or both); generator also reads a generator-only HF folder.", fv,
               enum_values=list(PARTS))
    cli.define("integer", "num_heads", None, "official: discriminator heads (H // 64).", fv, range="[1, inf)")
    cli.define("integer", "generator_num_heads", None, "official: generator heads (Hg // 64).", fv,
               range="[1, inf)")


def load(source, path, num_heads=None, generator_num_heads=None, part="both"):
    """`(model, vocab_file or None, part)`: what `path` holds in format `source` (one of `INPUT_FORMATS`).

    Read through the `--init` registry (`electra_tf.sources.load_source`), as
    `--init source:path`. A generator-only Hugging Face folder is refused unless
    `part` is "generator"; then it is read as `hf_generator:` and written whole
    (`part` "both").
    """
    from electra_tf import sources

    options = {"num_heads": num_heads, "generator_num_heads": generator_num_heads} if source == "official" else {}
    try:
        model, vocab = sources.load_source(source, path, **options)
    except sources.GeneratorFolderError as e:
        if part != "generator":
            raise ValueError(f"`--input={path}`: {e.folder} is an ELECTRA generator (ElectraForMaskedLM in its "
                             "config.json), not a discriminator. Pass the discriminator folder, or both as "
                             "--input DISC,GEN; to convert the generator itself, add --part generator.") from None
        model, vocab = sources.load_source("hf_generator", path)
        part = "both"
    return model, (vocab if vocab and os.path.exists(vocab) else None), part


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
    from electra_tf.converting.official import written_files

    return [folder], written_files(path)


def task_kind(model, settings=None):
    """The fine-tuning task kind of `model` (`electra_tf.tasks.for_model`: the "kind" of its run's `settings`, else
    its class's registered name), or None for an encoder or a pretrainer."""
    from electra_tf import tasks

    try:
        return tasks.for_model(model, settings)
    except TypeError:
        return None


def save(model, target, path, part="both", settings=None):
    """Writes `model` to `path` in format `target` (one of `TARGETS`); returns the paths written.

    A fine-tuned model goes `--to hf` with the head its task kind gives (`TaskKind.hf_head`;
    `settings`: its run's `finetune_config.json`, for the label names).
    """
    from electra_tf import converting

    if target == "hf":
        kind = task_kind(model, settings)
        if kind is not None:
            from electra_tf.converting.hf_heads import export_task_model

            return export_task_model(model, path, kind.hf_head(model, settings or {}))
        return converting.export_hugging_face(model, path, part=part)
    if target == "official":
        return [converting.export_official(model, path)]
    from electra_tf import atomic

    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with atomic.staged(path, "output_dir") as partial:  # a `.keras` file that exists is complete
        model.save(partial)
    return [path]


def finetune_settings(source, input_path):
    """The `finetune_config.json` beside a fine-tuned `.keras` input (its label names), checked; or an empty dict."""
    from electra_tf.tasks import read_finetune_config  # every kind's fields checked

    if source != "keras":
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


def convert(source, input_path, target, output_dir, num_heads=None, generator_num_heads=None, part="both"):
    """Reads `input_path` in format `source`, writes it to `output_dir` as `target`; returns the paths written.

    The output is checked before the (slow) load and again once the model is
    known (`run_files.guard_output`): nothing existing is ever replaced. A Hugging
    Face folder is written into a hidden folder beside `output_dir` and renamed once
    complete (vocabulary included): a failed write (a full disk) leaves nothing.
    """
    from electra_tf import run_files, sources

    inputs = sources.SOURCES[source].inputs(input_path)
    own_artefact = run_files.HUGGING_FACE if target == "hf" else None
    if target == "keras" and not output_dir.endswith(".keras"):
        raise ValueError(f"`--to keras` writes a `.keras` file. Received: `--output_dir={output_dir!r}`")
    early = None
    if target == "keras":
        early = [os.path.abspath(output_dir)]
    elif target == "official":
        from electra_tf.converting.official import written_files

        early = written_files(output_dir)
    run_files.guard_output(output_dir, "output_dir", own_artefact, inputs=inputs, writes=early)
    run_files.refuse_inside_artefact(output_dir, "output_dir")
    model, vocab, part = load(source, input_path, num_heads, generator_num_heads, part)
    model = select_part(model, target, part)
    folders, writes = planned_outputs(model, target, output_dir, part)
    vocab_files = vocab_targets(vocab, folders)
    run_files.guard_output(output_dir, "output_dir", own_artefact, inputs=inputs, writes=writes)
    if target == "hf":
        with staged_folder(output_dir) as stage:
            written = write(model, target, stage, part, finetune_settings(source, input_path), vocab,
                            [os.path.join(stage, os.path.relpath(v, output_dir)) for v in vocab_files])
        written = [os.path.normpath(os.path.join(output_dir, os.path.relpath(w, stage))) for w in written]
    else:
        written = write(model, target, output_dir, part, finetune_settings(source, input_path), vocab, vocab_files)
    print(f"{type(model).__name__} from {source} {input_path!r} -> {target}: {', '.join(written)}")
    return written


def write(model, target, path, part, settings, vocab, vocab_files):
    """`save`, then the vocabulary (and its tokenizer settings) into each of `vocab_files`; returns `save`'s paths."""
    from electra_tf.data.tokenizer import (DEFAULT_SETTINGS, copy_vocab, read_settings, warn_unless_bert,
                                           write_hugging_face_settings)

    written = save(model, target, path, part, settings)
    for destination in vocab_files:
        copy_vocab(vocab, destination)
        if target == "hf":  # transformers' AutoTokenizer reads the casing from its own file
            settings = read_settings(vocab) or DEFAULT_SETTINGS
            warn_unless_bert(settings, vocab)
            write_hugging_face_settings(os.path.dirname(destination), settings)
    return written


@contextlib.contextmanager
def staged_folder(path):
    """Yields a hidden folder beside `path` to write into; renamed to `path` (new or empty) when the block ends
    (`atomic.staged_folder`).

    On an error the staged folder is removed and the error is one `OSError` naming
    `--output_dir` (the cause, e.g. a full disk, in its text): nothing is left behind,
    so the same command runs again once the cause is gone.
    """
    from electra_tf import atomic

    try:
        with atomic.staged_folder(path, "output_dir") as stage:
            yield stage
    except BaseException as e:
        if type(e).__module__.startswith("tensorflow") or (isinstance(e, OSError) and "--output_dir" not in str(e)):
            reason = (getattr(e, "message", None) or str(e) or type(e).__name__).splitlines()[0][:300]
            raise OSError(f"`--output_dir={path}` could not be written ({reason}); nothing was left "
                          "there.") from e
        raise


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
