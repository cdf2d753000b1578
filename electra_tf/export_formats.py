"""The formats `python -m electra_tf.export --format F` writes: one class each, registered by name (`FORMATS`).

| `--format` | writes | from `--init` |
|---|---|---|
| `encoder` | an encoder SavedModel, raw-text signatures (`exporting.encoder_saved_model`) | any `--init` form |
| `preset` | a keras-hub preset (`exporting.keras_hub_preset`) | any `--init` form |
| `serving` | a TF Serving version, by the run's task kind (`export_serving`) | a fine-tuning output |
| `tflite` | a LiteRT model folder (`export_tflite`) | a fine-tuning output |
| `rtd` (a served-only task kind) | a TF Serving version of a pre-trained model (`TaskKind.export_pretrained`) | a pre-trained model |

A format says where it writes (`path`), what that folder then holds (`artefact`, which the output
guards compare), whether the folder is claimed before the work (`claimed`), which of the format-only
flags it reads (`own_flags`), and how it exports (`export`). The export command asks the format of
`--format`, and nothing else (`electra_tf.export`); a served-only task kind is a format by its
registry name (`tasks.KINDS`), so a new one needs no line here. `serving_module`, `export_serving`
and `export_tflite` are the same exports as library functions, for a fine-tuned model in memory.
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
    """A fine-tuned model as TF Serving serves it, by its task kind (`export_serving`)."""

    def export(self, options):
        finetuned, vocab_file = finetuned_model(options.init, options.vocab_file)
        return export_serving(finetuned.model, vocab_file, options.output_dir, options.model_name,
                                    options.version, finetuned.settings, options.seq_length)


class PretrainedServing(Served):
    """A served-only task kind (`tasks.KINDS`, `finetunes = False`): a pre-trained model's TF Serving version."""

    def __init__(self, kind_name):
        self.kind_name = kind_name

    def export(self, options):
        from electra_tf import tasks

        finetuned = tasks.OUTPUTS.kind_of(options.init) if os.path.isdir(options.init) else None
        return tasks.get(self.kind_name).export_pretrained(options.init, options.output_dir, options.model_name,
                                                           options.version, options.vocab_file, options.seq_length,
                                                           finetuned)


class Tflite(ExportFormat):
    """A fine-tuned model as a LiteRT model folder for phones (`export_tflite`)."""

    artefact = run_files.TFLITE_MODEL
    claimed = True
    own_flags = ("ids", "quantize")

    def export(self, options):
        finetuned, vocab_file = finetuned_model(options.init, options.vocab_file)
        return export_tflite(finetuned.model, vocab_file, options.output_dir, finetuned.settings,
                                   options.seq_length, ids_only=options.ids, quantize=options.quantize)


def finetuned_model(init, vocab_file=None):
    """The fine-tuned model `init` holds and the vocabulary to export with it (`--vocab_file` or its own), checked
    to fit the model's token table (`sources.check_vocabulary`)."""
    from electra_tf import sources, tasks

    finetuned = tasks.OUTPUTS.load(init)
    vocab = vocab_file or finetuned.vocab_file
    sources.check_vocabulary(vocab, finetuned.model.encoder.vocab_size, init, given=bool(vocab_file))
    return finetuned, vocab


def serving_module(model, vocab_file, settings, seq_length=None):
    """The `tf.Module` that `export --format serving` saves for a fine-tuned model, built in this process.

    Its `signatures()` are the exported SavedModel's, as `tf.function`s: calling them runs what
    TF Serving runs (`predict` does, on a fine-tuning output dir).

    Args:
        model: a fine-tuned model of any kind (the kind `settings` name, else its class's: `tasks.OUTPUTS`).
        vocab_file: str. Its vocabulary.
        settings: dict. Its `finetune_config.json` (`tasks.OUTPUTS.load`).
        seq_length: int or None. Default: the fine-tuning `seq_length`.
    """
    from electra_tf import tasks

    return tasks.OUTPUTS.kind_of_model(model, settings).serving_module(model, vocab_file, settings, seq_length)


def export_tflite(model, vocab_file, output_dir, settings=None, seq_length=None, ids_only=False, quantize=None):
    """Writes a fine-tuned `model` as a LiteRT model folder (`exporting.tflite`); returns the `model.tflite` path.

    Its task kind gives the serving module to convert (`TaskKind.tflite_module`: a classifier, raw
    text or ids in; a tagger, ids in) or refuses with the reason.

    Example:
        ```python
        # A tagger, ids in, int8 weights (`exporting.tflite_runtime.load_interpreter` runs the file).
        import json
        import pathlib

        from electra_tf.export_formats import export_tflite
        from electra_tf.models.encoder import ElectraEncoder
        from electra_tf.tasks.tagging.model import ElectraTokenClassifier

        tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "peter", "lives", "in", "paris"]
        pathlib.Path("vocab.txt").write_text("\\n".join(tokens) + "\\n")
        tagger = ElectraTokenClassifier(ElectraEncoder(vocab_size=len(tokens), num_layers=1, num_heads=1, hidden_dim=16,
                                                       embedding_dim=8, intermediate_dim=32), num_labels=3)
        tagger.build()  # fine-tuned, in practice
        path = export_tflite(tagger, "vocab.txt", "ner_tflite", {"label_names": ["O", "B-PER", "I-PER"],
                             "seq_length": 16}, ids_only=True, quantize="dynamic_int8")  # 'ner_tflite/model.tflite'
        config = json.loads(pathlib.Path("ner_tflite/tflite_config.json").read_text())
        assert config["inputs"] == ["token_ids", "segment_ids", "padding_mask"] and config["custom_ops"] == []
        ```
    """
    from electra_tf import tasks
    from electra_tf.exporting import tflite

    settings = settings or {}
    kind = tasks.OUTPUTS.kind_of_model(model, settings)
    served = kind.tflite_module(model, vocab_file, settings, seq_length, ids_only)
    return tflite.export_tflite(served, vocab_file, output_dir, settings.get("task", ""), kind.name, ids_only,
                                quantize)


def export_serving(model, vocab_file, base_dir, model_name="electra", version=1, settings=None, seq_length=None):
    """Writes a fine-tuned `model` as `<base_dir>/<model_name>/<version>/` for TF Serving; returns that folder.

    Example:
        ```python
        import pathlib

        import tensorflow as tf

        from electra_tf.export_formats import export_serving
        from electra_tf.tasks.classification.model import ElectraClassifier
        from electra_tf.models.encoder import ElectraEncoder

        tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "fine", "film"]
        pathlib.Path("vocab.txt").write_text("\\n".join(tokens) + "\\n")
        encoder = ElectraEncoder(vocab_size=len(tokens), num_layers=1, num_heads=2, hidden_dim=32,
                                 embedding_dim=16, intermediate_dim=64)
        classifier = ElectraClassifier(encoder, num_labels=2)  # fine-tuned, in practice
        classifier.build()
        path = export_serving(classifier, "vocab.txt", "serving", "movie", 1,
                              {"label_names": ["negative", "positive"], "seq_length": 16})
        tf.saved_model.load(path).signatures["serving_default"](text=tf.constant(["a fine film"]))["label"]
        ```
    """
    from electra_tf.exporting.assets import save_version, version_dir

    module = serving_module(model, vocab_file, settings or {}, seq_length)
    return save_version(module, version_dir(base_dir, model_name, version))


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
