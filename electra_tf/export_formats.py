"""The formats `python -m electra_tf.export --format F` writes: one class each, registered by name (`FORMATS`).

| `--format` | writes | from `--init` |
|---|---|---|
| `encoder` | an encoder SavedModel, raw-text signatures (`exporting.encoder_saved_model`) | any `--init` form |
| `preset` | a keras-hub preset (`exporting.keras_hub_preset`) | any `--init` form |
| `serving` | a TF Serving version, by the run's task kind (`tasks.export_serving`) | a fine-tuning output |
| `tflite` | a LiteRT model folder (`tasks.export_tflite`) | a fine-tuning output |
| `rtd` (a served-only task kind) | a TF Serving version of a pre-trained model (`TaskKind.export_pretrained`) | a pre-trained model |

A format says where it writes (`path`), what that folder then holds (`artefact`, which the output
guards compare), whether the folder is claimed before the work (`claimed`), which of the format-only
flags it reads (`own_flags`), and how it exports (`export`). The export command asks the format of
`--format`, and nothing else (`electra_tf.export`); a served-only task kind is a format by its
registry name (`tasks.KINDS`), so a new one needs no line here.
"""

import os

from electra_tf import run_files


class ExportFormat:
    """One `--format` of the export command; `options` is the command's flag values (`absl.flags.FLAGS`)."""

    artefact = run_files.SAVED_MODEL
    claimed = False  # the output folder is claimed before the work (`atomic.claim_folder`)
    own_flags = ()  # the format-only flags it reads (`--ids`, `--quantize`): refused with another format

    def path(self, options):
        """The folder the export writes (`--output_dir`)."""
        return options.output_dir

    def export(self, options):
        """Loads `--init`, writes the export, returns its path."""
        raise NotImplementedError


class Encoder(ExportFormat):
    """An encoder SavedModel that `tf.saved_model.load` alone runs (written whole under the claimed folder)."""

    claimed = True

    def export(self, options):
        from electra_tf.exporting.encoder_saved_model import export_encoder
        from electra_tf.sources import load_init

        encoder, vocab_file = load_init(options.init, options.vocab_file)
        return export_encoder(encoder, vocab_file, options.output_dir, options.seq_length or 128)


class Preset(ExportFormat):
    """A keras-hub preset (`ElectraBackbone` / `ElectraTokenizer.from_preset`)."""

    artefact = run_files.KERAS_HUB_PRESET

    def export(self, options):
        from electra_tf.exporting.keras_hub_preset import export_preset
        from electra_tf.sources import load_init

        encoder, vocab_file = load_init(options.init, options.vocab_file)
        return export_preset(encoder, vocab_file, options.output_dir)


class Served(ExportFormat):
    """A TF Serving version `<output_dir>/<model_name>/<version>/`: the base folder holds versions, the new one
    must not exist yet."""

    claimed = True

    def path(self, options):
        return os.path.join(options.output_dir, options.model_name, str(options.version))


class Serving(Served):
    """A fine-tuned model as TF Serving serves it, by its task kind (`tasks.export_serving`)."""

    def export(self, options):
        from electra_tf import tasks

        finetuned, vocab_file = finetuned_model(options.init, options.vocab_file)
        return tasks.export_serving(finetuned.model, vocab_file, options.output_dir, options.model_name,
                                    options.version, finetuned.settings, options.seq_length)


class PretrainedServing(Served):
    """A served-only task kind (`tasks.KINDS`, `finetunes = False`): a pre-trained model's TF Serving version."""

    def __init__(self, kind_name):
        self.kind_name = kind_name

    def export(self, options):
        from electra_tf import tasks

        finetuned = tasks.for_output_dir(options.init) if os.path.isdir(options.init) else None
        return tasks.get(self.kind_name).export_pretrained(options.init, options.output_dir, options.model_name,
                                                           options.version, options.vocab_file, options.seq_length,
                                                           finetuned)


class Tflite(ExportFormat):
    """A fine-tuned model as a LiteRT model folder for phones (`tasks.export_tflite`)."""

    artefact = run_files.TFLITE_MODEL
    claimed = True
    own_flags = ("ids", "quantize")

    def export(self, options):
        from electra_tf import tasks

        finetuned, vocab_file = finetuned_model(options.init, options.vocab_file)
        return tasks.export_tflite(finetuned.model, vocab_file, options.output_dir, finetuned.settings,
                                   options.seq_length, ids_only=options.ids, quantize=options.quantize)


def finetuned_model(init, vocab_file=None):
    """The fine-tuned model `init` holds and the vocabulary to export with it (`--vocab_file` or its own), checked
    to fit the model's token table (`sources.check_vocabulary`)."""
    from electra_tf import sources, tasks

    finetuned = tasks.load_finetuned(init)
    vocab = vocab_file or finetuned.vocab_file
    sources.check_vocabulary(vocab, finetuned.model.encoder.vocab_size, init, given=bool(vocab_file))
    return finetuned, vocab


# One line per format; the served-only task kinds follow, by their registry names (`names`).
FORMATS = {
    "encoder": Encoder(),
    "preset": Preset(),
    "serving": Serving(),
    "tflite": Tflite(),
}


def names():
    """Every `--format`: `FORMATS`, then each served-only task kind's name (`tasks.KINDS`)."""
    from electra_tf import tasks

    return [*FORMATS, *(name for name, kind in tasks.KINDS.items() if not kind.finetunes)]


def get(name):
    """The `ExportFormat` of `--format=name` (a `ValueError` naming the formats for another)."""
    if name in FORMATS:
        return FORMATS[name]
    if name in names():
        return PretrainedServing(name)
    raise ValueError(f"Unknown `--format={name}`. The formats are {names()}.")
